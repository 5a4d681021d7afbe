import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DatabaseSync } from 'node:sqlite';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, test, vi } from 'vitest';
import type { ConversationItem } from '../schemas/items.ts';
import type { ResponseObject } from '../schemas/response.ts';
import { createResponseStore, SQLITE_FILE_NAME, STORE_KINDS } from '../server/platform/stores/create-store.ts';
import { MemoryResponseStore } from '../server/platform/stores/memory-store.ts';
import { RedisResponseStore } from '../server/platform/stores/redis-store.ts';
import type { ResponseStore, StoredResponse } from '../server/platform/stores/response-store.ts';
import { SqliteResponseStore } from '../server/platform/stores/sqlite-store.ts';
import { freeLoopbackPort, redisServerBinary, spawnRedisServer } from './support/redis.ts';
import { storeCases } from './support/store-cases.ts';

const { cases: STORE_CASES, redis, tempDir, tracked: openTracked } = await storeCases('ptc-stores-');

/** A stored turn shaped like the server's: a program that called a tool, then an answer. */
function storedResponse(id: string, options: { previousResponseId?: string; answer?: string } = {}): StoredResponse {
  const response: ResponseObject = {
    id,
    object: 'response',
    access_programs: null,
    created_at: 1_760_000_000,
    completed_at: 1_760_000_001,
    status: 'completed',
    background: false,
    error: null,
    incomplete_details: null,
    instructions: 'Use the program tool.',
    max_output_tokens: null,
    max_tool_calls: null,
    metadata: { case: id },
    model: 'ptc-emulator-seed',
    output: [
      { type: 'program', id: `prog_${id}`, call_id: `call_prog_${id}`, code: 'const r = await tools.lookup({ q: "x" });\nreturn r;', fingerprint: 'v1.opaque' },
      {
        type: 'function_call',
        id: `fc_${id}`,
        call_id: `call_fc_${id}`,
        name: 'lookup',
        arguments: '{"q":"x"}',
        status: 'completed',
        caller: { type: 'program', caller_id: `call_prog_${id}` },
      },
      { type: 'program_output', id: `po_${id}`, call_id: `call_prog_${id}`, result: '{"ok":true}', status: 'completed' },
      {
        type: 'message',
        id: `msg_${id}`,
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: options.answer ?? 'Done: “ünïcödé” 🚀 \u0000 \n\t "quoted" \\', annotations: [], logprobs: [] }],
      },
    ],
    parallel_tool_calls: true,
    previous_response_id: options.previousResponseId ?? null,
    reasoning: { effort: null, summary: null },
    service_tier: 'default',
    temperature: 1,
    text: { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: 'auto',
    tool_usage: {
      image_gen: {
        input_tokens: 0,
        input_tokens_details: { image_tokens: 0, text_tokens: 0 },
        output_tokens: 0,
        output_tokens_details: { image_tokens: 0, text_tokens: 0 },
        total_tokens: 0,
      },
      web_search: { num_requests: 0 },
    },
    tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } }, strict: true }],
    top_logprobs: 0,
    top_p: 1,
    truncation: 'disabled',
    safety_identifier: null,
    prompt_cache_key: null,
  };
  const inputItems: ConversationItem[] = [
    { type: 'message', id: `in_${id}`, role: 'user', content: 'Look up x.' },
    { type: 'function_call_output', id: `fco_${id}`, call_id: 'call_earlier', output: '42', caller: { type: 'program', caller_id: 'call_prog_earlier' } },
  ];
  return { response, inputItems };
}

describe.each(STORE_CASES)('$kind store', (storeCase) => {
  let store: ResponseStore;
  beforeEach(({ skip }) => {
    skip(storeCase.skipReason !== undefined, storeCase.skipReason);
    store = storeCase.open(storeCase.newPlace());
  });

  test('get returns what was put, equal in every field but a copy', async () => {
    const stored = storedResponse('resp_roundtrip', { previousResponseId: 'resp_before' });
    await store.put(stored);
    const got = await store.get('resp_roundtrip');
    expect(got).toStrictEqual(stored);
    expect(got).not.toBe(stored);
  });

  test('changing an object after putting it does not change what is stored', async () => {
    const stored = storedResponse('resp_mutated');
    await store.put(stored);
    (stored.response.metadata as Record<string, string>).case = 'changed afterwards';
    expect((await store.get('resp_mutated'))?.response.metadata).toStrictEqual({ case: 'resp_mutated' });
  });

  test('get of an id never put is undefined', async () => {
    await store.put(storedResponse('resp_present'));
    expect(await store.get('resp_absent')).toBeUndefined();
  });

  test('putting an id again replaces it', async () => {
    await store.put(storedResponse('resp_replaced', { answer: 'first' }));
    await store.put(storedResponse('resp_replaced', { answer: 'second' }));
    expect(await store.get('resp_replaced')).toStrictEqual(storedResponse('resp_replaced', { answer: 'second' }));
  });

  test('delete reports true once, then false, and the response is gone', async () => {
    await store.put(storedResponse('resp_deleted'));
    await store.put(storedResponse('resp_kept'));
    expect(await store.delete('resp_deleted')).toBe(true);
    expect(await store.delete('resp_deleted')).toBe(false);
    expect(await store.get('resp_deleted')).toBeUndefined();
    expect(await store.get('resp_kept')).toStrictEqual(storedResponse('resp_kept'));
  });

  test('delete of an id never put is false', async () => {
    expect(await store.delete('resp_never')).toBe(false);
  });

  test('keeps many responses apart', async () => {
    const ids = Array.from({ length: 300 }, (_, index) => `resp_many_${index}`);
    for (const id of ids) await store.put(storedResponse(id, { answer: `answer ${id}` }));
    for (const id of ids) expect(await store.get(id)).toStrictEqual(storedResponse(id, { answer: `answer ${id}` }));
  });

  test('stores a 1 MB response whole', async () => {
    // Varied characters, including multi-byte ones, so truncation or re-encoding would show.
    const answer = Array.from({ length: 1 << 20 }, (_, index) => 'aé€😀\n"\\'[index % 7]).join('');
    const stored = storedResponse('resp_large', { answer });
    await store.put(stored);
    expect(await store.get('resp_large')).toStrictEqual(stored);
  });

  test('outputItems finds each output item by its id in the newest response that emitted it; a deleted response takes its items away', async () => {
    expect(store.outputItems).toBeTypeOf('function');
    const first = storedResponse('resp_items_first', { answer: 'first' });
    const second = storedResponse('resp_items_second', { answer: 'second' });
    // The same item id in two responses (the emulator's sealed ids repeat when a replay makes the same call).
    const shared = { ...second.response.output[1]!, id: first.response.output[1]!.id };
    second.response.output[1] = shared;
    await store.put(first);
    await store.put(second);
    const asked = [first.response.output[0]!.id, shared.id, second.response.output[3]!.id, 'mcp_never_emitted'];
    const found = await store.outputItems!(asked);
    const expected = {
      [first.response.output[0]!.id]: first.response.output[0],
      [shared.id]: shared,
      [second.response.output[3]!.id]: second.response.output[3],
    };
    expect(Object.fromEntries([...found].map(([id, text]) => [id, JSON.parse(text)]))).toStrictEqual(expected);
    // Their sizes, measured without reading them, are the bytes of that JSON.
    expect(Object.fromEntries(await store.outputItemBytes!(asked))).toStrictEqual(
      Object.fromEntries([...found].map(([id, text]) => [id, Buffer.byteLength(text)])),
    );
    // Deleting the older response leaves the item the newer one emitted; deleting that takes it away.
    await store.delete('resp_items_first');
    expect([...(await store.outputItems!([first.response.output[0]!.id, shared.id])).keys()]).toStrictEqual([shared.id]);
    await store.delete('resp_items_second');
    expect((await store.outputItems!([shared.id, second.response.output[3]!.id])).size).toBe(0);
    expect((await store.outputItems!([])).size).toBe(0);
  });

  test('a response put again keeps only the items it holds now', async () => {
    const before = storedResponse('resp_items_replaced');
    await store.put(before);
    const after = storedResponse('resp_items_replaced');
    after.response.output.splice(0, 1);
    await store.put(after);
    expect((await store.outputItems!([before.response.output[0]!.id])).size).toBe(0);
    expect(JSON.parse((await store.outputItems!([after.response.output[0]!.id])).get(after.response.output[0]!.id)!)).toStrictEqual(after.response.output[0]);
  });

  test('putIfUnfinished puts only over a queued or in_progress response: never over one finished (cancelled elsewhere) or gone', async () => {
    const withStatus = (status: ResponseObject['status']): StoredResponse => {
      const stored = storedResponse('resp_background');
      stored.response.status = status;
      return stored;
    };
    expect(store.putIfUnfinished).toBeTypeOf('function');
    expect(await store.putIfUnfinished!(withStatus('in_progress'))).toBe(false);
    expect(await store.get('resp_background')).toBeUndefined();
    await store.put(withStatus('queued'));
    expect(await store.putIfUnfinished!(withStatus('in_progress'))).toBe(true);
    expect((await store.get('resp_background'))?.response.status).toBe('in_progress');
    // Another instance's cancel, then this one's result: the cancellation stands.
    await store.put(withStatus('cancelled'));
    expect(await store.putIfUnfinished!(withStatus('completed'))).toBe(false);
    expect(await store.get('resp_background')).toStrictEqual(withStatus('cancelled'));
    // Two finishes at once: exactly one is put.
    await store.put(withStatus('in_progress'));
    const outcomes = await Promise.all([store.putIfUnfinished!(withStatus('completed')), store.putIfUnfinished!(withStatus('cancelled'))]);
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    expect((await store.get('resp_background'))?.response.status).toBe(outcomes[0] ? 'completed' : 'cancelled');
    await store.delete('resp_background');
    expect(await store.putIfUnfinished!(withStatus('completed'))).toBe(false);
  });

  test('concurrent puts and gets each see their own response', async () => {
    const ids = Array.from({ length: 200 }, (_, index) => `resp_concurrent_${index}`);
    await Promise.all(ids.map((id) => store.put(storedResponse(id, { answer: id }))));
    const got = await Promise.all(ids.map((id) => store.get(id)));
    expect(got).toStrictEqual(ids.map((id) => storedResponse(id, { answer: id })));
  });
});

describe.each(STORE_CASES.filter((storeCase) => storeCase.kind !== 'memory'))('$kind store across a restart', (storeCase) => {
  beforeEach(({ skip }) => skip(storeCase.skipReason !== undefined, storeCase.skipReason));

  test('a store opened on the same place after closing finds what was put, and not what was deleted', async () => {
    const place = storeCase.newPlace();
    const first = storeCase.open(place);
    await first.put(storedResponse('resp_survives', { previousResponseId: 'resp_root' }));
    await first.put(storedResponse('resp_deleted_before_restart'));
    await first.delete('resp_deleted_before_restart');
    await first.close();

    const second = storeCase.open(place);
    expect(await second.get('resp_survives')).toStrictEqual(storedResponse('resp_survives', { previousResponseId: 'resp_root' }));
    expect(await second.get('resp_deleted_before_restart')).toBeUndefined();
    const items = await second.outputItems!(['fc_resp_survives', 'fc_resp_deleted_before_restart']);
    expect([...items.keys()]).toStrictEqual(['fc_resp_survives']);
  });
});

describe('sqlite store file', () => {
  test('creates the missing directories of its file', async () => {
    const filePath = join(tempDir(), 'not', 'yet', 'there', 'responses.sqlite');
    const store = openTracked(new SqliteResponseStore(filePath));
    await store.put(storedResponse('resp_in_new_dir'));
    expect(existsSync(filePath)).toBe(true);
  });

  test('the factory puts the database at <dataDir>/ptc-emulator.sqlite', async () => {
    const dataDir = join(tempDir(), 'factory-data');
    openTracked(createResponseStore({ kind: 'sqlite', dataDir }));
    expect(existsSync(join(dataDir, SQLITE_FILE_NAME))).toBe(true);
  });

  test('is in WAL mode, with the chain and creation time in their own columns', async () => {
    const filePath = join(tempDir(), 'inspected', 'responses.sqlite');
    const store = openTracked(new SqliteResponseStore(filePath));
    await store.put(storedResponse('resp_child', { previousResponseId: 'resp_parent' }));

    // A second connection reads what is on disk: WAL mode is a property of the file.
    const inspector = new DatabaseSync(filePath, { readOnly: true });
    try {
      expect(inspector.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
      const row = inspector.prepare('SELECT previous_response_id, created_at FROM responses WHERE id = ?').get('resp_child');
      expect({ ...row }).toStrictEqual({ previous_response_id: 'resp_parent', created_at: 1_760_000_000 });
    } finally {
      inspector.close();
    }
  });
  test("a file an earlier version made (an item index without the items' JSON) is read as before, and new items carry their JSON", async () => {
    const filePath = join(tempDir(), 'earlier', 'responses.sqlite');
    const old = storedResponse('resp_before_upgrade');
    mkdirSync(dirname(filePath), { recursive: true });
    const earlier = new DatabaseSync(filePath);
    try {
      earlier.exec(`
        CREATE TABLE responses (id TEXT PRIMARY KEY, previous_response_id TEXT, created_at INTEGER NOT NULL, body TEXT NOT NULL);
        CREATE TABLE response_items (item_id TEXT PRIMARY KEY, response_id TEXT NOT NULL);`);
      earlier.prepare('INSERT INTO responses VALUES (?, NULL, ?, ?)').run(old.response.id, old.response.created_at, JSON.stringify(old));
      for (const item of old.response.output) earlier.prepare('INSERT INTO response_items VALUES (?, ?)').run(item.id, old.response.id);
    } finally {
      earlier.close();
    }
    const store = openTracked(new SqliteResponseStore(filePath));
    const itemId = old.response.output[1]!.id;
    expect(JSON.parse((await store.outputItems([itemId])).get(itemId)!)).toStrictEqual(old.response.output[1]);
    // Its size is its response's: the most reading it can cost.
    expect((await store.outputItemBytes([itemId])).get(itemId)).toBe(Buffer.byteLength(JSON.stringify(old)));
    const fresh = storedResponse('resp_after_upgrade');
    await store.put(fresh);
    const freshId = fresh.response.output[1]!.id;
    expect((await store.outputItemBytes([freshId])).get(freshId)).toBe(Buffer.byteLength(JSON.stringify(fresh.response.output[1])));
  });
});

describe.skipIf(!redis)('redis store keys and expiry', () => {
  let raw: Redis;
  beforeAll(() => {
    raw = new Redis(redis?.url ?? '');
  });
  afterAll(() => raw.quit());

  test('keeps each response at <prefix>response:<id> with no expiry by default', async () => {
    const prefix = `${redis?.keyPrefix}keys:`;
    const store = openTracked(new RedisResponseStore(redis?.url ?? '', { prefix }));
    await store.put(storedResponse('resp_keyed'));
    const key = `${prefix}response:resp_keyed`;
    expect(JSON.parse((await raw.get(key)) ?? 'null')).toStrictEqual(storedResponse('resp_keyed'));
    expect(await raw.pttl(key)).toBe(-1); // -1: the key exists and never expires
  });

  test('stores with different prefixes do not see each other', async () => {
    const one = openTracked(new RedisResponseStore(redis?.url ?? '', { prefix: `${redis?.keyPrefix}one:` }));
    const other = openTracked(new RedisResponseStore(redis?.url ?? '', { prefix: `${redis?.keyPrefix}other:` }));
    await one.put(storedResponse('resp_shared_id'));
    expect(await other.get('resp_shared_id')).toBeUndefined();
    expect(await other.delete('resp_shared_id')).toBe(false);
    expect(await one.get('resp_shared_id')).toStrictEqual(storedResponse('resp_shared_id'));
  });

  test("a response put with a TTL is there at first and gone once it expires, and so is its items' index", async () => {
    const store = openTracked(new RedisResponseStore(redis?.url ?? '', { prefix: `${redis?.keyPrefix}ttl:`, ttlSeconds: 2 }));
    await store.put(storedResponse('resp_expiring'));
    expect(await store.get('resp_expiring')).toStrictEqual(storedResponse('resp_expiring'));
    expect(await raw.get(`${redis?.keyPrefix}ttl:item:fc_resp_expiring`)).toBe('resp_expiring');
    expect(await raw.pttl(`${redis?.keyPrefix}ttl:item:fc_resp_expiring`)).toBeGreaterThan(0);
    expect(await raw.pttl(`${redis?.keyPrefix}ttl:item-json:fc_resp_expiring`)).toBeGreaterThan(0);
    // Poll rather than sleep a fixed time: the test's timeout bounds the wait.
    while ((await store.get('resp_expiring')) !== undefined) await sleep(100);
  });

  test('items an earlier version indexed (no JSON key) are read from their response, sized by it; new items have their JSON key', async () => {
    const prefix = `${redis?.keyPrefix}legacy:`;
    const old = storedResponse('resp_indexed_before');
    // As an earlier version wrote it: the response, and each item's index key naming it.
    await raw.set(`${prefix}response:${old.response.id}`, JSON.stringify(old));
    for (const item of old.response.output) await raw.set(`${prefix}item:${item.id}`, old.response.id);
    const store = openTracked(new RedisResponseStore(redis?.url ?? '', { prefix }));
    const itemId = old.response.output[1]!.id;
    expect(JSON.parse((await store.outputItems([itemId])).get(itemId)!)).toStrictEqual(old.response.output[1]);
    expect((await store.outputItemBytes([itemId, 'fc_never'])).get(itemId)).toBe(Buffer.byteLength(JSON.stringify(old)));
    const fresh = storedResponse('resp_indexed_now');
    await store.put(fresh);
    const freshId = fresh.response.output[1]!.id;
    expect(JSON.parse((await raw.get(`${prefix}item-json:${freshId}`)) ?? 'null')).toStrictEqual(fresh.response.output[1]);
    await store.delete(fresh.response.id);
    expect(await raw.exists(`${prefix}item-json:${freshId}`, `${prefix}item:${freshId}`)).toBe(0);
  });

  test('rejects a TTL that is not a positive whole number of seconds', () => {
    for (const ttlSeconds of [0, -1, 1.5, Number.NaN]) {
      expect(() => new RedisResponseStore(redis?.url ?? '', { ttlSeconds })).toThrow(RangeError);
    }
  });
});

describe('redis store without a reachable Redis', () => {
  // An operation must fail within seconds, not hang: this test's timeout is that bound.
  test('rejects every operation with an Error naming the cause, and reports no unhandled error', { timeout: 3_000 }, async () => {
    const consoleError = vi.spyOn(console, 'error');
    const store = openTracked(new RedisResponseStore(`redis://127.0.0.1:${await freeLoopbackPort()}`));
    try {
      await expect(store.put(storedResponse('resp_nowhere'))).rejects.toThrow(/Redis put of response resp_nowhere failed.*ECONNREFUSED/);
      await expect(store.get('resp_nowhere')).rejects.toBeInstanceOf(Error);
      await expect(store.delete('resp_nowhere')).rejects.toBeInstanceOf(Error);
      // ioredis prints "[ioredis] Unhandled error event" when no 'error' listener is attached.
      expect(consoleError).not.toHaveBeenCalled();
    } finally {
      consoleError.mockRestore();
    }
  });

  test.skipIf(redisServerBinary() === undefined)('recovers by itself once Redis comes up on its port', async () => {
    const port = await freeLoopbackPort();
    const store = openTracked(new RedisResponseStore(`redis://127.0.0.1:${port}`));
    await expect(store.get('resp_later')).rejects.toThrow(/Redis get of response resp_later failed/);

    const server = await spawnRedisServer(port);
    try {
      // ioredis reconnects on a back-off: poll until a put gets through (the test's timeout bounds it).
      while (
        !(await store.put(storedResponse('resp_later')).then(
          () => true,
          () => false,
        ))
      )
        await sleep(50);
      expect(await store.get('resp_later')).toStrictEqual(storedResponse('resp_later'));
    } finally {
      await store.close();
      await server.stop();
    }
  });
});

describe('createResponseStore', () => {
  test('offers memory, sqlite and redis', () => {
    expect(STORE_KINDS).toStrictEqual(['memory', 'sqlite', 'redis']);
  });

  test('refuses the redis store without a URL, saying so', () => {
    expect(() => createResponseStore({ kind: 'redis', dataDir: tempDir() })).toThrow(/needs a Redis URL/);
  });

  test('opens the store of each kind', () => {
    expect(openTracked(createResponseStore({ kind: 'memory', dataDir: tempDir() }))).toBeInstanceOf(MemoryResponseStore);
    expect(openTracked(createResponseStore({ kind: 'sqlite', dataDir: join(tempDir(), 'kinds') }))).toBeInstanceOf(SqliteResponseStore);
    // Constructing does not wait for a connection, so this needs no Redis.
    expect(openTracked(createResponseStore({ kind: 'redis', dataDir: tempDir(), redisUrl: 'redis://127.0.0.1:1' }))).toBeInstanceOf(RedisResponseStore);
  });
});
