import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { SessionEvent, SessionEventBody } from '../schemas/agents.ts';
import { SessionEventHub } from '../server/api/agents/session-events.ts';
import { RedisResponseStore } from '../server/platform/stores/redis-store.ts';
import type { SessionEventDelivery } from '../server/platform/stores/session-event-log.ts';
import { freeLoopbackPort, redisServerBinary, spawnRedisServer, startTestRedis } from './support/redis.ts';

// The Agents API's session events across instances (server/platform/stores/redis-session-events.ts
// and the hub over it, server/api/agents/session-events.ts): several stores on one real Redis
// stand for several instances. No timing is asserted: each test waits for what it expects.

const redis = await startTestRedis();
afterAll(() => redis?.stop());

const opened: RedisResponseStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
});

let places = 0;
/** A fresh key prefix: the instances of one test share it. */
const newPrefix = (): string => `${redis?.keyPrefix}${++places}:`;

function instance(prefix: string, url = redis!.url): RedisResponseStore {
  const store = new RedisResponseStore(url, { prefix });
  opened.push(store);
  return store;
}

/** Waits until `check` passes (generous: a loaded machine is slow, not wrong). */
async function until(check: () => boolean, what: string): Promise<void> {
  const giveUpAt = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > giveUpAt) throw new Error(`gave up waiting for ${what}`);
    await sleep(10);
  }
}

const eventsOf = (deliveries: readonly SessionEventDelivery[]): unknown[] => deliveries.flatMap((delivery) => delivery.events);

describe.skipIf(!redis)('the Redis session event log', () => {
  it("hands every instance's followers every append made after they began following, in one order", async () => {
    const prefix = newPrefix();
    const [a, b] = [instance(prefix), instance(prefix)];
    a.sessionEvents.append('sess_1', [{ n: 'before' }]);
    const onA: SessionEventDelivery[] = [];
    const onB: SessionEventDelivery[] = [];
    await a.sessionEvents.follow('sess_1', (delivery) => onA.push(delivery));
    await b.sessionEvents.follow('sess_1', (delivery) => onB.push(delivery));
    const onOther: SessionEventDelivery[] = [];
    await b.sessionEvents.follow('sess_2', (delivery) => onOther.push(delivery));
    // Interleaved from both instances, many at once (fewer than the log keeps: a reader further
    // behind would see a gap): each instance's appends keep their order.
    for (let i = 0; i < 60; i++) {
      a.sessionEvents.append('sess_1', [{ from: 'a', i }]);
      b.sessionEvents.append('sess_1', [
        { from: 'b', i },
        { from: 'b', i, second: true },
      ]);
    }
    a.sessionEvents.append('sess_2', [{ other: true }]);
    await until(() => eventsOf(onA).length === 180 && eventsOf(onB).length === 180, 'every event on both');
    expect(eventsOf(onA)).toEqual(eventsOf(onB));
    for (const from of ['a', 'b']) {
      const order = eventsOf(onA).filter((event) => (event as { from: string }).from === from && !(event as { second?: true }).second);
      expect(order.map((event) => (event as { i: number }).i)).toEqual([...Array(60).keys()]);
    }
    expect([...onA, ...onB].every((delivery) => !delivery.gap && !delivery.end)).toBe(true);
    await until(() => onOther.length === 1, 'the other session');
    expect(onOther[0]).toEqual({ events: [{ other: true }], gap: false, end: false });
  });

  it('a follower that begins later sees only what is appended after; stopping one leaves the others', async () => {
    const prefix = newPrefix();
    const [a, b] = [instance(prefix), instance(prefix)];
    const first: SessionEventDelivery[] = [];
    const stopFirst = await b.sessionEvents.follow('sess_1', (delivery) => first.push(delivery));
    a.sessionEvents.append('sess_1', [1]);
    await until(() => first.length === 1, 'the first append');
    const second: SessionEventDelivery[] = [];
    await b.sessionEvents.follow('sess_1', (delivery) => second.push(delivery));
    a.sessionEvents.append('sess_1', [2]);
    await until(() => second.length === 1 && first.length === 2, 'the second append on both');
    stopFirst();
    a.sessionEvents.append('sess_1', [3]);
    a.sessionEvents.end('sess_1');
    await until(() => second.length === 3, 'the third append and the end');
    expect(eventsOf(first)).toEqual([1, 2]);
    expect(second).toEqual([
      { events: [2], gap: false, end: false },
      { events: [3], gap: false, end: false },
      { events: [], gap: false, end: true },
    ]);
  });

  it('a reader further behind than the log keeps sees a gap, not a log with a hole', async () => {
    const prefix = newPrefix();
    const a = instance(prefix);
    const seen: SessionEventDelivery[] = [];
    await a.sessionEvents.follow('sess_1', (delivery) => seen.push(delivery));
    a.sessionEvents.append('sess_1', [0]);
    await until(() => seen.length === 1, 'the first append');
    // 300 appends as the log makes them, in one step no read comes between: the oldest are trimmed unread.
    const raw = new Redis(redis!.url);
    try {
      await raw.eval(
        `for i = 1, 300 do
           local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
           redis.call('XADD', KEYS[1], 'MAXLEN', '~', 128, '*', 'p', last[1][1], 'g', '0', 'x', '0', 'e', '[' .. i .. ']')
         end
         return 1`,
        1,
        `${prefix}session-events:sess_1`,
      );
    } finally {
      raw.disconnect();
    }
    await until(() => eventsOf(seen).includes(300), 'the last append');
    expect(seen[1]!.gap).toBe(true);
    expect(seen[1]!.events[0]).toBeGreaterThan(1);
    expect(seen.slice(2).every((delivery) => !delivery.gap)).toBe(true);
  });

  it('an entry that does not follow the last one read (forged) is a gap', async () => {
    const prefix = newPrefix();
    const a = instance(prefix);
    const seen: SessionEventDelivery[] = [];
    await a.sessionEvents.follow('sess_1', (delivery) => seen.push(delivery));
    a.sessionEvents.append('sess_1', ['fine']);
    await until(() => seen.length === 1, 'the first append');
    const raw = new Redis(redis!.url);
    try {
      await raw.xadd(`${prefix}session-events:sess_1`, '*', 'p', '1-1', 'g', '0', 'x', '0', 'e', '["after a hole"]');
    } finally {
      raw.disconnect();
    }
    await until(() => seen.length === 2, 'the entry after the hole');
    expect(seen[1]).toEqual({ events: ['after a hole'], gap: true, end: false });
  });

  it('close() ends a blocked read at once; appends after it are dropped, follows refused', async () => {
    const a = instance(newPrefix());
    await a.sessionEvents.follow('sess_1', () => {});
    // The read is issued (and blocks) on a connection of its own; closing must not wait for it.
    await sleep(50);
    await a.close();
    opened.splice(opened.indexOf(a), 1);
    a.sessionEvents.append('sess_1', ['late']);
    await expect(a.sessionEvents.follow('sess_1', () => {})).rejects.toThrow(/closed/);
  });
});

describe.skipIf(!redisServerBinary())('the Redis session event log while Redis is down', () => {
  it("an append that fails is a gap at once on its instance, and on the others' once Redis is back; reads resume", async () => {
    const port = await freeLoopbackPort();
    let server = await spawnRedisServer(port);
    try {
      const prefix = 'ptc-outage:';
      const [a, b] = [instance(prefix, server.url), instance(prefix, server.url)];
      const trouble: string[] = [];
      a.sessionEvents.onTrouble((message) => trouble.push(`a: ${message}`));
      b.sessionEvents.onTrouble((message) => trouble.push(`b: ${message}`));
      const onA: SessionEventDelivery[] = [];
      const onB: SessionEventDelivery[] = [];
      await a.sessionEvents.follow('sess_1', (delivery) => onA.push(delivery));
      await b.sessionEvents.follow('sess_1', (delivery) => onB.push(delivery));
      a.sessionEvents.append('sess_1', ['up']);
      await until(() => onA.length === 1 && onB.length === 1, 'the first append on both');

      await server.stop();
      await until(() => trouble.some((line) => line.startsWith('b: reads of agent session events from Redis failed')), 'b to notice');
      a.sessionEvents.append('sess_1', ['lost']);
      await until(() => onA.length === 2, 'the gap on the appending instance');
      expect(onA[1]).toEqual({ events: [], gap: true, end: false });
      expect(trouble.some((line) => line.startsWith('a: events of agent session sess_1 could not be appended to Redis'))).toBe(true);

      server = await spawnRedisServer(port);
      await until(() => onB.length === 2, 'the mark of the lost append on the other instance');
      expect(onB[1]).toMatchObject({ gap: true });
      await until(() => trouble.some((line) => line.startsWith('b: reads of agent session events from Redis work again')), 'b to recover');
      // Following again after the gap: from the log's end, as any new stream.
      const again: SessionEventDelivery[] = [];
      await b.sessionEvents.follow('sess_1', (delivery) => again.push(delivery));
      a.sessionEvents.append('sess_1', ['after']);
      await until(() => again.length === 1, 'an append after the outage');
      expect(again[0]).toEqual({ events: ['after'], gap: false, end: false });
    } finally {
      await Promise.all(opened.splice(0).map((store) => store.close()));
      await server.stop();
    }
  });
});

/** Enough of a ServerResponse for a stream: what it was written, whether it ended. */
class FakeResponse extends EventEmitter {
  text = '';
  writableEnded = false;
  destroyed = false;
  readonly writableLength = 0;
  writeHead(): this {
    return this;
  }
  write(chunk: string): boolean {
    this.text += chunk;
    return true;
  }
  end(): this {
    this.writableEnded = true;
    return this;
  }
  destroy(): this {
    this.destroyed = true;
    return this;
  }
  events(): SessionEvent[] {
    return [...this.text.matchAll(/^data: (.*)$/gm)].map((match) => JSON.parse(match[1]!) as SessionEvent);
  }
}

const silent = { warn: () => {}, error: () => {} } as unknown as FastifyBaseLogger;
/** An event as the harness publishes it (its content does not matter here). */
const idle = (id: string): SessionEventBody => ({ type: 'agent.session.turn.in_progress', session_id: id, turn_id: 'turn_1' }) as unknown as SessionEventBody;

describe('the session event hub', () => {
  it('in one process: observers hear each publish once, streams get the events with the same ids, endSession ends them after', async () => {
    const hub = new SessionEventHub({ logger: silent });
    const observed: [string, readonly SessionEvent[]][] = [];
    const stop = hub.observe((sessionId, events) => observed.push([sessionId, events]));
    hub.publish('sess_1', [idle('sess_1')]);
    const raw = new FakeResponse();
    (await hub.open('sess_1')).start(raw as unknown as ServerResponse, {});
    expect(hub.streamsOf('sess_1')).toBe(1);
    hub.publish('sess_1', [idle('sess_1'), idle('sess_1')]);
    hub.endSession('sess_1');
    expect(observed.map(([sessionId, events]) => [sessionId, events.length])).toEqual([
      ['sess_1', 1],
      ['sess_1', 2],
    ]);
    expect(raw.events()).toEqual(observed[1]![1]);
    expect(raw.writableEnded).toBe(true);
    expect(hub.streams).toBe(0);
    stop();
    hub.publish('sess_1', [idle('sess_1')]);
    expect(observed).toHaveLength(2);
  });

  it.skipIf(!redis)(
    "through Redis: a stream on another instance gets the events with the producer's ids; observers hear only their own instance's publishes",
    async () => {
      const prefix = newPrefix();
      const [storeA, storeB] = [instance(prefix), instance(prefix)];
      const [a, b] = [new SessionEventHub({ log: storeA.sessionEvents, logger: silent }), new SessionEventHub({ log: storeB.sessionEvents, logger: silent })];
      const observedA: SessionEvent[] = [];
      const observedB: SessionEvent[] = [];
      a.observe((_, events) => observedA.push(...events));
      b.observe((_, events) => observedB.push(...events));
      const [rawA, rawB] = [new FakeResponse(), new FakeResponse()];
      (await a.open('sess_1')).start(rawA as unknown as ServerResponse, {});
      (await b.open('sess_1')).start(rawB as unknown as ServerResponse, {});
      a.publish('sess_1', [idle('sess_1')]);
      await until(() => rawB.events().length === 1, "A's event on B");
      b.publish('sess_1', [idle('sess_1'), idle('sess_1')]);
      await until(() => rawA.events().length === 3, "B's events on A");
      a.endSession('sess_1');
      await until(() => rawA.writableEnded && rawB.writableEnded, 'both streams to end');
      expect(observedA).toHaveLength(1);
      expect(observedB).toHaveLength(2);
      expect(rawA.events()).toEqual(rawB.events());
      expect(rawA.events().map((event) => event.event_id)).toEqual([...observedA, ...observedB].map((event) => event.event_id));
      expect(a.streams + b.streams).toBe(0);
    },
  );
});
