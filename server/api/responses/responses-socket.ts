import type { Socket } from 'node:net';
import { setImmediate } from 'node:timers/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from '@fastify/websocket';
import type { RawData } from 'ws';
import { MAX_JSON_DEPTH } from '../../../runtime/index.ts';
import type { CreateResponseRequest } from '../../../schemas/request.ts';
import { ApiError } from '../../platform/api-error.ts';
import type { ClientChecks } from '../../platform/config.ts';
import { respond, turnPriority, type RespondDeps, type RespondedInPlace } from '../../engine/conversation/respond.ts';
import { answerableError, errorJournal, unknownUrl } from '../http/error-handler.ts';
import { newId } from '../../platform/ids.ts';
import type { JournalDetails } from '../../engine/journal-details.ts';
import type { JournalRecorder } from '../journal/journal-hooks.ts';
import { knobsFromHeaders } from '../../engine/knobs.ts';
import { deltaChunks } from '../streaming/delta-chunks.ts';
import { responseEvents } from '../streaming/response-events.ts';
import { sendSocketEvents } from '../streaming/socket-writer.ts';
import type { TurnGate } from '../../engine/turn-gate.ts';
import type { ResponseStore, StoredResponse } from '../../platform/stores/response-store.ts';
import { CLIENT_CHECKS_HEADER, clientChecksFor, createBodyOf, responseRequest, type RequestSettings } from './create-response.ts';
import { finishedJournal, requestJournal } from '../../engine/journal-details.ts';
import { isTooDeep, OFF_LOOP_JSON_BYTES, parseOffLoop, parseOnLoop } from '../http/json-body.ts';
import type { BodyBounds } from '../../../schemas/body-bounds.ts';
import { SocketSteering, type Successor } from './socket-steering.ts';
import { FIXED_LIMITS } from '../../../schemas/fixed-limits.ts';
import type { ArrivingBodies, ArrivingBody } from '../http/arriving-bodies.ts';
import { type SocketRefusal, watchArrivingMessages } from './socket-arrivals.ts';

// WebSocket mode (docs/STREAMING.md): the SDK's `ResponsesWS` opens a socket on the Responses
// URL and sends `response.create` client events, each the body of a POST /v1/responses plus
// its `type`; each is answered with the events its Server-Sent Events stream would carry, or
// with one `error` event, and the socket stays open for the next. A `response.steer` event
// queues input for one of the socket's responses and is answered as it arrives
// (socket-steering.ts keeps what steering a socket holds).

/** Where the SDK's ResponsesWS connects: the Responses URL, as ws:// or wss://. */
export const RESPONSES_SOCKET_PATH = '/v1/responses';

/** How long a client has to answer the server's close frame at shutdown before its socket is ended. */
const CLOSE_GRACE_MS = 2_000;

/**
 * Requests that may wait on one socket behind the one being served, in number; in bytes, at most
 * PTC_BODY_LIMIT_BYTES. Past either, the socket is read no more until they have been served:
 * the client's further requests wait in its connection's buffers, not in the server's memory.
 */
const MAX_WAITING_MESSAGES = 16;

/**
 * What a message waiting on its socket is counted as at least, among the bytes arriving
 * (PTC_MAX_ARRIVING_BODY_BYTES): its parsed event and its place in the queue cost the server more
 * than a short message's bytes, and one read of the connection can hold thousands of them.
 */
const WAITING_MESSAGE_MIN_BYTES = 1024;

/** Messages a socket may bring while it is not read, those its last read brought (FIXED_LIMITS). */
const MAX_MESSAGES_PAST_BOUND = FIXED_LIMITS.socketMessagesPastBound.value;

/**
 * The `error` event a request on a socket is refused with: the fields of the SDK's
 * ResponseErrorEvent (`code`, `message`, `param` as the HTTP error's envelope has them, and
 * `sequence_number` 0: the refusal is the whole of that request's stream), plus what the hosted
 * WebSocket mode sends besides: the HTTP `status` the request would have had, and the envelope's
 * `error` object itself.
 */
export interface SocketErrorEvent {
  readonly type: 'error';
  readonly sequence_number: 0;
  readonly code: string;
  readonly message: string;
  readonly param: string | null;
  readonly status: number;
  readonly error: { readonly type: string; readonly code: string; readonly message: string; readonly param: string | null };
}

/** The longest `stream_id` taken: it is copied into every event answering its request. */
const MAX_STREAM_ID_CHARS = 256;

/**
 * A `response.create` event's lane: `stream_id` (openai 7.x), which every event answering it
 * carries back, its error event included, so it is read before anything else of the event is
 * checked. Requests are served one at a time in the order they came, so each lane's are too.
 */
function laneOf(event: Record<string, unknown>): string | undefined {
  const lane = event.stream_id;
  if (lane === undefined) return undefined;
  if (typeof lane !== 'string' || lane === '') {
    throw new ApiError('invalid_type', `Invalid type for 'stream_id': expected a non-empty string, but got ${describeType(lane)}.`, 'stream_id');
  }
  if (lane.length > MAX_STREAM_ID_CHARS) {
    throw new ApiError(
      'invalid_value',
      `Invalid 'stream_id': ${lane.length} characters, more than the ${MAX_STREAM_ID_CHARS} a lane's name may have.`,
      'stream_id',
    );
  }
  return lane;
}

/** A value's JSON type for a message, never the value itself (it may be megabytes). */
function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return value === '' ? 'an empty string' : 'a string';
  return `${typeof value === 'object' ? 'an' : 'a'} ${typeof value}`;
}

export function socketErrorEvent(apiError: ApiError): SocketErrorEvent {
  const { code, message, param, type } = apiError;
  return { type: 'error', sequence_number: 0, code, message, param, status: apiError.status, error: { type, code, message, param } };
}

export interface ResponsesSocketDeps {
  readonly respond: RespondDeps;
  /** The same gate as HTTP requests: a turn over a socket takes a place like any other. */
  readonly gate: TurnGate;
  readonly clientChecks: ClientChecks;
  /** PTC_MAX_INPUT_ITEMS. */
  readonly maxInputItems: number;
  /** PTC_MAX_BODY_VALUES: JSON values one message may hold. */
  readonly maxBodyValues: number;
  /** PTC_BODY_LIMIT_BYTES, which the plugin also applies to each message (its `maxPayload`). */
  readonly bodyLimitBytes: number;
  /** The request bodies being received, which a message being received counts among (socket-arrivals.ts). */
  readonly arrivingBodies: ArrivingBodies;
  /** PTC_REQUEST_TIMEOUT_MS: the time a message has to arrive whole, from its first byte. */
  readonly requestTimeoutMs: number;
  /** True once the server drains: requests are refused `shutting_down`, and sockets closed once idle. */
  readonly draining: () => boolean;
  readonly recordSocketMessage: JournalRecorder['recordSocketMessage'];
}

/**
 * The plugin's handler for an error on an open socket. ws reports a client's protocol mistake
 * (a message over `maxPayload`, a malformed frame) and is already closing the socket with the
 * close code that says so (1009, 1002): the client's doing, not a fault of ours, so it is not
 * logged as one, and the closing handshake is left to finish.
 */
export function socketErrorHandler(this: FastifyInstance, error: Error, socket: WebSocket, request: FastifyRequest): void {
  if ((error as NodeJS.ErrnoException).code?.startsWith('WS_ERR_')) {
    request.log.info({ err: error }, 'websocket closed on a protocol error of the client');
    return;
  }
  request.log.warn({ err: error }, 'websocket error');
  socket.terminate();
}

export function registerResponsesSocketRoute(app: FastifyInstance, deps: ResponsesSocketDeps): void {
  const sessions = new Set<SocketSession>();
  const settingsOf = (request: FastifyRequest): Omit<RequestSettings, 'retryCount'> => ({
    headerKnobs: knobsFromHeaders(request.headers),
    clientChecks: clientChecksFor(request.headers[CLIENT_CHECKS_HEADER], deps.clientChecks),
  });

  app.route({
    method: 'GET',
    url: RESPONSES_SOCKET_PATH,
    // Checked before the upgrade: headers that every request on the socket would fail on refuse
    // the socket itself, with the HTTP error (400) the client sees as it connects.
    preHandler: async (request) => {
      if (request.ws) settingsOf(request);
    },
    // Without an upgrade the path is what it was before WebSocket mode: no such HTTP route.
    handler: async (request) => {
      throw unknownUrl(request);
    },
    wsHandler: (socket, request) => {
      const session = new SocketSession(socket, request, settingsOf(request), deps);
      sessions.add(session);
      socket.once('close', () => sessions.delete(session));
    },
  });

  // Each socket finishes the request it is serving, then is closed with 1001 (going away),
  // which tells the SDK it may reconnect; any other socket of the plugin is ended.
  app.addHook('preClose', async () => {
    await Promise.all([...sessions].map((session) => session.shutDown()));
    for (const client of app.websocketServer.clients) client.terminate();
  });
}

/** The server's store, in which the socket's held response (if any) is found as well. */
function withHeld(store: ResponseStore, held: () => StoredResponse | undefined): ResponseStore {
  const get = async (id: string): Promise<StoredResponse | undefined> => {
    const latest = held();
    return latest?.response.id === id ? latest : store.get(id);
  };
  // Every other member is the store's own, called on the store (its private fields need it).
  return new Proxy(store, {
    get(target, property) {
      if (property === 'get') return get;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Parses a message's text as the HTTP body parser would. */
/**
 * A message's JSON, as the HTTP bodies' parser reads it (json-text.ts), so that a message is
 * accepted exactly when the same body would be (`__proto__` and `constructor.prototype` keys
 * refused alike): its value, or why it has none.
 */
type ParsedMessage = { readonly value: unknown } | { readonly fault: 'syntax' | 'too_deep' | 'binary' | 'empty' } | { readonly refused: ApiError };

/** What a waiting message of `size` bytes is counted as among the bytes arriving. */
function heldBytesOf(size: number): number {
  return Math.max(size, WAITING_MESSAGE_MIN_BYTES);
}

function sizeOf(data: RawData): number {
  return Array.isArray(data) ? data.reduce((total, chunk) => total + chunk.length, 0) : data.byteLength;
}

/** A text message's bytes, whole. */
function bytesOf(data: RawData): Buffer {
  return Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
}

/** A message's parse error as what the socket answers: too deep, past a bound, or not JSON. */
function faultOf(error: unknown): ParsedMessage {
  return isTooDeep(error) ? { fault: 'too_deep' } : error instanceof ApiError ? { refused: error } : { fault: 'syntax' };
}

/** A small message parsed on the loop (undefined bytes: a binary message), held to the bounds a large one is held to in the thread. */
function parseMessageOnLoop(bytes: Buffer | undefined, bounds: BodyBounds): ParsedMessage {
  if (bytes === undefined) return { fault: 'binary' };
  if (bytes.length === 0) return { fault: 'empty' };
  try {
    return { value: parseOnLoop(bytes, bounds) };
  } catch (error) {
    return faultOf(error);
  }
}

interface ClientMessage {
  readonly data: RawData;
  readonly isBinary: boolean;
}

/**
 * What waits to be served, in order: a client's request (its event, or why its message is not
 * one), or the automatic successor of a steered response, which goes before them.
 */
type Waiting =
  | { readonly kind: 'request'; readonly read: { readonly event: Record<string, unknown> } | { readonly error: unknown }; readonly size: number }
  | { readonly kind: 'successor'; readonly successor: Successor; readonly size: 0 };

/** A `response.create`'s input as items, to put steering input before (undefined: not an input, refused later). */
function inputItemsOf(input: unknown): unknown[] | undefined {
  if (input === undefined || input === null) return [];
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  return Array.isArray(input) ? input : undefined;
}

/** One socket: its requests, served one after another in the order they came. */
class SocketSession {
  readonly #socket: WebSocket;
  /** The connection under the socket: what it has not yet sent of the answers. */
  readonly #raw: Socket;
  readonly #upgrade: FastifyRequest;
  readonly #settings: Omit<RequestSettings, 'retryCount'>;
  readonly #deps: ResponsesSocketDeps;
  /** Messages being parsed in the JSON thread: later ones wait for them, so that each is taken in the order it came. */
  #reading: Promise<void> = Promise.resolve();
  #messagesReading = 0;
  readonly #waiting: Waiting[] = [];
  readonly #steering: SocketSteering;
  /** The response whose events are being sent, and how to send the rest at once once it is steered. */
  #streaming: { readonly id: string; readonly hurry: AbortController } | undefined;
  #waitingBytes = 0;
  /** Messages received since the socket was last paused, and not read any further: what its last read brought. */
  #pastBound = 0;
  #flooded = false;
  /**
   * The messages waiting here, counted among the bytes arriving on the whole server: each socket
   * holds at most 16 and PTC_BODY_LIMIT_BYTES of them, but sockets are as many as clients open.
   */
  readonly #waitingHeld: ArrivingBody;
  readonly #closed: Promise<void>;
  #serving = false;
  #shuttingDown = false;
  /**
   * Simulated errors answered since the last response made here: the attempt number of the next
   * request, for the `error_times` knob (a socket has no `x-stainless-retry-count`; a client
   * that retries sends its request again on the socket).
   */
  #failedAttempts = 0;
  /**
   * The socket's latest response when it was made with `store: false`, held as a stored one
   * whose input items are the whole conversation it continued: what the hosted WebSocket mode
   * keeps in the connection's memory so that `previous_response_id` may name it.
   */
  #latest: StoredResponse | undefined;
  /**
   * The conversation code's dependencies with a store that finds `#latest` too: for `store: false`
   * requests only, as a stored response continuing it could not be continued from the store.
   */
  readonly #respondWithHeld: RespondDeps;

  constructor(socket: WebSocket, upgrade: FastifyRequest, settings: Omit<RequestSettings, 'retryCount'>, deps: ResponsesSocketDeps) {
    this.#socket = socket;
    this.#raw = upgrade.raw.socket;
    this.#upgrade = upgrade;
    this.#settings = settings;
    this.#deps = deps;
    this.#respondWithHeld = { ...deps.respond, store: withHeld(deps.respond.store, () => this.#latest) };
    this.#steering = new SocketSteering(deps.bodyLimitBytes);
    this.#waitingHeld = deps.arrivingBodies.begin(Number.NaN);
    this.#closed = new Promise((resolve) => {
      socket.once('close', () => {
        // A client that has gone costs nothing more: what it had sent and not yet been served is
        // dropped, and the request being served ends with its turn (its events are not sent).
        this.#waiting.length = 0;
        this.#waitingBytes = 0;
        this.#waitingHeld.end();
        resolve();
      });
    });
    socket.on('message', (data, isBinary) => this.#receive({ data, isBinary }));
    // Answers read by the client: the socket is read again if that was what held it.
    this.#raw.on('drain', () => this.#resumeIfUnder());
    watchArrivingMessages(
      this.#raw,
      socket,
      {
        arriving: deps.arrivingBodies,
        timeoutMs: deps.requestTimeoutMs,
        // Not read because requests wait to be served, the client is not late; because it has not
        // read its answers, it is.
        excused: () => this.#socket.isPaused && !this.#raw.writableNeedDrain,
      },
      (refusal) => this.#refuse(refusal),
    );
  }

  /** Closes the socket once the request being served (if any) has been answered. */
  shutDown(): Promise<void> {
    this.#shuttingDown = true;
    if (!this.#serving) this.#goAway();
    return this.#closed;
  }

  /** What every message is held to as soon as it is parsed (schemas/body-bounds.ts): a `response.create`'s input is a Responses input. */
  get #bounds(): BodyBounds {
    return { values: this.#deps.maxBodyValues, inputItems: this.#deps.maxInputItems };
  }

  #open(): boolean {
    return this.#socket.readyState === this.#socket.OPEN;
  }

  /**
   * A message arrived: parsed on the loop when small, in the JSON thread when large (as an HTTP
   * body is: parsing millions of short strings would hold every socket and request for seconds),
   * then taken in the order messages came.
   */
  #receive(message: ClientMessage): void {
    // A socket closing (flooded, refused, going away): what it brought meanwhile is dropped.
    if (this.#flooded || !this.#open()) return;
    if (this.#socket.isPaused && ++this.#pastBound > MAX_MESSAGES_PAST_BOUND) {
      this.#flood();
      return;
    }
    const size = sizeOf(message.data);
    // Counted from now: what is being parsed is held too.
    try {
      this.#waitingHeld.received(heldBytesOf(size));
    } catch (busy) {
      this.#waitingHeld.released(heldBytesOf(size));
      // The server holds as much as it may of what clients sent: this one is answered, not kept.
      this.#refuseMessage(busy as ApiError);
      return;
    }
    this.#waitingBytes += size;
    this.#pauseIfOver();
    const bytes = message.isBinary ? undefined : bytesOf(message.data);
    if (bytes !== undefined && bytes.length >= OFF_LOOP_JSON_BYTES) {
      this.#messagesReading += 1;
      const parsed = parseOffLoop(bytes, this.#bounds).then((value): ParsedMessage => ({ value }), faultOf);
      this.#inTurn(async () => {
        const read = await parsed;
        this.#messagesReading -= 1;
        this.#take(read, size);
      });
      return;
    }
    const read = parseMessageOnLoop(bytes, this.#bounds);
    // Behind a message still being parsed, it waits for it.
    if (this.#messagesReading > 0) this.#inTurn(async () => this.#take(read, size));
    else this.#take(read, size);
  }

  /** Runs `step` after the messages before it have been taken; a step that fails does not hold up the next. */
  #inTurn(step: () => Promise<void>): void {
    this.#reading = this.#reading.then(step).catch((error: unknown) => this.#upgrade.log.error({ err: error }, 'a WebSocket message could not be taken'));
  }

  /**
   * What the socket holds is past its bounds: too many messages waiting, or too many of their
   * bytes, or answers the client has not read yet (a client that sends and never reads would
   * otherwise have its answers pile up in the server's memory).
   */
  #overBounds(): boolean {
    return this.#waiting.length + this.#messagesReading > MAX_WAITING_MESSAGES || this.#waitingBytes > this.#deps.bodyLimitBytes || this.#raw.writableNeedDrain;
  }

  /** Reads the socket no more while what it holds is past its bounds: what the client sends meanwhile waits in its connection. */
  #pauseIfOver(): void {
    if (this.#overBounds() && !this.#socket.isPaused) {
      this.#socket.pause();
      this.#pastBound = 0;
    }
  }

  /**
   * More messages came than one read of a client that waits for its answers brings: the client
   * is told, and the socket closed, what else it sent dropped unread.
   */
  #flood(): void {
    this.#flooded = true;
    const error = new ApiError(
      'too_many_queued_messages',
      `More than ${MAX_MESSAGES_PAST_BOUND} messages came on this socket while ${MAX_WAITING_MESSAGES} requests (or PTC_BODY_LIMIT_BYTES of them) already waited, or its answers were left unread: the socket is closed. Send requests as their answers come.`,
    );
    this.#refuse({ error, closeCode: 1008 });
  }

  /** A message taken off the socket's queue (served, or a steer answered): no longer held. */
  #letGo(size: number): void {
    this.#waitingBytes -= size;
    this.#waitingHeld.released(heldBytesOf(size));
  }

  /** A message not kept, the server holding as much as it may: answered with an error event (its socket stays open), and journaled. */
  #refuseMessage(error: ApiError): void {
    this.#send(socketErrorEvent(error));
    this.#deps.recordSocketMessage({ requestId: newId('req'), path: RESPONSES_SOCKET_PATH, status: error.status, durationMs: 0, ...errorJournal(error) });
  }

  /** Reads the socket again once what it holds is back under its bounds. */
  #resumeIfUnder(): void {
    // A socket closing (refused, going away) is read only as its closing needs.
    if (this.#socket.isPaused && this.#open() && !this.#overBounds()) {
      this.#socket.resume();
    }
  }

  /** A parsed message, in its turn: a steer answered at once, a request queued to be served. */
  #take(parsed: ParsedMessage, size: number): void {
    // Gone: what it had sent is dropped (the close cleared the counts).
    if (!this.#open()) return;
    let read: Extract<Waiting, { kind: 'request' }>['read'];
    try {
      read = { event: this.#eventOf(parsed) };
    } catch (error) {
      read = { error };
    }
    // A steer is answered as it arrives, even while a response's events are being sent: it names
    // the response it steers and changes what follows that response, not the order of requests.
    if ('event' in read && read.event.type === 'response.steer') {
      this.#letGo(size);
      this.#steer(read.event);
      // No request follows it to resume the socket when served.
      if (!this.#serving) this.#resumeIfUnder();
      return;
    }
    this.#waiting.push({ kind: 'request', read, size });
    // Below the bound the socket is still read while a request is served, so that a client
    // closing it is seen at once (and what it had queued dropped) rather than after its turns.
    this.#pauseIfOver();
    void this.#serveWaiting();
  }

  async #serveWaiting(): Promise<void> {
    if (this.#serving) return;
    this.#serving = true;
    try {
      while (this.#waiting.length > 0 && this.#open()) {
        const next = this.#waiting.shift()!;
        if (next.kind === 'request') this.#letGo(next.size);
        // Read again only once what waits is under its bounds: one read can bring thousands of
        // short messages, and reading on after each one served would queue them without end.
        if (this.#socket.isPaused) {
          this.#resumeIfUnder();
          if (!this.#socket.isPaused) {
            // What the client sent while the socket was not read (a close, say) is read before the
            // next turn starts.
            await setImmediate();
            if (!this.#open()) break;
          }
        }
        // Answers the client has not read wait for it before the next is made.
        if (this.#raw.writableNeedDrain) {
          await new Promise<void>((resolve) => {
            const done = (): void => {
              this.#raw.off('drain', done);
              this.#raw.off('close', done);
              resolve();
            };
            this.#raw.on('drain', done);
            this.#raw.on('close', done);
          });
          if (!this.#open()) break;
        }
        await this.#serve(next);
      }
    } finally {
      this.#serving = false;
    }
    if (this.#open() && (this.#shuttingDown || this.#deps.draining())) this.#goAway();
  }

  /**
   * A message that took too long to arrive, or too many bytes while many arrive: the rest of it is
   * not read (it waits in the client's connection, not in the server's memory), the client is
   * told why, and the socket closed. Journaled as the request it would have been.
   */
  #refuse({ error, closeCode }: SocketRefusal): void {
    this.#socket.pause();
    this.#refuseMessage(error);
    if (this.#socket.readyState !== this.#socket.OPEN) return;
    this.#socket.close(closeCode, closeCode === 1013 ? 'The server is busy: retry shortly.' : 'A message did not arrive whole in time.');
    // Not read any more, the client's answer to the close frame is not seen: the socket is ended after a grace.
    const timer = setTimeout(() => this.#socket.terminate(), CLOSE_GRACE_MS);
    timer.unref();
    this.#socket.once('close', () => clearTimeout(timer));
  }

  #goAway(): void {
    if (this.#socket.readyState === this.#socket.CLOSED) return;
    // Read again, or the client's answer to the close frame would never be seen.
    this.#socket.resume();
    this.#socket.close(1001, 'The server is shutting down.');
    // A client that never answers the close frame does not hold the shutdown up.
    const timer = setTimeout(() => this.#socket.terminate(), CLOSE_GRACE_MS);
    timer.unref();
    this.#socket.once('close', () => clearTimeout(timer));
  }

  /** A `response.steer`: its events sent at once (accepted, pending, or failed), and journaled. */
  #steer(event: Record<string, unknown>): void {
    const started = performance.now();
    const outcome = this.#steering.steer(event);
    for (const answer of outcome.events) this.#send(answer);
    const { refusal } = outcome;
    // Steered while its events are sent: the rest go out at once, so that what follows it comes sooner.
    const streaming = this.#streaming;
    if (!refusal && streaming && streaming.id === event.previous_response_id) streaming.hurry.abort();
    this.#deps.recordSocketMessage({
      requestId: newId('req'),
      path: RESPONSES_SOCKET_PATH,
      status: refusal ? (refusal.code === 'response_not_found' ? 404 : 400) : 200,
      durationMs: performance.now() - started,
      ...(refusal ? { error: { type: 'invalid_request_error', code: refusal.code, message: refusal.message, param: null } } : {}),
    });
  }

  #send(event: unknown): void {
    if (this.#open()) this.#socket.send(JSON.stringify(event));
  }

  /**
   * One request (a client's, or a steered response's automatic successor), answered with its
   * response's events or one error event, and journaled; then what steering follows the response.
   */
  async #serve(next: Waiting): Promise<void> {
    const requestId = newId('req');
    const started = performance.now();
    const log = this.#upgrade.log.child({ ws_request_id: requestId });
    let details: JournalDetails = {};
    let status = 200;
    let streamId: string | undefined;
    // The response this request continues, when steering input queued on it is put before its input.
    let continuing: string | undefined;
    let made = false;
    try {
      let body: CreateResponseRequest;
      let generate = true;
      if (next.kind === 'successor') {
        streamId = next.successor.lane;
        body = next.successor.body;
      } else {
        if ('error' in next.read) throw next.read.error;
        let { event } = next.read;
        streamId = laneOf(event);
        if (typeof event.previous_response_id === 'string') {
          continuing = event.previous_response_id;
          const steering = this.#steering.continuing(continuing);
          const own = inputItemsOf(event.input);
          // "The queued input is prepended in submission order to that request's input."
          if (steering.length > 0 && own) event = { ...event, input: [...steering, ...own] };
        }
        ({ body, generate } = this.#createOf(event));
      }
      details = requestJournal(body, true);
      if (this.#shuttingDown || this.#deps.draining()) {
        throw new ApiError('shutting_down', 'The server is shutting down and takes no new requests; retry on another instance or after it restarts.');
      }
      if (body.background) {
        throw new ApiError(
          'invalid_value',
          'background: true is not supported over WebSocket: send the request with POST /v1/responses, or leave background out.',
          'background',
        );
      }
      const retryCount = this.#failedAttempts;
      // A place among the turns allowed to run, or server_busy (429) now when too many wait.
      const place = this.#deps.gate.enter(turnPriority(body, retryCount));
      const request = responseRequest(this.#upgrade, body, { ...this.#settings, retryCount, generate }, log);
      const finished = await respond(request, body.store === false ? this.#respondWithHeld : this.#deps.respond, { place, abandoned: () => !this.#open() });
      if (!finished) {
        // The client left while the request waited for a place: its turn was not run.
        status = 499;
      } else {
        made = true;
        if (continuing !== undefined) this.#steering.continued(continuing, true);
        this.#failedAttempts = 0;
        this.#latest = body.store === false ? this.#held(finished) : undefined;
        details = { ...details, ...finishedJournal(body, finished) };
        // From its response.created on, the response may be steered (the client learns its id there).
        this.#steering.streaming(body, streamId, finished.response);
        const streaming = { id: finished.response.id, hurry: new AbortController() };
        this.#streaming = streaming;
        try {
          if (this.#open()) {
            const events = responseEvents(finished.response, deltaChunks);
            details = { ...details, stream_report: await sendSocketEvents(this.#socket, events, finished.knobs, streamId, streaming.hurry.signal) };
          }
        } finally {
          this.#streaming = undefined;
        }
        const after = this.#steering.streamed(finished.response.id);
        for (const event of after.events) this.#send(event);
        if (after.successor) {
          this.#waiting.unshift({ kind: 'successor', successor: after.successor, size: 0 });
        }
      }
    } catch (error) {
      const apiError = answerableError(error as Error, this.#deps.bodyLimitBytes, { id: requestId, log });
      if (apiError.code === 'simulated_error') this.#failedAttempts += 1;
      status = apiError.status;
      details = { ...details, ...errorJournal(apiError) };
      // A successor that could not be made returns the input it was to commit; a request is answered with an error event.
      if (next.kind === 'successor') for (const event of this.#steering.successorFailed(next.successor, apiError.message)) this.#send(event);
      else this.#send({ ...socketErrorEvent(apiError), ...(streamId === undefined ? {} : { stream_id: streamId }) });
    } finally {
      // A continuation not made leaves the steering input queued for the next one.
      if (continuing !== undefined && !made) this.#steering.continued(continuing, false);
    }
    this.#deps.recordSocketMessage({ requestId, path: RESPONSES_SOCKET_PATH, status, durationMs: performance.now() - started, ...details });
  }

  /**
   * A `store: false` response as the socket holds it, or undefined when its conversation is more
   * than one request could carry (PTC_MAX_INPUT_ITEMS items, PTC_BODY_LIMIT_BYTES of JSON): what
   * the client could have resent instead is all a socket keeps, so its memory stays bounded.
   */
  #held(finished: RespondedInPlace): StoredResponse | undefined {
    const { response, context } = finished;
    if (context.length + response.output.length > this.#deps.maxInputItems) return undefined;
    // Its own previous_response_id is left out: the conversation it continued is in its items.
    const held: StoredResponse = { response: { ...response, previous_response_id: null }, inputItems: context };
    return JSON.stringify(held).length > this.#deps.bodyLimitBytes ? undefined : held;
  }

  /** A parsed message as a client event: a JSON object with a `type`, refused as a body would be. */
  #eventOf(parsed: ParsedMessage): Record<string, unknown> {
    if ('refused' in parsed) throw parsed.refused;
    if ('fault' in parsed) {
      switch (parsed.fault) {
        case 'binary':
          throw new ApiError('invalid_json', 'A client event must be a text message holding a JSON object; this message was binary.');
        case 'empty':
          throw new ApiError('invalid_json', 'The message is empty; send a JSON object.');
        case 'too_deep':
          throw new ApiError('invalid_json', `The message nests deeper than ${MAX_JSON_DEPTH} levels.`);
        case 'syntax':
          throw new ApiError('invalid_json', 'We could not parse the JSON of your message (a `__proto__` or `constructor.prototype` key is refused too).');
      }
    }
    const event = parsed.value;
    if (typeof event !== 'object' || event === null || Array.isArray(event)) {
      throw new ApiError(
        'invalid_json',
        `A client event must be a JSON object with a \`type\`; this message holds ${Array.isArray(event) ? 'an array' : event === null ? 'null' : `a ${typeof event}`}.`,
      );
    }
    const { type } = event as Record<string, unknown>;
    if (type !== 'response.create' && type !== 'response.steer') {
      throw new ApiError(
        'invalid_value',
        `Invalid value for 'type': ${JSON.stringify(type) ?? 'none'}. The client events a socket takes are 'response.create' and 'response.steer'.`,
        'type',
      );
    }
    return event as Record<string, unknown>;
  }

  /**
   * A `response.create` event as the body of a POST /v1/responses, checked as that body would be,
   * and whether it generates output (`generate: false` prepares a response a later turn continues).
   */
  #createOf(event: Record<string, unknown>): { body: CreateResponseRequest; generate: boolean } {
    const { type: _type, stream_id: _lane, generate, ...body } = event;
    if (generate !== undefined && typeof generate !== 'boolean') {
      throw new ApiError('invalid_type', `Invalid type for 'generate': expected a boolean, but got ${describeType(generate)}.`, 'generate');
    }
    // What the SDK types besides the body: `stream` is implied over a socket (its value changes
    // nothing: the events are always sent), and stays accepted as the body schema accepts it.
    // With store: false the socket holds what it prepared, as it holds any response, for the next turn on it.
    return { body: createBodyOf(body), generate: generate !== false };
  }
}
