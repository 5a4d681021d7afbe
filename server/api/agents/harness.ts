import type { FastifyBaseLogger } from 'fastify';
import type { SessionEventBody, SessionInputEvent, SessionInputMessage, SessionItem, TurnErrorCode, TurnObject } from '../../../schemas/agents.ts';
import type { OutputItem } from '../../../schemas/items.ts';
import { CreateResponseRequest } from '../../../schemas/request.ts';
import { ApiError } from '../../platform/api-error.ts';
import { stoppedBy, TurnStopped } from '../../platform/turn-stopped.ts';
import { CONVERSATION_LOCK_MS } from '../../engine/conversation/stored-conversations.ts';
import { TOOL_KINDS } from '../../engine/conversation/tool-kinds.ts';
import { newResponseRequest, respond, type RespondDeps, type Responded } from '../../engine/conversation/respond.ts';
import { finishedJournal, requestJournal } from '../../engine/journal-details.ts';
import { newId, newSortableId } from '../../platform/ids.ts';
import type { JournalRecorder } from '../journal/journal-hooks.ts';
import { parseOrThrow } from '../../platform/request-validation.ts';
import type { RecordPageQuery, RecordStore } from '../../platform/stores/record-store.ts';
import type { TurnGate } from '../../engine/turn-gate.ts';
import { notEmulated, responsesTools } from './agent-definition.ts';
import { sessionNotFound } from './new-session.ts';
import type { SessionEventHub } from './session-events.ts';
import {
  activeTurn,
  addUsage,
  MAX_IDEMPOTENCY_KEYS,
  sessionNow,
  type AnsweredCall,
  type PendingCall,
  type SessionRecord,
  type SteeringInput,
} from './session-record.ts';
import { FIXED_LIMITS } from '../../../schemas/fixed-limits.ts';

/** Messages steering a turn that its next step has not read yet, at most (then 409 active_turn_not_steerable). */
export const MAX_STEERING_MESSAGES = FIXED_LIMITS.steeringMessages.value;

/**
 * Responses in a row that neither call a tool nor answer (a program that ended, then its
 * program_output read back) before the turn is failed: a stand-in that never answers must not
 * keep a turn running for ever.
 */
export const MAX_SILENT_ROUNDS = FIXED_LIMITS.agentSilentRounds.value;

/** A function call and its output: the same item types in the Agents API as in the Responses API. */
const CALL = TOOL_KINDS.function.call;
const OUTPUT = TOOL_KINDS.function.output;

/** This process, as the runner of the turns it makes responses for (SessionRecord.runner). */
const INSTANCE = newId('instance');

export interface HarnessDeps {
  readonly records: RecordStore;
  readonly respond: RespondDeps;
  readonly gate: TurnGate;
  readonly hub: SessionEventHub;
  readonly journal: Pick<JournalRecorder, 'recordAgentResponse'>;
  readonly log: FastifyBaseLogger;
  /** What a turn's queued steering may come to in JSON (PTC_BODY_LIMIT_BYTES: its next step's request carries it). */
  readonly maxSteeringBytes: number;
}

/**
 * What a change did to a session's record: the events that say so, the response it starts, and
 * whether the response under way must stop (done only once the whole change is accepted).
 */
type Applied = Step & { run?: { turnId: string; input: unknown[] }; stop?: true };

/** What one step changed in a session besides its record: the events that say so, and the items it added or changed. */
interface Step {
  events: SessionEventBody[];
  items: SessionItem[];
}

/**
 * The managed agent harness of the Agents API, on the Responses engine: a session is a chain of
 * stored responses (`previous_response_id`) made with the agent's tools, PTC on unless the agent
 * turns it off. A user message starts a turn: one response, whose program (or direct calls)
 * waits on client-owned calls, shown as `function_call` items; the client's tool results, once
 * all are in, are the next response's `function_call_output` input (with the program's
 * `caller`), and so on until a response answers with a message. Nothing about programs is
 * decided here: the stand-in, the isolate, replay and sealing are the Responses API's own
 * (server/engine/conversation/respond.ts).
 *
 * A turn is a small state machine, each transition one method, each applied to the session's
 * record and stored in one step (#change, #save) before its events are published:
 *
 *   (idle) --message--> in_progress            #startTurn: the first response starts
 *   in_progress --calls--> waiting              #applyResponse: the response left calls pending
 *   in_progress --nothing--> in_progress        #applyResponse: silent; the next response (≤ MAX_SILENT_ROUNDS)
 *   waiting --last tool_result--> in_progress   #toolResult: the results are the next response's input
 *   in_progress --message--> completed          #applyResponse, #endTurn
 *   in_progress | waiting --message--> (same)   #steer: queued for the turn's next step (≤ MAX_STEERING_MESSAGES)
 *   in_progress --message, steering queued--> in_progress   #applyResponse: the steering is the next response's input
 *   any --cancel | error | runner gone--> cancelled | failed   #endTurn
 *
 * A message into an active turn steers it ("a message sent during an active turn steers that
 * turn"): it becomes a user item of that turn at once, and the turn's next step reads it, after
 * what the turn has so far: after the tool results when the turn waits on calls (a paused
 * program resumes with them, then the model sees the message), or as the next response's input
 * once the response under way has been made, even when that response answered (its message is
 * then `commentary`, and the turn goes on).
 */
export class AgentHarness {
  readonly #deps: HarnessDeps;
  /** Each session's changes, one at a time in this process (a chain of promises per session). */
  readonly #queues = new Map<string, Promise<unknown>>();
  /** The sessions whose turn this process is running a response for, with how to stop it. */
  readonly #running = new Map<string, AbortController>();

  constructor(deps: HarnessDeps) {
    this.#deps = deps;
  }

  /** Stores a new session, announces it, and starts its first turn when it comes with input. */
  async create(record: SessionRecord, input: readonly SessionInputMessage[]): Promise<void> {
    await this.#change(
      record.session.id,
      async () => {
        const applied: Applied = { events: [{ type: 'agent.session.created', session: sessionNow(record) }], items: [] };
        if (input.length > 0) this.#startTurn(record, input, applied);
        return applied;
      },
      record,
    );
  }

  /**
   * Applies the events a client posted, all or none: a 4xx for the first that cannot apply. A
   * post whose `Idempotency-Key` was applied already is not applied again.
   */
  async post(sessionId: string, inputs: readonly SessionInputEvent[], idempotencyKey?: string): Promise<void> {
    await this.#change(sessionId, async (record) => {
      const applied: Applied = { events: [], items: [] };
      if (idempotencyKey !== undefined && record.idempotency_keys.includes(idempotencyKey)) return applied;
      inputs.forEach((input, index) => this.#apply(record, input, `events[${index}]`, applied));
      if (idempotencyKey !== undefined) record.idempotency_keys = [...record.idempotency_keys, idempotencyKey].slice(-MAX_IDEMPOTENCY_KEYS);
      return applied;
    });
  }

  /** Changes a session's settings (`update`) between its turns' steps; the session as it is after. */
  async modify(sessionId: string, update: (record: SessionRecord) => void): Promise<SessionRecord> {
    let changed: SessionRecord | undefined;
    await this.#change(sessionId, async (record) => {
      update(record);
      changed = record;
      return { events: [], items: [] };
    });
    return changed!;
  }

  /** Deletes a session, stopping its turn; false when there was none. */
  async remove(sessionId: string): Promise<boolean> {
    return this.#serially(sessionId, async () => {
      const record = await this.#deps.records.get<SessionRecord>('session', sessionId);
      if (!record) return false;
      this.#stop(sessionId);
      await this.#deps.records.delete('session', sessionId);
      await this.#deps.records.deleteChildren('session_item', sessionId);
      // Whoever follows the session hears that it is gone, and their streams end.
      const events = this.#endTurn(record, 'cancelled', null, []).filter((event) => event.type !== 'agent.session.idle');
      record.session.status = 'failed';
      record.session.error = 'The session was deleted.';
      events.push({ type: 'agent.session.failed', session: sessionNow(record) });
      this.#deps.hub.publish(sessionId, events);
      this.#deps.hub.endSession(sessionId);
      return true;
    });
  }

  /** The session's record as it is between changes (undefined: no such session). */
  async load(sessionId: string): Promise<SessionRecord | undefined> {
    return this.#serially(sessionId, () => this.#read(sessionId));
  }

  /** Stops every running turn's response (the server is closing). */
  stopAll(): void {
    for (const controller of this.#running.values()) controller.abort(new TurnStopped('shutdown'));
  }

  /**
   * The session's record, with a turn whose runner is gone failed first: a process that stopped
   * (a restart) while it made the turn's response, whose lease has run out, never answers.
   */
  async #read(sessionId: string): Promise<SessionRecord | undefined> {
    const record = await this.#deps.records.get<SessionRecord>('session', sessionId);
    if (record?.session.status !== 'in_progress') return record;
    const { runner } = record;
    const gone = runner === null || (runner.instance === INSTANCE ? !this.#running.has(sessionId) : runner.until < Date.now());
    if (gone) {
      const items: SessionItem[] = [];
      const events = this.#endTurn(
        record,
        'failed',
        { code: 'internal_error', message: 'The emulator stopped while this turn ran; send the message again.' },
        items,
      );
      await this.#save(record, items);
      this.#deps.hub.publish(sessionId, events);
    }
    return record;
  }

  /** Aborts the session's running response, if any, and forgets it. */
  #stop(sessionId: string): void {
    this.#running.get(sessionId)?.abort(new TurnStopped('cancelled'));
    this.#running.delete(sessionId);
  }

  #apply(record: SessionRecord, input: SessionInputEvent, param: string, applied: Applied): void {
    switch (input.type) {
      case 'agent.session.input.message': {
        const turn = activeTurn(record);
        if (turn) this.#steer(record, turn, input.input, param, applied);
        else this.#startTurn(record, input.input, applied);
        return;
      }
      case 'agent.session.input.tool_result':
        this.#toolResult(record, input, param, applied);
        return;
      case 'agent.session.input.cancel':
        if (activeTurn(record)) {
          applied.stop = true;
          applied.events.push(...this.#endTurn(record, 'cancelled', null, applied.items));
          delete applied.run;
        }
        return;
      default:
        throw notEmulated(`'${input.type}' (no MCP servers or computer use run in agent sessions here)`, `${param}.type`);
    }
  }

  #startTurn(record: SessionRecord, messages: readonly SessionInputMessage[], applied: Applied): void {
    const now = Math.floor(Date.now() / 1000);
    const turn: TurnObject = {
      id: newSortableId('turn'),
      object: 'agent.session.turn',
      agent_id: record.session.agent.id,
      session_id: record.session.id,
      subagent_id: null,
      status: 'in_progress',
      created_at: now,
      started_at: now,
      completed_at: null,
      error: null,
      usage: null,
    };
    record.turns.push(turn);
    record.active_turn_id = turn.id;
    record.next_output_index = 0;
    record.pending = [];
    record.answered = [];
    record.steering = [];
    record.session.status = 'in_progress';
    record.session.last_active_at = now;
    const sessionId = record.session.id;
    applied.events.push({ type: 'agent.session.in_progress', session: sessionNow(record) });
    applied.events.push({ type: 'agent.session.turn.created', session_id: sessionId, turn_id: turn.id, turn: { ...turn } });
    applied.events.push({ type: 'agent.session.turn.in_progress', session_id: sessionId, turn_id: turn.id, turn: { ...turn } });
    applied.run = { turnId: turn.id, input: this.#userItems(record, turn, messages, applied) };
  }

  /**
   * Messages into the active turn: its user items from now, read by its next step. When that step
   * starts from this same post (the turn's first message, or the last tool result, before them)
   * they join its input; otherwise they wait in `record.steering`, all or none within the bounds.
   */
  #steer(record: SessionRecord, turn: TurnObject, messages: readonly SessionInputMessage[], param: string, applied: Applied): void {
    const steering = record.steering ?? [];
    const joining = applied.run?.turnId === turn.id;
    if (!joining) {
      const queued = steering.length + messages.length;
      const bytes = Buffer.byteLength(JSON.stringify([...steering, ...messages]));
      if (queued > MAX_STEERING_MESSAGES || bytes > this.#deps.maxSteeringBytes) {
        const state = turn.status === 'waiting' ? 'waits on tool results' : 'is making a response';
        throw new ApiError(
          'active_turn_not_steerable',
          `Turn '${turn.id}' of session '${record.session.id}' ${state} and already holds ${steering.length} steering messages its next step has not read; with these ${messages.length} it would hold more than ${MAX_STEERING_MESSAGES} (steeringMessages) or more than ${this.#deps.maxSteeringBytes} bytes of JSON (PTC_BODY_LIMIT_BYTES). Send it once that step has run, or end the turn with agent.session.input.cancel.`,
          `${param}.input`,
        );
      }
    }
    const input = this.#userItems(record, turn, messages, applied);
    if (joining) applied.run = { turnId: turn.id, input: [...applied.run!.input, ...input] };
    else record.steering = [...steering, ...input];
  }

  /** A turn's user messages as its items (announced), and as the input items a step's request carries. */
  #userItems(record: SessionRecord, turn: TurnObject, messages: readonly SessionInputMessage[], applied: Applied): SteeringInput[] {
    const sessionId = record.session.id;
    return messages.map((message) => {
      const item: SessionItem = {
        type: 'message',
        id: newId('msg'),
        role: 'user',
        content: message.content,
        phase: null,
        status: 'completed',
        turn_id: turn.id,
      };
      applied.items.push(item);
      applied.events.push({ type: 'agent.session.turn.item.added', session_id: sessionId, turn_id: turn.id, item, output_index: null });
      return { type: 'message', id: item.id, role: 'user', content: message.content };
    });
  }

  /** The steering the turn's next step reads, taken from the record. */
  #takeSteering(record: SessionRecord): SteeringInput[] {
    const steering = record.steering ?? [];
    record.steering = [];
    return steering;
  }

  #toolResult(record: SessionRecord, input: Extract<SessionInputEvent, { type: 'agent.session.input.tool_result' }>, param: string, applied: Applied): void {
    const index = record.pending.findIndex((call) => call.call_id === input.call_id && call.turn_id === input.turn_id);
    // The exact error the SDK's sessions.stream() helper retries (a result racing its call).
    if (index < 0) throw new ApiError('invalid_request_error', `Unknown pending tool call: ${input.call_id}`, `${param}.call_id`);
    const [call] = record.pending.splice(index, 1);
    const sessionId = record.session.id;
    const failed = !input.success;
    const outputItem: SessionItem = {
      type: OUTPUT.type,
      id: newId(OUTPUT.idPrefix),
      call_id: call!.call_id,
      output: failed ? null : (input.output ?? null),
      error: failed ? (input.error ?? 'The tool failed.') : null,
      status: failed ? 'failed' : 'completed',
      turn_id: call!.turn_id,
    };
    const callItem = callItemOf(call!, 'completed');
    applied.items.push(callItem, outputItem);
    applied.events.push({
      type: 'agent.session.turn.item.done',
      session_id: sessionId,
      turn_id: call!.turn_id,
      item: callItem,
      output_index: call!.output_index,
    });
    applied.events.push({ type: 'agent.session.turn.item.added', session_id: sessionId, turn_id: call!.turn_id, item: outputItem, output_index: null });
    // A failed call reaches the program (or the model) as its error text: the hosted harness's
    // rendering of a failure is not documented (docs/DEVIATIONS.md#the-agents-api).
    const output: AnsweredCall = {
      type: OUTPUT.type,
      call_id: call!.call_id,
      output: failed ? (input.error ?? 'The tool failed.') : (input.output ?? ''),
      ...(call!.caller ? { caller: call!.caller } : {}),
    };
    record.answered.push(output);
    if (record.pending.length > 0) return;
    const turn = activeTurn(record)!;
    turn.status = 'in_progress';
    record.session.status = 'in_progress';
    applied.events.push({ type: 'agent.session.in_progress', session: sessionNow(record) });
    applied.events.push({ type: 'agent.session.turn.in_progress', session_id: sessionId, turn_id: turn.id, turn: { ...turn } });
    // The results, then what the client said meanwhile: the program resumes, then the model reads it.
    applied.run = { turnId: turn.id, input: [...record.answered, ...this.#takeSteering(record)] };
    record.answered = [];
  }

  /** Ends the active turn: its status, the session idle again, and the events that say so. */
  #endTurn(
    record: SessionRecord,
    status: 'completed' | 'failed' | 'cancelled',
    error: { code: TurnErrorCode; message: string } | null,
    items: SessionItem[],
  ): SessionEventBody[] {
    const turn = activeTurn(record);
    if (!turn) return [];
    turn.status = status;
    turn.completed_at = Math.floor(Date.now() / 1000);
    turn.error = error;
    const sessionId = record.session.id;
    const events: SessionEventBody[] = [];
    // The calls the turn still waited on end with it: their items say so, on the stream too.
    for (const call of record.pending) {
      const item = callItemOf(call, 'incomplete');
      items.push(item);
      events.push({ type: 'agent.session.turn.item.done', session_id: sessionId, turn_id: call.turn_id, item, output_index: call.output_index });
    }
    record.pending = [];
    record.answered = [];
    record.steering = [];
    record.active_turn_id = null;
    record.runner = null;
    // What a cancelled or failed turn said stays in its items; the model goes on without it.
    if (status === 'completed') record.settled_response_id = record.last_response_id;
    else record.last_response_id = record.settled_response_id;
    record.session.status = 'idle';
    record.session.last_active_at = turn.completed_at;
    events.push(
      { type: `agent.session.turn.${status}`, session_id: sessionId, turn_id: turn.id, turn: { ...turn }, usage: turn.usage },
      { type: 'agent.session.idle', session: sessionNow(record) },
    );
    return events;
  }

  /**
   * Runs `change` on the session's record, one change at a time per session; publishes what it
   * applied once stored, then runs the response it started, if any.
   */
  async #change(sessionId: string, change: (record: SessionRecord) => Promise<Applied>, created?: SessionRecord): Promise<void> {
    let controller: AbortController | undefined;
    const applied = await this.#serially(sessionId, async () => {
      const record = created ?? (await this.#read(sessionId));
      if (!record) throw sessionNotFound(sessionId);
      const result = await change(record);
      if (result.stop) this.#stop(sessionId);
      if (result.run) {
        controller = new AbortController();
        this.#running.set(sessionId, controller);
        record.runner = { instance: INSTANCE, until: Date.now() + CONVERSATION_LOCK_MS };
      }
      await this.#save(record, result.items);
      return result;
    });
    this.#deps.hub.publish(sessionId, applied.events);
    if (applied.run) void this.#runRound(sessionId, applied.run.turnId, applied.run.input, 0, controller!);
  }

  async #serially<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    const before = this.#queues.get(sessionId) ?? Promise.resolve();
    const result = before.then(work, work);
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.#queues.set(sessionId, settled);
    void settled.then(() => {
      if (this.#queues.get(sessionId) === settled) this.#queues.delete(sessionId);
    });
    return result;
  }

  /** One response of the turn, off the request that started it; its outcome applied to the session. */
  async #runRound(sessionId: string, turnId: string, input: unknown[], silentRounds: number, controller: AbortController): Promise<void> {
    let outcome: { responded: Responded } | { error: unknown };
    const started = performance.now();
    try {
      const record = await this.#deps.records.get<SessionRecord>('session', sessionId);
      if (!record || record.active_turn_id !== turnId || controller.signal.aborted) return;
      outcome = { responded: await this.#respond(record, input, controller.signal, started) };
    } catch (error) {
      outcome = { error };
    }
    // Forgets this run, unless a newer one of the session (after a cancel) has taken its place.
    const forget = (): void => {
      if (this.#running.get(sessionId) === controller) this.#running.delete(sessionId);
    };
    let next: { input: unknown[]; silentRounds: number } | undefined;
    const events = await this.#serially(sessionId, async () => {
      const record = await this.#deps.records.get<SessionRecord>('session', sessionId);
      // Cancelled (or deleted) meanwhile: what the response said is no longer wanted.
      if (!record || record.active_turn_id !== turnId || controller.signal.aborted) {
        forget();
        return [];
      }
      let events: SessionEventBody[];
      const items: SessionItem[] = [];
      if ('error' in outcome) {
        events = this.#endTurn(record, 'failed', turnError(outcome.error), items);
        if (!(outcome.error instanceof ApiError)) this.#deps.log.error({ err: outcome.error, session: sessionId }, 'an agent turn failed');
      } else {
        const result = this.#applyResponse(record, outcome.responded, items);
        events = result.events;
        if (result.next === 'steered') {
          // What the client said while the response was made: the next response reads it.
          next = { input: this.#takeSteering(record), silentRounds: 0 };
        } else if (result.next === 'again') {
          if (silentRounds + 1 >= MAX_SILENT_ROUNDS) {
            events.push(
              ...this.#endTurn(
                record,
                'failed',
                { code: 'internal_error', message: `The model stand-in made ${MAX_SILENT_ROUNDS} responses in a row without a message or a tool call.` },
                items,
              ),
            );
          } else {
            next = { input: [], silentRounds: silentRounds + 1 };
          }
        }
      }
      if (next) record.runner = { instance: INSTANCE, until: Date.now() + CONVERSATION_LOCK_MS };
      else forget();
      await this.#save(record, items);
      return events;
    });
    this.#deps.hub.publish(sessionId, events);
    if (next) await this.#runRound(sessionId, turnId, next.input, next.silentRounds, controller);
  }

  async #respond(record: SessionRecord, input: unknown[], signal: AbortSignal, started: number): Promise<Responded> {
    const { agent } = record.session;
    const body = parseOrThrow(CreateResponseRequest, {
      model: agent.model,
      ...(agent.instructions !== null ? { instructions: agent.instructions } : {}),
      tools: responsesTools(agent),
      input,
      store: true,
      ...(record.last_response_id !== null ? { previous_response_id: record.last_response_id } : {}),
      metadata: record.session.metadata,
    });
    // A step of a turn is a request to the engine like any other: no headers, strict checks.
    const request = newResponseRequest(body, { headers: {}, headerKnobs: {}, retryCount: 0, clientChecks: 'strict', log: this.#deps.log });
    let status = 200;
    let responded: Responded | undefined;
    try {
      responded = await respond(request, this.#deps.respond, { place: this.#deps.gate.enter('in_progress'), signal });
      return responded;
    } catch (error) {
      status = error instanceof ApiError ? error.status : 500;
      throw error;
    } finally {
      this.#deps.journal.recordAgentResponse({
        requestId: request.id,
        sessionId: record.session.id,
        status,
        durationMs: performance.now() - started,
        ...requestJournal(body, false),
        ...(responded ? finishedJournal(body, responded) : {}),
      });
    }
  }

  /**
   * A response's output as the session's items and events, and what the turn does next: wait on
   * the calls it left, end (it answered), go on with the steering it was sent meanwhile, or make
   * another response (it neither called nor answered).
   */
  #applyResponse(
    record: SessionRecord,
    responded: Responded,
    items: SessionItem[],
  ): { events: SessionEventBody[]; next: 'waiting' | 'ended' | 'steered' | 'again' } {
    const { response } = responded;
    const turn = activeTurn(record)!;
    const sessionId = record.session.id;
    const events: SessionEventBody[] = [];
    // A message the client sent while this response was made goes to the next one: what this one
    // says is not the turn's final answer.
    const steered = (record.steering?.length ?? 0) > 0;
    record.last_response_id = response.id;
    turn.usage = addUsage(turn.usage, response.usage);
    record.session.usage = addUsage(record.session.usage, response.usage);
    let answered = false;
    for (const item of response.output as OutputItem[]) {
      const at = { session_id: sessionId, turn_id: turn.id };
      if (item.type === 'message' && item.role === 'assistant') {
        const outputIndex = record.next_output_index++;
        const texts = item.content.map((part) => part.text);
        const done: SessionItem = {
          type: 'message',
          id: item.id,
          role: 'assistant',
          content: texts.map((text) => ({ type: 'output_text', text })),
          phase: steered ? 'commentary' : 'final_answer',
          status: 'completed',
          turn_id: turn.id,
        };
        items.push(done);
        events.push({ type: 'agent.session.turn.item.added', ...at, item: { ...done, content: [], status: 'in_progress' }, output_index: outputIndex });
        texts.forEach((text, contentIndex) => {
          const part = { item_id: item.id, output_index: outputIndex, content_index: contentIndex };
          events.push({ type: 'agent.session.turn.content_part.added', ...at, ...part, part: { type: 'output_text', text: '' } });
          events.push({ type: 'agent.session.turn.output_text.delta', ...at, ...part, delta: text });
          events.push({ type: 'agent.session.turn.output_text.done', ...at, ...part, text });
          events.push({ type: 'agent.session.turn.content_part.done', ...at, ...part, part: { type: 'output_text', text } });
        });
        events.push({ type: 'agent.session.turn.item.done', ...at, item: done, output_index: outputIndex });
        answered = true;
      } else if (item.type === 'reasoning') {
        const outputIndex = record.next_output_index++;
        const done: SessionItem = { type: 'reasoning', id: item.id, status: 'completed', summary: item.summary, turn_id: turn.id };
        items.push(done);
        events.push({ type: 'agent.session.turn.item.added', ...at, item: done, output_index: outputIndex });
        events.push({ type: 'agent.session.turn.item.done', ...at, item: done, output_index: outputIndex });
      } else if (item.type === CALL.type) {
        const outputIndex = record.next_output_index++;
        const call: SessionItem = {
          type: CALL.type,
          id: item.id,
          call_id: item.call_id,
          name: item.name,
          arguments: item.arguments,
          status: 'in_progress',
          turn_id: turn.id,
        };
        items.push(call);
        record.pending.push({
          call_id: item.call_id,
          name: item.name,
          arguments: item.arguments,
          turn_id: turn.id,
          item_id: item.id,
          output_index: outputIndex,
          ...(item.caller ? { caller: item.caller } : {}),
        });
        events.push({ type: 'agent.session.turn.item.added', ...at, item: call, output_index: outputIndex });
      }
      // program and program_output stay inside the harness: the Agents API has no item for
      // them (the journal and the inspector show them; docs/DEVIATIONS.md#the-agents-api).
    }
    if (record.pending.length > 0) {
      turn.status = 'waiting';
      record.session.status = 'requires_action';
      events.push({ type: 'agent.session.requires_action', session: sessionNow(record) });
      return { events, next: 'waiting' };
    }
    if (steered) return { events, next: 'steered' };
    if (answered) {
      events.push(...this.#endTurn(record, 'completed', null, items));
      return { events, next: 'ended' };
    }
    return { events, next: 'again' };
  }

  /** Stores what a step changed in one step: its items and the record that counts on them. */
  async #save(record: SessionRecord, items: readonly SessionItem[] = []): Promise<void> {
    const sessionId = record.session.id;
    await this.#deps.records.putAll([
      ...items.map((item) => ({ kind: 'session_item' as const, id: sessionItemKey(sessionId, item.id), value: item, parent: sessionId })),
      { kind: 'session', id: sessionId, value: record },
    ]);
  }

  /** A session's items, oldest first. */
  async items(sessionId: string): Promise<SessionItem[]> {
    return this.#deps.records.list<SessionItem>('session_item', sessionId);
  }

  /** One page of a session's items (only that page is read); undefined when `after` is none of them. */
  async itemPage(sessionId: string, query: RecordPageQuery): Promise<{ data: SessionItem[]; has_more: boolean } | undefined> {
    return this.#deps.records.page<SessionItem>('session_item', sessionId, {
      ...query,
      ...(query.after !== undefined ? { after: sessionItemKey(sessionId, query.after) } : {}),
    });
  }
}

/** An item's record id: item ids are unique within a session (a message's, a call's). */
function sessionItemKey(sessionId: string, itemId: string): string {
  return `${sessionId}/${itemId}`;
}

/** The item that shows a call the turn waited on, with the status it has now. */
function callItemOf(call: PendingCall, status: 'completed' | 'incomplete'): SessionItem {
  return { type: CALL.type, id: call.item_id, call_id: call.call_id, name: call.name, arguments: call.arguments, status, turn_id: call.turn_id };
}

/** A failed response's error as the turn's. */
function turnError(error: unknown): { code: TurnErrorCode; message: string } {
  if (error instanceof ApiError) {
    return { code: error.status === 429 ? 'server_overloaded' : error.status >= 500 ? 'internal_error' : 'invalid_request', message: error.message };
  }
  if (stoppedBy(error)) return { code: 'request_timeout', message: 'The turn was stopped before its response was made (the server is closing).' };
  return { code: 'internal_error', message: "The emulator failed while it made this turn's response; its log says why." };
}
