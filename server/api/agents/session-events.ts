import type { ServerResponse } from 'node:http';
import type { SessionEvent, SessionEventBody } from '../../../schemas/agents.ts';
import { newId } from '../../platform/ids.ts';
import { FIXED_LIMITS } from '../../../schemas/fixed-limits.ts';

/** Event streams of agent sessions open at once; one more is answered 429 `too_many_event_streams`. */
export const MAX_SESSION_EVENT_STREAMS = FIXED_LIMITS.agentEventStreams.value;

/** Event streams open at once on one session: a client that opens and forgets them fills its session's share, not the server's. */
export const MAX_STREAMS_PER_SESSION = FIXED_LIMITS.agentEventStreamsPerSession.value;

/** A comment line every so often keeps proxies from closing an idle stream (the SDK skips comments). */
const HEARTBEAT_MS = 15_000;

type Listener = (events: readonly SessionEvent[]) => void;

/**
 * The live events of agent sessions, in this process: what the harness publishes goes to every
 * stream open on the session at that moment (`GET …/events` delivers from the moment it opens,
 * as the SDK's `sessions.stream()` expects: it follows the first turn it sees created).
 */
export class SessionEventHub {
  readonly #listeners = new Map<string, Set<Listener>>();
  readonly #open = new Map<(drop?: boolean) => void, string>();

  readonly #observers: ((sessionId: string, events: readonly SessionEvent[]) => void)[] = [];

  /** Gives each event its `event_id` and sends them, in order, to the session's listeners and to every observer. */
  publish(sessionId: string, bodies: readonly SessionEventBody[]): void {
    if (bodies.length === 0) return;
    const listeners = this.#listeners.get(sessionId);
    if (!listeners && this.#observers.length === 0) return;
    const events = bodies.map((body): SessionEvent => ({ event_id: newId('event'), ...body }));
    for (const observer of this.#observers) observer(sessionId, events);
    for (const listener of [...(listeners ?? [])]) listener(events);
  }

  /** Calls `observer` with the events of every session this process publishes, once each (what webhooks are sent from). */
  observe(observer: (sessionId: string, events: readonly SessionEvent[]) => void): void {
    this.#observers.push(observer);
  }

  subscribe(sessionId: string, listener: Listener): () => void {
    let listeners = this.#listeners.get(sessionId);
    if (!listeners) this.#listeners.set(sessionId, (listeners = new Set()));
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0) this.#listeners.delete(sessionId);
    };
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
    for (const end of [...this.#open.keys()]) end(true);
  }

  /** Ends the streams of one session (deleted: nothing more will happen in it). */
  endSession(sessionId: string): void {
    for (const [end, id] of [...this.#open]) if (id === sessionId) end();
  }

  /**
   * Writes a session's events to `raw` as Server-Sent Events from now on, until `until` says an
   * event was the last (then the stream ends), the client leaves, or `end()` is called (the
   * server closing). The headers go out at once: the SDK's helper waits for them before it sends
   * the message that starts the turn.
   */
  stream(
    sessionId: string,
    raw: ServerResponse,
    headers: Record<string, string>,
    until: (event: SessionEvent) => boolean = () => false,
  ): { end: () => void; write: (bodies: readonly SessionEventBody[]) => void } {
    raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'close', ...headers });
    raw.write(': agent session events\n\n');
    const heartbeat = setInterval(() => raw.write(': keep-alive\n\n'), HEARTBEAT_MS);
    heartbeat.unref();
    let ended = false;
    const end = (drop = false): void => {
      if (ended) return;
      ended = true;
      this.#open.delete(end);
      clearInterval(heartbeat);
      unsubscribe();
      if (!raw.writableEnded) raw.end();
      if (drop) raw.destroy();
    };
    const send = (events: readonly SessionEvent[]): void => {
      if (ended) return;
      if (raw.writableLength > FIXED_LIMITS.eventStreamBufferBytes.value) {
        // A client that reads nothing: drop it rather than hold what it does not read.
        end();
        raw.destroy();
        return;
      }
      let text = '';
      let last = false;
      for (const event of events) {
        text += `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
        if (until(event)) {
          last = true;
          break;
        }
      }
      raw.write(text);
      if (last) end();
    };
    const unsubscribe = this.subscribe(sessionId, send);
    this.#open.set(end, sessionId);
    raw.on('close', () => end());
    return { end: () => end(), write: (bodies) => send(bodies.map((body) => ({ event_id: newId('event'), ...body }))) };
  }
}
