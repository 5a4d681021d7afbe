import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { FIXED_LIMITS } from '../../../schemas/fixed-limits.ts';
import type { RedisRun } from './redis-conversations.ts';
import type { SessionEventDelivery, SessionEventLog } from './session-event-log.ts';

/** Appends a session's log keeps (approximately: MAXLEN ~). */
const MAX_ENTRIES = FIXED_LIMITS.agentEventLogEntries.value;
/** How long a session's log stays after its last append. */
const TTL_MS = FIXED_LIMITS.agentEventLogSeconds.value * 1000;
/** After its end, a session's log stays only as long as its followers need to read it. */
const ENDED_TTL_MS = 60_000;

/**
 * A blocked read returns this often with nothing (and is issued again): the client's timeout
 * on it (the grace beyond) tells a dead connection from a quiet one.
 */
const BLOCK_MS = 10_000;
const BLOCK_GRACE_MS = 5_000;
/** Entries one read takes of each session at most; the next read takes the rest. */
const READ_COUNT = 64;
/** Between failed reads (Redis down), and between attempts to append the marks of lost appends. */
const RETRY_MS = 1_000;
/** The reader's wake-up stream lives this long after its last wake-up. */
const WAKE_TTL_MS = 60_000;

/**
 * Appends sent and not yet answered, in number and bytes: past either, an append is dropped (a
 * gap for the session's followers) rather than the queue grown while Redis is slow.
 */
const MAX_PENDING_APPENDS = 1_024;
const MAX_PENDING_BYTES = 64 * 1024 * 1024;
/** Sessions whose lost appends are still to be marked in Redis; past it the oldest is forgotten. */
const MAX_LOST_SESSIONS = 4_096;

// KEYS[1]: the session's log; ARGV: max entries, TTL ms, gap ('1'/'0'), end ('1'/'0'), events
// (JSON). Each entry names the entry before it (p: '' when the log was empty or gone), so that
// a reader knows whether it read every entry since its cursor: one step, so no other append
// comes between the read of the last entry and the new one.
const APPEND_SCRIPT = `
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local prev = ''
if #last > 0 then prev = last[1][1] end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'p', prev, 'g', ARGV[3], 'x', ARGV[4], 'e', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return id`;

// KEYS[1]: a reader's wake-up stream; ARGV[1]: its TTL in ms.
const WAKE_SCRIPT = `
redis.call('XADD', KEYS[1], 'MAXLEN', '1', '*', 'w', '1')
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`;

interface Follower {
  readonly deliver: (delivery: SessionEventDelivery) => void;
  /** The log's last entry when it began following: it is handed the entries after. */
  readonly from: string;
}

/** A session this instance follows: where its reader is in the session's log, and who follows. */
interface Followed {
  readonly sessionId: string;
  readonly key: string;
  /** The last entry read ('0-0': the log was empty when following began). */
  cursor: string;
  /** Reads failed since the last entry read: an entry naming no entry before it may follow a gap. */
  interrupted: boolean;
  readonly followers: Set<Follower>;
}

type StreamEntry = [id: string, fields: string[]];

/** Compares two stream entry ids (`<ms>-<seq>`) as Redis orders them. */
function compareIds(a: string, b: string): number {
  const [aMs = 0n, aSeq = 0n] = a.split('-').map(BigInt);
  const [bMs = 0n, bSeq = 0n] = b.split('-').map(BigInt);
  return aMs !== bMs ? (aMs < bMs ? -1 : 1) : aSeq === bSeq ? 0 : aSeq < bSeq ? -1 : 1;
}

function fieldsOf(fields: readonly string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) map.set(fields[i]!, fields[i + 1]!);
  return map;
}

/**
 * Agent session events in Redis Streams, one stream per session at
 * `<prefix>session-events:<session id>` (at most MAX_ENTRIES entries, each the events of one
 * append; expiring TTL_MS after the last). Appends go out on the store's connection, in call
 * order, without waiting; one reader per instance follows the sessions its streams watch with
 * XREAD BLOCK on a connection of its own, woken through its own stream
 * (`<prefix>session-events-wake:<random id>`) when it must follow one more session. Every
 * instance, the appending one too, hands its followers what it reads, so all see one order.
 *
 * A failure never throws at the caller: an append that fails reaches this instance's followers
 * of the session as a gap at once and is marked in the session's log (an entry with `g` set)
 * once Redis answers, for the other instances' followers; reads that fail are retried every
 * RETRY_MS, and the followers resume where they were, unless what they would read shows a gap.
 */
export class RedisSessionEventLog implements SessionEventLog {
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #run: RedisRun;
  readonly #wakeKey: string;
  readonly #followed = new Map<string, Followed>();
  /** Sessions an append of which failed, whose logs are still to be marked. */
  readonly #lost = new Set<string>();
  #reader: Redis | undefined;
  #reading: Promise<void> | undefined;
  /** Resolves the reader's wait while it follows nothing. */
  #idle: (() => void) | undefined;
  readonly #stopped = new AbortController();
  #markTimer: NodeJS.Timeout | undefined;
  #pendingAppends = 0;
  #pendingBytes = 0;
  #trouble: (message: string, error?: unknown) => void = () => {};
  #closed = false;

  constructor(client: Redis, prefix: string, run: RedisRun) {
    this.#client = client;
    this.#prefix = prefix;
    this.#run = run;
    this.#wakeKey = `${prefix}session-events-wake:${randomUUID()}`;
  }

  onTrouble(listener: (message: string, error?: unknown) => void): void {
    this.#trouble = listener;
  }

  append(sessionId: string, events: readonly unknown[]): void {
    this.#append(sessionId, JSON.stringify(events), false);
  }

  end(sessionId: string): void {
    this.#append(sessionId, '[]', true);
  }

  async follow(sessionId: string, deliver: (delivery: SessionEventDelivery) => void): Promise<() => void> {
    if (this.#closed) throw new Error('the session event log is closed');
    const key = this.#key(sessionId);
    const last = await this.#run(`read of the event log of session ${sessionId}`, () => this.#client.xrevrange(key, '+', '-', 'COUNT', 1));
    const follower: Follower = { deliver, from: last[0]?.[0] ?? '0-0' };
    let followed = this.#followed.get(sessionId);
    if (!followed) {
      followed = { sessionId, key, cursor: follower.from, interrupted: false, followers: new Set() };
      this.#followed.set(sessionId, followed);
      this.#startReading();
    }
    followed.followers.add(follower);
    const session = followed;
    return () => {
      session.followers.delete(follower);
      if (session.followers.size === 0 && this.#followed.get(sessionId) === session) this.#followed.delete(sessionId);
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#markTimer);
    this.#stopped.abort();
    this.#idle?.();
    // A blocked read holds its connection: drop it (QUIT would wait behind the read).
    this.#reader?.disconnect();
    await this.#reading;
    this.#followed.clear();
  }

  #key(sessionId: string): string {
    return `${this.#prefix}session-events:${sessionId}`;
  }

  #append(sessionId: string, json: string, end: boolean): void {
    if (this.#closed) return;
    const gap = this.#lost.delete(sessionId);
    const bytes = Buffer.byteLength(json);
    if (this.#pendingAppends >= MAX_PENDING_APPENDS || this.#pendingBytes + bytes > MAX_PENDING_BYTES) {
      this.#lose(sessionId, new Error(`${this.#pendingAppends} appends (${this.#pendingBytes} bytes) are waiting on Redis already`), !gap);
      return;
    }
    this.#pendingAppends += 1;
    this.#pendingBytes += bytes;
    const ttl = end ? Math.min(ENDED_TTL_MS, TTL_MS) : TTL_MS;
    // Sent now, before this returns: appends leave in call order on the store's one connection.
    void this.#run(`append to the event log of session ${sessionId}`, () =>
      this.#client.eval(APPEND_SCRIPT, 1, this.#key(sessionId), MAX_ENTRIES, ttl, gap ? '1' : '0', end ? '1' : '0', json),
    )
      .catch((error: unknown) => this.#lose(sessionId, error, !gap))
      .finally(() => {
        this.#pendingAppends -= 1;
        this.#pendingBytes -= bytes;
      });
  }

  /**
   * An append of the session was lost: its followers here are told at once, and its log is
   * marked once Redis answers. `first`: not a retry of a mark (which is neither told nor reported again).
   */
  #lose(sessionId: string, error: unknown, first: boolean): void {
    if (this.#closed) return;
    this.#lost.add(sessionId);
    if (this.#lost.size > MAX_LOST_SESSIONS) this.#lost.delete(this.#lost.values().next().value!);
    if (first) {
      const message = error instanceof Error ? error.message : String(error);
      this.#trouble(`events of agent session ${sessionId} could not be appended to Redis (${message}): its event streams end`, error);
      this.#hand(this.#followed.get(sessionId), undefined, { events: [], gap: true, end: false });
    }
    if (this.#markTimer === undefined) {
      this.#markTimer = setTimeout(() => {
        this.#markTimer = undefined;
        // An append with nothing in it: it carries the mark (see #append).
        for (const lost of [...this.#lost]) this.#append(lost, '[]', false);
      }, RETRY_MS);
      this.#markTimer.unref();
    }
  }

  /** Hands a delivery to the session's followers that began following before entry `id` (all: no id). */
  #hand(followed: Followed | undefined, id: string | undefined, delivery: SessionEventDelivery): void {
    if (!followed) return;
    for (const follower of [...followed.followers]) {
      if (id !== undefined && compareIds(id, follower.from) <= 0) continue;
      try {
        follower.deliver(delivery);
      } catch (error) {
        this.#trouble(`a follower of agent session ${followed.sessionId}'s events failed`, error);
      }
    }
  }

  #startReading(): void {
    if (this.#closed) return;
    if (this.#reading) {
      if (this.#idle) {
        this.#idle();
        return;
      }
      // The read under way follows the sessions it was issued with: wake it for this one.
      void this.#run('wake-up of the event reader', () => this.#client.eval(WAKE_SCRIPT, 1, this.#wakeKey, WAKE_TTL_MS)).catch(() => {
        // The reader's next read (after its own failure, Redis being down) takes the session in.
      });
      return;
    }
    // Its own connection: XREAD BLOCK holds the connection it runs on. No command timeout but
    // the blocking one (BLOCK_MS and a grace): a quiet read is not a dead connection.
    this.#reader = this.#client.duplicate({ commandTimeout: undefined, blockingTimeout: BLOCK_MS, blockingTimeoutGrace: BLOCK_GRACE_MS });
    // Its failures reach the loop through its rejected reads.
    this.#reader.on('error', () => {});
    this.#reading = this.#readLoop(this.#reader);
  }

  async #readLoop(reader: Redis): Promise<void> {
    let wakeCursor: string | undefined;
    let failing = false;
    while (!this.#closed) {
      if (this.#followed.size === 0) {
        await new Promise<void>((resolve) => {
          this.#idle = resolve;
        });
        this.#idle = undefined;
        continue;
      }
      try {
        // The wake-up stream from its last entry now: a wake-up sent after this is seen.
        wakeCursor ??= (await reader.xrevrange(this.#wakeKey, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0';
        // Taken after the cursor is known: a session followed after this sends a wake-up the read sees.
        const sessions = new Map([...this.#followed.values()].map((followed) => [followed.key, followed]));
        const keys = [...sessions.keys()];
        const cursors = [...sessions.values()].map((followed) => followed.cursor);
        const reply = (await reader.xread('COUNT', READ_COUNT, 'BLOCK', BLOCK_MS, 'STREAMS', this.#wakeKey, ...keys, wakeCursor, ...cursors)) as
          | [key: string, entries: StreamEntry[]][]
          | null;
        if (failing) {
          failing = false;
          this.#trouble('reads of agent session events from Redis work again: the event streams resume');
        }
        for (const [key, entries] of reply ?? []) {
          if (key === this.#wakeKey) {
            wakeCursor = entries.at(-1)?.[0] ?? wakeCursor;
            continue;
          }
          const followed = sessions.get(key);
          // Followed no more, or again since (from a new cursor): not this read's to hand.
          if (!followed || this.#followed.get(followed.sessionId) !== followed) continue;
          for (const [id, fields] of entries) this.#take(followed, id, fields);
        }
      } catch (error) {
        if (this.#closed) break;
        for (const followed of this.#followed.values()) followed.interrupted = true;
        if (!failing) {
          failing = true;
          const message = error instanceof Error ? error.message : String(error);
          this.#trouble(`reads of agent session events from Redis failed (${message}): the event streams wait, retried every ${RETRY_MS} ms`, error);
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, RETRY_MS);
          this.#stopped.signal.addEventListener(
            'abort',
            () => {
              clearTimeout(timer);
              resolve();
            },
            { once: true },
          );
        });
      }
    }
  }

  /** One entry of a followed session's log, handed to its followers. */
  #take(followed: Followed, id: string, fields: readonly string[]): void {
    const entry = fieldsOf(fields);
    const previous = entry.get('p') ?? '';
    // Every entry since the cursor was read when this one names the cursor's; one naming none
    // began the log again after it expired, which only an interrupted reader may have missed entries of.
    const expected = followed.cursor === '0-0' ? '' : followed.cursor;
    const chained = previous === expected || (previous === '' && !followed.interrupted);
    if (chained) followed.interrupted = false;
    followed.cursor = id;
    let events: unknown[] = [];
    let readable = true;
    try {
      const parsed: unknown = JSON.parse(entry.get('e') ?? '[]');
      if (Array.isArray(parsed)) events = parsed;
      else readable = false;
    } catch {
      readable = false;
    }
    this.#hand(followed, id, { events, gap: !chained || !readable || entry.get('g') === '1', end: entry.get('x') === '1' });
  }
}
