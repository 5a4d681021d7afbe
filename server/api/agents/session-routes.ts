import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  AgentListQuery,
  CreateEventsRequest,
  CreateSessionRequest,
  EventStreamQuery,
  SessionListQuery,
  SessionResourceListQuery,
  UpdateSessionRequest,
  type SessionEvent,
  type SessionInputMessage,
} from '../../../schemas/agents.ts';
import { ApiError } from '../../platform/api-error.ts';
import { parseOrThrow } from '../../platform/request-validation.ts';
import type { RecordStore } from '../../platform/stores/record-store.ts';
import { agentTools } from './agent-definition.ts';
import { newSessionRecord, resolveAgent, sessionNotFound } from './new-session.ts';
import type { AgentHarness } from './harness.ts';
import { cursorPage, listOf } from '../http/list-page.ts';
import { matchesMetadata, metadataFilters } from './metadata-filters.ts';
import { MAX_SESSION_EVENT_STREAMS, MAX_STREAMS_PER_SESSION, type SessionEventHub } from './session-events.ts';
import { sessionNow, type SessionRecord } from './session-record.ts';

type SessionParams = { Params: { session_id: string } };
type TurnParams = { Params: { session_id: string; turn_id: string } };

export interface SessionRouteDeps {
  readonly records: () => RecordStore;
  readonly harness: AgentHarness;
  readonly hub: SessionEventHub;
  /** Records a stream written by hand in the journal. */
  readonly recordStream: (request: FastifyRequest, reply: FastifyReply) => void;
}

/** A session's `input`: a string is one user message. */
function inputMessages(input: CreateSessionRequest['input']): SessionInputMessage[] {
  if (input === undefined || input === null) return [];
  return typeof input === 'string' ? [{ role: 'user', content: [{ type: 'input_text', text: input }] }] : input;
}

/** The ends of a turn the create stream waits for: a turn ended and the session idle again, or failed. */
function endsCreateStream(): (event: SessionEvent) => boolean {
  let turnEnded = false;
  return (event) => {
    if (event.type === 'agent.session.turn.completed' || event.type === 'agent.session.turn.failed' || event.type === 'agent.session.turn.cancelled')
      turnEnded = true;
    return event.type === 'agent.session.failed' || (turnEnded && event.type === 'agent.session.idle');
  };
}

/**
 * The Agents API's sessions (`client.beta.agents.sessions.*`): create (streamed too), read,
 * update, list, delete; their items, turns, and events in and out. The harness runs the turns.
 */
export function registerSessionRoutes(app: FastifyInstance, deps: SessionRouteDeps): void {
  const { harness, hub, records } = deps;
  const found = async (id: string): Promise<SessionRecord> => {
    const record = await harness.load(id);
    if (!record) throw sessionNotFound(id);
    return record;
  };
  const refuseTooManyStreams = (sessionId: string): void => {
    if (hub.streams >= MAX_SESSION_EVENT_STREAMS) {
      throw new ApiError(
        'too_many_event_streams',
        `${MAX_SESSION_EVENT_STREAMS} agent session event streams are open, the most the emulator serves at once: close one and retry.`,
        null,
        { 'retry-after': '1' },
      );
    }
    if (hub.streamsOf(sessionId) >= MAX_STREAMS_PER_SESSION) {
      throw new ApiError(
        'too_many_event_streams',
        `${MAX_STREAMS_PER_SESSION} event streams are open on session '${sessionId}', the most one session has: close one and retry.`,
        null,
        { 'retry-after': '1' },
      );
    }
  };

  app.post('/v1/agents/sessions', async (request, reply) => {
    const body = parseOrThrow(CreateSessionRequest, request.body ?? {});
    if (body.stream_options != null && body.stream !== true) {
      throw new ApiError('invalid_value', "'stream_options' is only allowed when 'stream' is true.", 'stream_options');
    }
    const plan = {
      agentId: body.agent_id,
      agent: body.agent,
      environment: body.environment,
      metadata: body.metadata,
      vaultIds: body.vault_ids,
      promptCacheTtl: body.prompt_cache_options ? (body.prompt_cache_options.ttl ?? '30m') : undefined,
      review: body.review,
    };
    const record = newSessionRecord(plan, await resolveAgent(records(), plan));
    const { id } = record.session;
    const input = inputMessages(body.input);
    if (body.stream !== true) {
      await harness.create(record, input);
      return sessionNow((await harness.load(id)) ?? record);
    }
    refuseTooManyStreams(id);
    // Followed before the session exists, so that its first event is `agent.session.created`
    // (the SDK's helper needs the session id before any tool call).
    const opened = await hub.open(id);
    reply.hijack();
    request.streamedByHand = true;
    const stream = opened.start(reply.raw, { 'x-request-id': request.id }, input.length > 0 ? endsCreateStream() : () => true);
    reply.raw.on('close', () => deps.recordStream(request, reply));
    try {
      await harness.create(record, input);
    } catch (error) {
      request.log.error({ err: error, session: id }, 'an agent session could not be created');
      stream.write([
        { type: 'agent.session.failed', session: { ...sessionNow(record), status: 'failed', error: 'The session could not be stored; see the emulator log.' } },
      ]);
      stream.end();
    }
    return reply;
  });

  app.get('/v1/agents/sessions', async (request) => {
    const { filters, rest } = metadataFilters((request.query ?? {}) as Record<string, unknown>);
    const query = parseOrThrow(SessionListQuery, rest);
    const sessions = (await records().list<SessionRecord>('session'))
      .map((record) => record.session)
      .filter((session) => (query.agent_id === undefined || session.agent.id === query.agent_id) && matchesMetadata(session.metadata, filters));
    return cursorPage(sessions, query, 'session', true);
  });

  app.get<SessionParams>('/v1/agents/sessions/:session_id', async (request) => sessionNow(await found(request.params.session_id)));

  app.post<SessionParams>('/v1/agents/sessions/:session_id', async (request) => {
    const body = parseOrThrow(UpdateSessionRequest, request.body ?? {});
    // Omitted: kept; null or []: cleared (the SDK's types).
    const tools = body.agent?.tools === undefined ? undefined : agentTools(body.agent.tools ?? [], 'agent.tools');
    await found(request.params.session_id);
    const record = await harness.modify(request.params.session_id, (record) => {
      const { session } = record;
      if (body.agent?.model) session.agent.model = body.agent.model;
      // An omitted effort keeps the current one; null selects the model's default.
      if (body.agent?.reasoning && body.agent.reasoning.effort !== undefined)
        session.agent.reasoning = { ...session.agent.reasoning, effort: body.agent.reasoning.effort };
      if (body.agent?.service_tier !== undefined) session.agent.service_tier = body.agent.service_tier ?? 'auto';
      if (tools) session.agent.tools = tools;
      if (body.metadata !== undefined) session.metadata = body.metadata ?? {};
      if (body.prompt_cache_options !== undefined)
        session.prompt_cache_options = body.prompt_cache_options ? { ttl: body.prompt_cache_options.ttl ?? '30m' } : null;
      if (body.review !== undefined) session.review = body.review;
    });
    return sessionNow(record);
  });

  app.delete<SessionParams>('/v1/agents/sessions/:session_id', async (request) => {
    const id = request.params.session_id;
    if (!(await harness.remove(id))) throw sessionNotFound(id);
    return { id, deleted: true, object: 'agent.session.deleted' as const };
  });

  app.get<SessionParams>('/v1/agents/sessions/:session_id/items', async (request) => {
    const query = parseOrThrow(AgentListQuery, request.query);
    const id = request.params.session_id;
    await found(id);
    const page = await harness.itemPage(id, query);
    if (!page) throw new ApiError('invalid_value', `Invalid value for 'after': no item of this session has id '${query.after}'.`, 'after');
    return listOf(page.data, page.has_more);
  });

  app.get<SessionParams>('/v1/agents/sessions/:session_id/turns', async (request) => {
    const query = parseOrThrow(AgentListQuery, request.query);
    return cursorPage((await found(request.params.session_id)).turns, query, 'turn of this session', true);
  });

  const turnOf = (record: SessionRecord, turnId: string) => {
    const turn = record.turns.find((candidate) => candidate.id === turnId);
    if (!turn) throw new ApiError('turn_not_found', `Turn with id '${turnId}' not found in session '${record.session.id}'.`, 'turn_id');
    return turn;
  };

  app.get<TurnParams>('/v1/agents/sessions/:session_id/turns/:turn_id', async (request) =>
    turnOf(await found(request.params.session_id), request.params.turn_id),
  );

  app.get<TurnParams>('/v1/agents/sessions/:session_id/turns/:turn_id/items', async (request) => {
    const query = parseOrThrow(AgentListQuery, request.query);
    const record = await found(request.params.session_id);
    const turn = turnOf(record, request.params.turn_id);
    return cursorPage(
      (await harness.items(record.session.id)).filter((item) => item.turn_id === turn.id),
      query,
      'item of this turn',
    );
  });

  app.post<SessionParams>('/v1/agents/sessions/:session_id/events', async (request, reply) => {
    const body = parseOrThrow(CreateEventsRequest, request.body ?? {});
    const key = request.headers['idempotency-key'];
    await harness.post(request.params.session_id, body.events, typeof key === 'string' ? key : undefined);
    return reply.code(202).send();
  });

  app.get<SessionParams>('/v1/agents/sessions/:session_id/events', async (request, reply) => {
    parseOrThrow(EventStreamQuery, request.query);
    await found(request.params.session_id);
    refuseTooManyStreams(request.params.session_id);
    const opened = await hub.open(request.params.session_id);
    reply.hijack();
    request.streamedByHand = true;
    opened.start(reply.raw, { 'x-request-id': request.id });
    reply.raw.on('close', () => deps.recordStream(request, reply));
    return reply;
  });

  // What a session without an environment or subagents honestly has of these: nothing.
  for (const what of ['subagents', 'traces', 'artifacts'] as const) {
    const one = what.slice(0, -1);
    app.get<SessionParams>(`/v1/agents/sessions/:session_id/${what}`, async (request) => {
      const query = parseOrThrow(SessionResourceListQuery, request.query);
      await found(request.params.session_id);
      return cursorPage([] as { id: string }[], query, one);
    });
    const none = async (request: FastifyRequest<{ Params: { session_id: string; id: string } }>): Promise<never> => {
      await found(request.params.session_id);
      throw new ApiError(
        'session_resource_not_found',
        `No ${one} with id '${request.params.id}' in session '${request.params.session_id}': the emulator's sessions have no ${what}.`,
        `${one}_id`,
      );
    };
    app.get(`/v1/agents/sessions/:session_id/${what}/:id`, none);
    app.get(`/v1/agents/sessions/:session_id/${what}/:id/*`, none);
    if (what === 'artifacts') app.delete(`/v1/agents/sessions/:session_id/${what}/:id`, none);
  }
}
