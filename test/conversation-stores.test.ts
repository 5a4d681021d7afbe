/**
 * The contract every conversation store keeps (memory, SQLite, Redis), through the same factory
 * the server uses: what is put is what comes back, pages walk the items in both orders, a
 * deleted conversation is gone with its items, and the lock is held by one response at a time.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import type { ConversationObject } from '../schemas/conversation.ts';
import type { ConversationItem } from '../schemas/items.ts';
import { UnknownCursorError, type ConversationStore } from '../server/platform/stores/conversation-store.ts';
import { RedisResponseStore } from '../server/platform/stores/redis-store.ts';
import { StoreUnavailableError } from '../server/platform/stores/response-store.ts';
import { freeLoopbackPort } from './support/redis.ts';
import { storeCases } from './support/store-cases.ts';

const { cases: STORE_CASES, redis, tracked } = await storeCases('ptc-conversation-stores-');

let idCounter = 0;
function conversation(metadata: Record<string, string> = {}): ConversationObject {
  return { id: `conv_test${++idCounter}`, object: 'conversation', created_at: 1_760_000_000, metadata };
}

function message(id: string, text = `text of ${id}: “ünïcödé” 🚀 \u0000 "q" \\`): ConversationItem {
  return { type: 'message', id, role: 'user', content: [{ type: 'input_text', text }] };
}

function call(id: string): ConversationItem {
  return {
    type: 'function_call',
    id,
    call_id: `call_${id}`,
    name: 'lookup',
    arguments: '{"q":"x"}',
    status: 'completed',
    caller: { type: 'program', caller_id: 'call_prog' },
  };
}

describe.each(STORE_CASES)('$kind conversation store', (storeCase) => {
  let place = '';
  let conversations: ConversationStore;
  beforeEach(({ skip }) => {
    skip(storeCase.skipReason !== undefined, storeCase.skipReason);
    place = storeCase.newPlace();
    const store = storeCase.open(place);
    if (!store.conversations) throw new Error(`the ${storeCase.kind} store keeps no conversations`);
    conversations = store.conversations;
  });

  test('a created conversation comes back as it was put, with its items in order', async () => {
    const conv = conversation({ topic: 'inventory' });
    const items = [message('msg_1'), call('fc_2'), message('msg_3')];
    await conversations.create(conv, items);
    expect(await conversations.get(conv.id)).toEqual(conv);
    expect(await conversations.items(conv.id)).toEqual(items);
    expect(await conversations.item(conv.id, 'fc_2')).toEqual(items[1]);
  });

  test('an unknown conversation is undefined or false everywhere', async () => {
    expect(await conversations.get('conv_none')).toBeUndefined();
    expect(await conversations.items('conv_none')).toBeUndefined();
    expect(await conversations.page('conv_none', { limit: 10, order: 'asc' })).toBeUndefined();
    expect(await conversations.item('conv_none', 'msg_1')).toBeUndefined();
    expect(await conversations.update('conv_none', { a: 'b' })).toBeUndefined();
    expect(await conversations.append('conv_none', [message('msg_1')])).toBe(false);
    expect(await conversations.deleteItem('conv_none', 'msg_1')).toBe(false);
    expect(await conversations.delete('conv_none')).toBe(false);
    expect(await conversations.existingIds('conv_none', ['msg_1'])).toEqual(new Set());
    // A conversation created later under that id is not made by these calls.
    expect(await conversations.get('conv_none')).toBeUndefined();
  });

  test('update replaces the metadata and keeps the rest', async () => {
    const conv = conversation({ a: '1', b: '2' });
    await conversations.create(conv, []);
    expect(await conversations.update(conv.id, { c: '3' })).toEqual({ ...conv, metadata: { c: '3' } });
    expect(await conversations.get(conv.id)).toEqual({ ...conv, metadata: { c: '3' } });
    expect(await conversations.update(conv.id, {})).toEqual({ ...conv, metadata: {} });
  });

  test('append adds after the last item; existingIds names the ids already there', async () => {
    const conv = conversation();
    await conversations.create(conv, [message('msg_a')]);
    expect(await conversations.append(conv.id, [call('fc_b'), message('msg_c')])).toBe(true);
    expect(await conversations.append(conv.id, [])).toBe(true);
    expect((await conversations.items(conv.id))?.map((item) => item.id)).toEqual(['msg_a', 'fc_b', 'msg_c']);
    expect(await conversations.existingIds(conv.id, ['msg_c', 'msg_x', 'msg_a'])).toEqual(new Set(['msg_c', 'msg_a']));
  });

  test('pages walk every item once in both orders, and say when more follow', async () => {
    const conv = conversation();
    const ids = Array.from({ length: 23 }, (_, index) => `msg_${String(index).padStart(2, '0')}`);
    await conversations.create(
      conv,
      ids.slice(0, 5).map((id) => message(id)),
    );
    await conversations.append(
      conv.id,
      ids.slice(5).map((id) => message(id)),
    );
    for (const order of ['asc', 'desc'] as const) {
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await conversations.page(conv.id, { limit: 5, order, ...(after ? { after } : {}) });
        if (!page) throw new Error('no page');
        seen.push(...page.data.map((item) => item.id));
        if (!page.has_more) break;
        after = page.data.at(-1)!.id;
      }
      expect(seen).toEqual(order === 'asc' ? ids : [...ids].reverse());
    }
    const last = await conversations.page(conv.id, { limit: 3, order: 'asc', after: 'msg_19' });
    expect(last).toEqual({ data: ['msg_20', 'msg_21', 'msg_22'].map((id) => message(id)), has_more: false });
    expect(await conversations.page(conv.id, { limit: 5, order: 'desc', after: 'msg_00' })).toEqual({ data: [], has_more: false });
    await expect(conversations.page(conv.id, { limit: 5, order: 'asc', after: 'msg_nope' })).rejects.toBeInstanceOf(UnknownCursorError);
  });

  test('a cursor from another conversation is unknown here', async () => {
    const one = conversation();
    const other = conversation();
    await conversations.create(one, [message('msg_one')]);
    await conversations.create(other, [message('msg_other')]);
    await expect(conversations.page(one.id, { limit: 5, order: 'asc', after: 'msg_other' })).rejects.toBeInstanceOf(UnknownCursorError);
    expect(await conversations.item(one.id, 'msg_other')).toBeUndefined();
    expect(await conversations.deleteItem(one.id, 'msg_other')).toBe(false);
    expect(await conversations.items(other.id)).toEqual([message('msg_other')]);
  });

  test('a deleted item leaves the others in their order', async () => {
    const conv = conversation();
    await conversations.create(conv, [message('msg_1'), message('msg_2'), message('msg_3')]);
    expect(await conversations.deleteItem(conv.id, 'msg_2')).toBe(true);
    expect(await conversations.deleteItem(conv.id, 'msg_2')).toBe(false);
    expect((await conversations.items(conv.id))?.map((item) => item.id)).toEqual(['msg_1', 'msg_3']);
    expect(await conversations.item(conv.id, 'msg_2')).toBeUndefined();
    expect((await conversations.page(conv.id, { limit: 1, order: 'asc', after: 'msg_1' }))?.data.map((item) => item.id)).toEqual(['msg_3']);
  });

  test('a deleted conversation is gone with its items; the same item ids can live in another', async () => {
    const conv = conversation();
    await conversations.create(conv, [message('msg_1')]);
    expect(await conversations.delete(conv.id)).toBe(true);
    expect(await conversations.get(conv.id)).toBeUndefined();
    expect(await conversations.items(conv.id)).toBeUndefined();
    expect(await conversations.item(conv.id, 'msg_1')).toBeUndefined();
    expect(await conversations.delete(conv.id)).toBe(false);
    const next = conversation();
    await conversations.create(next, [message('msg_1')]);
    expect(await conversations.items(next.id)).toEqual([message('msg_1')]);
  });

  test('the lock is held by one at a time, released by its holder, and expires', async () => {
    const conv = conversation();
    await conversations.create(conv, []);
    const release = await conversations.lock(conv.id, 60_000);
    expect(release).toBeTypeOf('function');
    expect(await conversations.lock(conv.id, 60_000)).toBeUndefined();
    await release!();
    const again = await conversations.lock(conv.id, 200);
    expect(again).toBeTypeOf('function');
    // Expired: another may take it, and the first holder's release does not free the new lock.
    await sleep(1_000);
    const third = await conversations.lock(conv.id, 60_000);
    expect(third).toBeTypeOf('function');
    await again!();
    expect(await conversations.lock(conv.id, 60_000)).toBeUndefined();
    await third!();
  });

  test('a conversation that does not exist has no lock to hold: every lock on it resolves, so the caller finds it missing', async () => {
    const first = await conversations.lock('conv_none', 60_000);
    expect(first).toBeTypeOf('function');
    expect(await conversations.lock('conv_none', 60_000)).toBeTypeOf('function');
    await first!();
    expect(await conversations.get('conv_none')).toBeUndefined();
  });

  test('a deleted conversation takes its lock with it', async () => {
    const conv = conversation();
    await conversations.create(conv, [message('msg_1')]);
    const release = await conversations.lock(conv.id, 60_000);
    expect(release).toBeTypeOf('function');
    expect(await conversations.delete(conv.id)).toBe(true);
    expect(await conversations.append(conv.id, [message('msg_2')])).toBe(false);
    expect(await conversations.items(conv.id)).toBeUndefined();
    await release!();
    expect(await conversations.get(conv.id)).toBeUndefined();
  });

  test('two instances on the same store share every conversation and its lock', async ({ skip }) => {
    skip(storeCase.kind === 'memory', 'memory is one instance');
    const other = storeCase.open(place).conversations!;
    const conv = conversation();
    await conversations.create(conv, [message('msg_1')]);
    expect(await other.append(conv.id, [message('msg_2')])).toBe(true);
    expect((await conversations.items(conv.id))?.map((item) => item.id)).toEqual(['msg_1', 'msg_2']);

    const release = await conversations.lock(conv.id, 60_000);
    expect(release).toBeTypeOf('function');
    expect(await other.lock(conv.id, 60_000)).toBeUndefined();
    await release!();
    const otherRelease = await other.lock(conv.id, 60_000);
    expect(otherRelease).toBeTypeOf('function');
    expect(await conversations.lock(conv.id, 60_000)).toBeUndefined();
    await otherRelease!();

    // Of many racing for the lock, exactly one gets it.
    const racers = await Promise.all(Array.from({ length: 8 }, (_, index) => (index % 2 === 0 ? conversations : other).lock(conv.id, 60_000)));
    expect(racers.filter((racer) => racer !== undefined)).toHaveLength(1);
    await racers.find((racer) => racer !== undefined)!();

    expect(await other.delete(conv.id)).toBe(true);
    expect(await conversations.get(conv.id)).toBeUndefined();
  });

  test('items survive the store being opened again', async ({ skip }) => {
    skip(storeCase.kind === 'memory', 'memory does not outlive its store');
    const conv = conversation({ k: 'v' });
    await conversations.create(conv, [message('msg_1'), call('fc_2')]);
    const reopened = storeCase.open(place).conversations!;
    expect(await reopened.get(conv.id)).toEqual(conv);
    expect(await reopened.items(conv.id)).toEqual([message('msg_1'), call('fc_2')]);
  });
});

describe.skipIf(!redis)('redis conversation keys', () => {
  let raw: Redis;
  beforeAll(() => {
    raw = new Redis(redis?.url ?? '');
  });
  afterAll(() => raw.quit());

  test('a conversation lives under keys sharing its hash tag, none of them expiring, and all go with it', async () => {
    const prefix = `${redis?.keyPrefix}keys:`;
    // A response TTL does not reach conversations.
    const store = new RedisResponseStore(redis?.url ?? '', { prefix, ttlSeconds: 60 });
    tracked(store);
    const conversations = store.conversations;
    const conv = conversation();
    expect(await conversations.append(conv.id, [message('msg_0')])).toBe(false);
    expect(await raw.keys(`${prefix}*`)).toEqual([]);

    await conversations.create(conv, [message('msg_1')]);
    await conversations.append(conv.id, [message('msg_2')]);
    const base = `${prefix}conversation:{${conv.id}}`;
    expect((await raw.keys(`${prefix}*`)).sort()).toEqual([base, `${base}:items`, `${base}:order`, `${base}:seq`]);
    for (const key of await raw.keys(`${prefix}*`)) expect(await raw.pttl(key)).toBe(-1);
    expect(JSON.parse((await raw.get(base)) ?? 'null')).toEqual(conv);
    expect(await raw.zrange(`${base}:order`, 0, -1)).toEqual(['msg_1', 'msg_2']);

    const release = await conversations.lock(conv.id, 60_000);
    expect(await raw.pttl(`${base}:lock`)).toBeGreaterThan(0);
    await release!();
    expect(await raw.exists(`${base}:lock`)).toBe(0);

    expect(await conversations.delete(conv.id)).toBe(true);
    expect(await raw.keys(`${prefix}*`)).toEqual([]);
  });
});

describe('redis conversation store without a reachable Redis', () => {
  test('rejects with a StoreUnavailableError naming the operation', { timeout: 3_000 }, async () => {
    const store = new RedisResponseStore(`redis://127.0.0.1:${await freeLoopbackPort()}`);
    tracked(store);
    const conversations = store.conversations;
    await expect(conversations.create(conversation(), [message('msg_1')])).rejects.toThrow(/Redis create of conversation conv_test\d+ failed/);
    await expect(conversations.page('conv_nowhere', { limit: 5, order: 'asc', after: 'msg_1' })).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(conversations.lock('conv_nowhere', 1_000)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(conversations.append('conv_nowhere', [message('msg_1')])).rejects.toThrow(/Redis append to conversation conv_nowhere failed/);
  });
});
