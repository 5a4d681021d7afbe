import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { SessionEvent, SessionEventBody } from '../../../schemas/agents.ts';
import { newId } from '../../platform/ids.ts';
import type { SessionEventDelivery, SessionEventLog } from '../../platform/stores/session-event-log.ts';
import { FIXED_LIMITS } from '../../../schemas/fixed-limits.ts';

/** Event streams of agent sessions open at once; one more is answered 429 `too_many_event_streams`. */
export const MAX_SESSION_EVENT_STREAMS = FIXED_LIMITS.agentEventStreams.value;

/** Event streams open at once on one session: a client that opens and forgets them fills its session's share, not the server's. */
export const MAX_STREAMS_PER_SESSION = FIXED_LIMITS.agentEventStreamsPerSession.value;

/** A comment line every so often keeps proxies from closing an idle stream (the SDK skips comments). */
const HEARTBEAT_MS = 15_000;

/** Told of every event the harness publishes in this process, once, whatever streams are open. */
export type SessionEventObserver = (sessionId: string, events: readonly SessionEvent[]) => void;

type Deliver = (delivery: SessionEventDelivery) => void;

/** A stream started on its connection. */
export interface SessionEventStream {
  /** Ends it (the connection closes once what was written is sent). */
  end(): void;
  /** Writes events to this stream alone (not published: no other stream sees them). */
  write(bodies: readonly SessionEventBody[]): void;
}

/** A stream with its place taken and its session followed: what is published from now on reaches it. */
export interface OpenedEventStream {
  /**
   * Writes the session's events to `raw` as Server-Sent Events, those published since it was
   * opened first, until `until` says an event was the last (then the stream ends), the client
   * leaves, or it is ended. The headers go out at once: the SDK's helper waits for them before
   * it sends the message that starts the turn.
   */
  start(raw: ServerResponse, headers: Record<string, string>, until?: (event: SessionEvent) => boolean): SessionEventStream;
}

/** One event stream: opened (its place taken, its session followed), then started on its connection. */
class EventStream implements OpenedEventStream {
  #ended = false;
  #raw: ServerResponse | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #until: (event: SessionEvent) => boolean = () => false;
  #stopFollowing: () => void = () => {};
  /** What arrived between opening and starting. */
  readonly #early: SessionEventDelivery[] = [];
  readonly #forget: () => void;

  constructor(forget: () => void) {
    this.#forget = forget;
  }

  /** Following began; `stop` ends it. */
  following(stop: () => void): void {
    if (this.#ended) stop();
    else this.#stopFollowing = stop;
  }

  readonly deliver: Deliver = (delivery) => {
    if (this.#ended) return;
    if (this.#raw) this.#send(delivery);
    else this.#early.push(delivery);
  };

  start(raw: ServerResponse, headers: Record<string, string>, until: (event: SessionEvent) => boolean = () => false): SessionEventStream {
    const handle: SessionEventStream = {
      end: () => this.end(),
      write: (bodies) => this.#send({ events: bodies.map((body): SessionEvent => ({ event_id: newId('event'), ...body })), gap: false, end: false }),
    };
    this.#raw = raw;
    this.#until = until;
    // Ended while it was opened (the server closing), or the client gone meanwhile.
    if (this.#ended || raw.destroyed) {
      this.end();
      raw.destroy();
      return handle;
    }
    raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'close', ...headers });
    raw.write(': agent session events\n\n');
    this.#heartbeat = setInterval(() => raw.write(': keep-alive\n\n'), HEARTBEAT_MS);
    this.#heartbeat.unref();
    raw.on('close', () => this.end());
    for (const delivery of this.#early.splice(0)) this.#send(delivery);
    return handle;
  }

  /** Ends the stream; `drop`: the connection too (the server closing: close() would wait on it). */
  end(drop = false): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#forget();
    clearInterval(this.#heartbeat);
    this.#early.length = 0;
    this.#stopFollowing();
    const raw = this.#raw;
    if (!raw) return;
    if (!raw.writableEnded) raw.end();
    if (drop) raw.destroy();
  }

  #send(delivery: SessionEventDelivery): void {
    if (this.#ended || !this.#raw) return;
    const raw = this.#raw;
    if (delivery.gap) {
      // It may have missed events (Redis failed, or this instance fell behind): it ends rather
      // than go on with a hole, and the client reads the session to see where it is.
      this.end();
      return;
    }
    if (raw.writableLength > FIXED_LIMITS.eventStreamBufferBytes.value) {
      // A client that reads nothing: drop it rather than hold what it does not read.
      this.end(true);
      return;
    }
    let text = '';
    let last = delivery.end;
    for (const event of delivery.events as readonly SessionEvent[]) {
      text += `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
      if (this.#until(event)) {
        last = true;
        break;
      }
    }
    if (text !== '') raw.write(text);
    if (last) this.end();
  }
}

export interface SessionEventHubOptions {
  /**
   * Where events go between instances (the store's: Redis). Absent: to the streams open in this
   * process, at once (one process owns the store).
   */
  readonly log?: SessionEventLog;
  readonly logger: FastifyBaseLogger;
}

/**
 * The live events of agent sessions: what the harness publishes goes to every stream open on
 * the session from then on (`GET …/events` delivers from the moment it opens, as the SDK's
 * `sessions.stream()` expects: it follows the first turn it sees created), on this instance
 * and, through the store's log, on every instance sharing the store, in one order and with the
 * same `event_id`s everywhere. Observers hear each publish once, on the instance that made it.
 */
export class SessionEventHub {
  readonly #log: SessionEventLog | undefined;
  readonly #logger: FastifyBaseLogger;
  /** Without a log: the streams of each session, handed what is published. */
  readonly #listeners = new Map<string, Set<Deliver>>();
  readonly #observers = new Set<SessionEventObserver>();
  /** Every stream opened and not ended, with its session (the limits count them). */
  readonly #open = new Map<EventStream, string>();

  constructor(options: SessionEventHubOptions) {
    this.#log = options.log;
    this.#logger = options.logger;
    this.#log?.onTrouble((message, error) => (error === undefined ? this.#logger.warn(message) : this.#logger.warn({ err: error }, message)));
  }

  /**
   * Gives each event its `event_id`, tells the observers, and sends them, in order, to every
   * stream of the session (through the log when there is one: never waiting on it).
   */
  publish(sessionId: string, bodies: readonly SessionEventBody[]): void {
    if (bodies.length === 0) return;
    const events = bodies.map((body): SessionEvent => ({ event_id: newId('event'), ...body }));
    for (const observer of [...this.#observers]) {
      try {
        observer(sessionId, events);
      } catch (error) {
        this.#logger.error({ err: error, session: sessionId }, 'an observer of agent session events failed');
      }
    }
    if (this.#log) this.#log.append(sessionId, events);
    else this.#hand(sessionId, { events, gap: false, end: false });
  }

  /**
   * Calls `observer` once for each publish in this process, before the events reach any
   * stream (and whether or not one is open, here or elsewhere). Returns what stops it.
   */
  observe(observer: SessionEventObserver): () => void {
    this.#observers.add(observer);
    return () => this.#observers.delete(observer);
  }

  /** Ends the streams of one session, on every instance, after what was published before (deleted: nothing more will happen in it). */
  endSession(sessionId: string): void {
    if (this.#log) this.#log.end(sessionId);
    else this.#hand(sessionId, { events: [], gap: false, end: true });
  }

  get streams(): number {
    return this.#open.size;
  }

  /** The streams open on one session. */
  streamsOf(sessionId: string): number {
    let count = 0;
    for (const id of this.#open.values()) if (id === sessionId) count += 1;
    return count;
  }

  /**
   * Ends every open stream and drops its connection (the server is closing: close() would wait
   * on them, and on a client that keeps an ended stream's connection open).
   */
  endAll(): void {
    for (const stream of [...this.#open.keys()]) stream.end(true);
  }

  /**
   * Opens a stream of the session: its place is taken at once (check the limits just before),
   * then the session is followed; rejects (StoreUnavailableError) when the log cannot be read.
   * Start it on its connection as soon as this resolves.
   */
  async open(sessionId: string): Promise<OpenedEventStream> {
    const stream: EventStream = new EventStream(() => this.#open.delete(stream));
    this.#open.set(stream, sessionId);
    try {
      stream.following(this.#log ? await this.#log.follow(sessionId, stream.deliver) : this.#listen(sessionId, stream.deliver));
    } catch (error) {
      stream.end();
      throw error;
    }
    return stream;
  }

  #listen(sessionId: string, deliver: Deliver): () => void {
    let listeners = this.#listeners.get(sessionId);
    if (!listeners) this.#listeners.set(sessionId, (listeners = new Set()));
    listeners.add(deliver);
    return () => {
      listeners.delete(deliver);
      if (listeners.size === 0 && this.#listeners.get(sessionId) === listeners) this.#listeners.delete(sessionId);
    };
  }

  #hand(sessionId: string, delivery: SessionEventDelivery): void {
    const listeners = this.#listeners.get(sessionId);
    if (!listeners) return;
    for (const deliver of [...listeners]) deliver(delivery);
  }
}
