import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Knobs } from '../../../schemas/knobs.ts';
import { InputItemsQuery, RetrieveResponseQuery, type CreateResponseRequest } from '../../../schemas/request.ts';
import type { DeletedResponse, ResponseObject } from '../../../schemas/response.ts';
import { ApiError } from '../../platform/api-error.ts';
import type { BackgroundResponses } from './background.ts';
import type { TurnGate } from '../../engine/turn-gate.ts';
import type { ClientChecks } from '../../platform/config.ts';
import { prepareResponse, respond, turnPriority, type PreparedResponse, type RespondDeps } from '../../engine/conversation/respond.ts';
import { listedItem } from '../http/listed-item.ts';
import { listOf, pageOf } from '../http/list-page.ts';
import type { JournalDetails } from '../../engine/journal-details.ts';
import { knobsFromHeaders, retryCountOf } from '../../engine/knobs.ts';
import { parseOrThrow } from '../../platform/request-validation.ts';
import { responseNotFound, storedOrNotFound } from '../../engine/stored-response.ts';
import type { ResponseStore } from '../../platform/stores/response-store.ts';
import { responseEvents } from '../streaming/response-events.ts';
import { deltaChunks } from '../streaming/delta-chunks.ts';
import { writeEventStream } from '../streaming/sse-writer.ts';
import { CLIENT_CHECKS_HEADER, clientChecksFor, createBodyOf, responseRequest, standInHeaders, type RequestSettings } from './create-response.ts';
import { finishedJournal, requestJournal } from '../../engine/journal-details.ts';

export interface ResponsesRouteDeps {
  readonly store: ResponseStore;
  readonly clientChecks: ClientChecks;
  /** PTC_MAX_INPUT_ITEMS. */
  readonly maxInputItems: number;
  readonly respond: RespondDeps;
  readonly background: BackgroundResponses;
  readonly gate: TurnGate;
  /** Adds to the journal entry of the request being served. */
  readonly note: (request: FastifyRequest, details: JournalDetails) => void;
  /** Records a request whose reply was written by hand (a stream), in place of the onResponse hook. */
  readonly recordStream: (request: FastifyRequest, reply: FastifyReply) => void;
}

/**
 * True once the client has hung up. (`request.raw.destroyed` is already true once a request's
 * body has been read, so the socket tells whether the client is still there.)
 */
/**
 * The `2h` and `8h` completion windows (openai 7.x's `background_options`) need a background,
 * non-streaming request at the standard tier, as the SDK documents; the emulator runs every
 * window at once, so it only holds a request to the same rule.
 */
function checkCompletionWindow(body: CreateResponseRequest): void {
  const window = body.background_options?.completion_window;
  if (window === undefined || window === 'soonest') return;
  const conflict = !body.background
    ? 'background: true'
    : body.stream
      ? 'stream: false (or no stream)'
      : body.service_tier && !['auto', 'default'].includes(body.service_tier)
        ? `the standard tier, not service_tier '${body.service_tier}'`
        : undefined;
  if (conflict)
    throw new ApiError('invalid_value', `background_options.completion_window '${window}' needs ${conflict}.`, 'background_options.completion_window');
}

function clientGone(request: FastifyRequest): boolean {
  return request.raw.socket?.destroyed ?? true;
}

export function registerResponseRoutes(app: FastifyInstance, deps: ResponsesRouteDeps): void {
  const { store } = deps;

  async function stream(request: FastifyRequest, reply: FastifyReply, response: ResponseObject, knobs: Knobs, startingAfter?: number): Promise<void> {
    // The onResponse hook does not journal this reply: recordStream does, once the report is known.
    request.streamedByHand = true;
    const report = await writeEventStream(request, reply, responseEvents(response, deltaChunks), knobs, startingAfter);
    deps.note(request, { stream_report: report });
    deps.recordStream(request, reply);
  }

  app.post('/v1/responses', { config: { bodyBounds: { inputItems: deps.maxInputItems } } }, async (request, reply) => {
    const body = createBodyOf(request.body);
    deps.note(request, requestJournal(body, body.stream === true));
    const headerKnobs = knobsFromHeaders(request.headers);
    if (body.background && body.store === false) {
      throw new ApiError('invalid_value', 'background: true needs store: true: a background response is read back with GET /v1/responses/{id}.', 'background');
    }
    checkCompletionWindow(body);
    const retryCount = retryCountOf(request.headers);
    const settings = { headerKnobs, clientChecks: clientChecksFor(request.headers[CLIENT_CHECKS_HEADER], deps.clientChecks), retryCount };
    // A place among the turns allowed to run, or a 429 now when too many already wait.
    const place = deps.gate.enter(turnPriority(body, retryCount));
    if (body.background) return acceptBackground(request, reply, body, settings, place);

    const finished = await respond(responseRequest(request, body, settings), deps.respond, { place });
    deps.note(request, finishedJournal(body, finished));
    reply.headers(standInHeaders(finished));
    if (!body.stream) return finished.response;
    await stream(request, reply, finished.response, finished.knobs);
    return reply;
  });

  /** Checks a background request like any other, stores it queued, and leaves its turn to a job that waits for `place`. */
  async function acceptBackground(
    request: FastifyRequest,
    reply: FastifyReply,
    body: CreateResponseRequest,
    settings: RequestSettings,
    place: Promise<() => void>,
  ) {
    let prepared: PreparedResponse;
    try {
      prepared = await prepareResponse(responseRequest(request, body, settings), deps.respond);
    } catch (error) {
      void place.then((release) => release());
      throw error;
    }
    let queued: ResponseObject;
    try {
      queued = await deps.background.accept(prepared, place);
    } catch (error) {
      // Not queued (the store refused it): its place goes back to the gate.
      void place.then((release) => release());
      throw error;
    }
    deps.note(request, { response_id: queued.id, response_status: 'queued', knobs: prepared.knobs });
    if (!body.stream) return queued;
    const done = await deps.background.finished(queued.id, () => clientGone(request));
    if (done) await stream(request, reply, done, prepared.knobs);
    return reply;
  }

  app.get<{ Params: { id: string } }>('/v1/responses/:id', async (request, reply) => {
    const query = parseOrThrow(RetrieveResponseQuery, request.query);
    const { response } = await storedOrNotFound(store, request.params.id);
    if (!query.stream) return response;
    const done = await deps.background.finished(response.id, () => clientGone(request));
    if (done) await stream(request, reply, done, knobsFromHeaders(request.headers), query.starting_after);
    return reply;
  });

  app.post<{ Params: { id: string } }>('/v1/responses/:id/cancel', async (request) => {
    const stored = await storedOrNotFound(store, request.params.id);
    if (!stored.response.background)
      throw new ApiError(
        'not_cancellable',
        `Response '${stored.response.id}' was not created with background: true; only background responses can be cancelled.`,
        'response_id',
      );
    return deps.background.cancel(stored);
  });

  app.delete<{ Params: { id: string } }>('/v1/responses/:id', async (request): Promise<DeletedResponse> => {
    const { id } = request.params;
    if (!(await store.delete(id))) throw responseNotFound(id);
    return { id, object: 'response.deleted', deleted: true };
  });

  app.get<{ Params: { id: string } }>('/v1/responses/:id/input_items', async (request) => {
    const query = parseOrThrow(InputItemsQuery, request.query);
    const stored = await storedOrNotFound(store, request.params.id);
    const page = pageOf(
      stored.inputItems,
      query,
      (after) => new ApiError('invalid_value', `Invalid value for 'after': no input item '${after}' in response '${request.params.id}'.`, 'after'),
    );
    return listOf(page.data.map(listedItem), page.has_more);
  });
}
