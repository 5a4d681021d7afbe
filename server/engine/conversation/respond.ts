import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { ConversationItem } from '../../../schemas/items.ts';
import type { Knobs } from '../../../schemas/knobs.ts';
import type { CreateResponseRequest } from '../../../schemas/request.ts';
import type { ResponseObject } from '../../../schemas/response.ts';
import type { ClientChecks } from '../../platform/config.ts';
import { mergeKnobs, simulatedError } from '../knobs.ts';
import type { ModelContext } from '../stand-ins/model-decision.ts';
import { buildResponse } from '../response-object.ts';
import { putIfUnfinished, type ResponseStore } from '../../platform/stores/response-store.ts';
import { TurnStopped } from '../../platform/turn-stopped.ts';
import { backendUsage, tokenChunks } from '../usage.ts';
import { countUsageOffLoop } from '../usage-off-loop.ts';
import { expandHistory } from './compaction.ts';
import { enterConversation, storedHistory, withStoredMcpOutputs, type ConversationTurn } from './history.ts';
import { withReferencesResolved } from './item-references.ts';
import { withEncryptedReasoning } from './reasoning-content.ts';
import { limitOutput } from './output-limit.ts';
import { bindOutputsByName } from './output-binding.ts';
import { prepareTurn, runTurn, type PreparedTurn, type TurnResult, type TurnServices } from './turn.ts';
import { newId } from '../../platform/ids.ts';
import type { TurnPriority } from '../turn-gate.ts';
import { inputItems } from './history.ts';
import { MCP_APPROVAL } from './tool-kinds.ts';

export interface RespondDeps {
  readonly store: ResponseStore;
  readonly services: Omit<TurnServices, 'log'>;
  /** The knobs the stand-ins ask of this turn (a matching scenario rule's, an explored shape's), if any. */
  readonly standInKnobs: (context: ModelContext) => Knobs | undefined;
  /** Told of every response made and every request refused, whichever front door it came by. */
  readonly observer?: TurnObserver;
  /** The most bytes of stored items a request's item references may bring in (PTC_BODY_LIMIT_BYTES). */
  readonly maxReferencedBytes: number;
}

/** What watches turns as they end (the explorer's report): nothing it does changes a response. */
export interface TurnObserver {
  /** A response was made: the conversation it continued (stored history, then its input) and the Response. */
  finished(request: ResponseRequest, history: readonly ConversationItem[], response: ResponseObject): void;
  /** A request was refused before its turn ran: a client-loop 400, a conversation not found, … */
  refused(request: ResponseRequest, error: unknown): void;
}

export interface ResponseRequest {
  readonly id: string;
  readonly createdAt: number;
  readonly body: CreateResponseRequest;
  /** This request's input as items with ids (computed once: a background response stores them first). */
  readonly newInput: readonly ConversationItem[];
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly headerKnobs: Knobs;
  readonly retryCount: number;
  readonly clientChecks: ClientChecks;
  readonly log: FastifyBaseLogger;
  /**
   * False: the response only takes the request's input, with no output (a WebSocket
   * `response.create` with `generate: false`, which prepares state a later turn continues by
   * previous_response_id); its conversation is read and checked as any other's.
   */
  readonly generate: boolean;
}

export interface FinishOptions {
  /** Aborted when a background response is cancelled or the server shuts down. */
  readonly signal?: AbortSignal;
  /** Runs after the `delay_ms` knob, as the turn begins. */
  readonly onStart?: () => Promise<void>;
  /**
   * A background response: its result is stored only while the stored response is unfinished
   * (not cancelled meanwhile, on any instance); otherwise the finish throws TurnStopped('cancelled').
   */
  readonly storeIfUnfinished?: boolean;
}

export interface Responded {
  readonly response: ResponseObject;
  readonly knobs: Knobs;
  readonly turn: TurnResult;
}

/** A request checked and ready to run: everything that can reject it has run. */
export interface PreparedResponse {
  readonly request: ResponseRequest;
  readonly turn: PreparedTurn;
  readonly knobs: Knobs;
  /** The conversation it is made in, locked until finishResponse (or releasePrepared) lets it go. */
  readonly conversation?: ConversationTurn;
}

/**
 * Everything that can reject a request, before anything runs: the stored conversation it
 * continues, the client-loop checks, the knobs that apply (scenario rule, then headers) and an
 * error they inject. A background request is checked here before it is queued.
 */
export async function prepareResponse(sent: ResponseRequest, deps: RespondDeps): Promise<PreparedResponse> {
  let request = sent;
  let conversation: ConversationTurn | undefined;
  try {
    // The request as the engine reads and stores it: its item references read as their items.
    request = { ...sent, newInput: await withReferencesResolved(deps.store, sent.newInput, 'input', deps.maxReferencedBytes) };
    const { body, newInput } = request;
    conversation = await enterConversation(deps.store, body, newInput, deps.services.sealingKeys);
    const storedParam = conversation ? 'conversation' : 'previous_response_id';
    // A compaction item is read as the items it holds (server/engine/conversation/compaction.ts).
    const { stored, input } = expandHistory(
      conversation ? conversation.history : await storedHistory(deps.store, body.previous_response_id),
      newInput,
      deps.services.sealingKeys,
      storedParam,
    );
    const turn = await prepareTurn(
      {
        request: body,
        history: await withStoredMcpOutputs(deps.store, bindOutputsByName([...stored, ...input], stored.length, storedParam)),
        inputStart: stored.length,
        storedParam,
        clientChecks: request.clientChecks,
        headers: request.headers,
      },
      deps.services,
    );
    const knobs = mergeKnobs(deps.standInKnobs(turn.context), request.headerKnobs);
    const injected = simulatedError(knobs, request.retryCount);
    if (injected) throw injected;
    return { request, turn, knobs, ...(conversation ? { conversation } : {}) };
  } catch (error) {
    await conversation?.release();
    deps.observer?.refused(sent, error);
    throw error;
  }
}

/** Lets go of what a prepared request holds (its conversation's lock) when it will not be finished. */
export async function releasePrepared(prepared: PreparedResponse): Promise<void> {
  await prepared.conversation?.release();
}

/** Runs a prepared request to its finished Response: the `delay_ms` knob, one model turn, the output limit, usage, and the store. */
export async function finishResponse(prepared: PreparedResponse, deps: RespondDeps, options: FinishOptions = {}): Promise<Responded> {
  try {
    const { request, knobs } = prepared;
    const { body } = request;
    const { signal } = options;
    if (knobs.delay_ms && request.generate) await sleep(knobs.delay_ms, undefined, signal ? { signal } : {});
    signal?.throwIfAborted();
    await options.onStart?.();
    const turn = request.generate
      ? await runTurn(prepared.turn, knobs, {
          ...deps.services,
          log: request.log,
          ...(signal ? { signal } : {}),
          // One budget for every built-in call the response's programs make, across all of them.
          ...(body.max_tool_calls == null ? {} : { builtInCalls: { left: body.max_tool_calls } }),
        })
      : withoutOutput(prepared.turn);
    const limited = limitOutput(turn.output, body.max_output_tokens, knobs, tokenChunks);
    // A real model's own count where one decided (a model backend), else the emulator's convention.
    const usage = turn.modelUsage
      ? backendUsage(turn.modelUsage)
      : await countUsageOffLoop({
          instructions: body.instructions ?? null,
          tools: body.tools ?? [],
          context: prepared.turn.input.history,
          output: limited.output,
        });
    const response = buildResponse(request.id, body, request.createdAt, {
      status: limited.incomplete ? 'incomplete' : 'completed',
      output: withEncryptedReasoning(limited.output, body.include, deps.services.sealingKeys[0]),
      usage,
    });
    signal?.throwIfAborted();
    deps.observer?.finished(request, prepared.turn.input.history, response);
    if (options.storeIfUnfinished) {
      if (!(await putIfUnfinished(deps.store, { response, inputItems: request.newInput }))) throw new TurnStopped('cancelled');
    } else if (body.store !== false) {
      await deps.store.put({ response, inputItems: request.newInput });
    }
    if (prepared.conversation) {
      // A background response cancelled while it was being stored adds nothing (the cancel
      // has stored it cancelled, or is storing it).
      signal?.throwIfAborted();
      // The response's input and output join the conversation once it has finished, as hosted.
      const added = await deps.store.conversations?.append(prepared.conversation.id, [...request.newInput, ...(response.output as ConversationItem[])]);
      if (!added)
        request.log.warn({ conversation: prepared.conversation.id, response: response.id }, 'the conversation was deleted while a response was made in it');
    }
    return { response, knobs, turn };
  } finally {
    await releasePrepared(prepared);
  }
}

/** The turn of a request that generates nothing: no stand-in asked, no program resumed (a later turn resumes them). */
function withoutOutput(turn: PreparedTurn): TurnResult {
  return { output: [], trace: [], tolerated: turn.state.tolerated, standIns: [] };
}

/** What comes with a request beside its body: its headers (lower-cased) and what they ask for, and where to log. */
export interface RequestSettings {
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly headerKnobs: Knobs;
  readonly clientChecks: ClientChecks;
  /** Which attempt this is, from 0 (a simulated error's `error_times` counts them). */
  readonly retryCount: number;
  readonly log: FastifyBaseLogger;
  /** False for a WebSocket `response.create` with `generate: false` (ResponseRequest.generate); true when absent. */
  readonly generate?: boolean;
}

/** A request for a response, as every front door makes one: a fresh id, the body, its input as items with ids. */
export function newResponseRequest(body: CreateResponseRequest, settings: RequestSettings): ResponseRequest {
  return {
    id: newId('resp'),
    createdAt: Math.floor(Date.now() / 1000),
    body,
    newInput: inputItems(body.input),
    headers: settings.headers,
    headerKnobs: settings.headerKnobs,
    retryCount: settings.retryCount,
    clientChecks: settings.clientChecks,
    log: settings.log,
    generate: settings.generate ?? true,
  };
}

/** Work under way (tool outputs to deliver, a stored conversation, a retry) goes before new conversations. */
export function turnPriority(body: CreateResponseRequest, retryCount: number): TurnPriority {
  const continues =
    typeof body.input !== 'string' &&
    // An item reference names an item of a stored response: a conversation under way.
    (body.input ?? []).some((item) => item.type.endsWith('_output') || item.type === MCP_APPROVAL.response.type || item.type === 'item_reference');
  return continues || body.previous_response_id || body.conversation || retryCount > 0 ? 'in_progress' : 'new';
}

export interface RespondedInPlace extends Responded {
  /** The conversation the turn ran on: the history it continued, then the request's own input. */
  readonly context: readonly ConversationItem[];
}

export interface RespondOptions extends FinishOptions {
  /** The place among the turns allowed to run (TurnGate.enter): the turn waits for it, and frees it as soon as the Response is made. */
  readonly place: Promise<() => void>;
  /** Asked when the place comes: true (the client left while it waited) skips the turn, and undefined is returned. */
  readonly abandoned?: () => boolean;
}

/**
 * The one way a turn is run, whichever front door asked (HTTP, WebSocket, an Agents API step):
 * wait for a place, prepare (everything that can refuse the request), finish (the turn, the
 * Response, the store), and free the place. A background response prepares first, to refuse a
 * bad request before it is queued, and finishes later: prepareResponse and finishResponse.
 */
export async function respond(
  request: ResponseRequest,
  deps: RespondDeps,
  options: RespondOptions & { readonly abandoned: () => boolean },
): Promise<RespondedInPlace | undefined>;
export async function respond(request: ResponseRequest, deps: RespondDeps, options: RespondOptions): Promise<RespondedInPlace>;
export async function respond(request: ResponseRequest, deps: RespondDeps, options: RespondOptions): Promise<RespondedInPlace | undefined> {
  const release = await options.place;
  try {
    if (options.abandoned?.()) return undefined;
    const prepared = await prepareResponse(request, deps);
    return { ...(await finishResponse(prepared, deps, options)), context: prepared.turn.input.history };
  } finally {
    release();
  }
}
