import { beforeEach, describe, expect, test } from 'vitest';
import type { RecordStore } from '../server/platform/stores/record-store.ts';
import { storeCases } from './support/store-cases.ts';

// The Agents API's records (server/platform/stores/record-store.ts), one contract for every store kind:
// memory, a real SQLite file and a real Redis.
const { cases: STORE_CASES, tracked } = await storeCases('ptc-record-stores-');

describe.each(STORE_CASES)('$kind record store', (storeCase) => {
  let place = '';
  let records: RecordStore;
  beforeEach(({ skip }) => {
    skip(storeCase.skipReason !== undefined, storeCase.skipReason);
    place = storeCase.newPlace();
    const store = tracked(storeCase.open(place));
    if (!store.records) throw new Error(`the ${storeCase.kind} store keeps no records`);
    records = store.records;
  });

  test('a record comes back as put; a kind lists in the order records were first put, a replaced one in its place', async () => {
    await records.put('agent', 'a', { id: 'a', n: 1 });
    await records.put('agent', 'b', { id: 'b', n: 1 });
    await records.put('vault', 'a', { id: 'a', other: true });
    await records.put('agent', 'a', { id: 'a', n: 2 });
    expect(await records.get('agent', 'a')).toEqual({ id: 'a', n: 2 });
    expect(await records.list('agent')).toEqual([
      { id: 'a', n: 2 },
      { id: 'b', n: 1 },
    ]);
    expect(await records.delete('agent', 'a')).toBe(true);
    expect(await records.delete('agent', 'a')).toBe(false);
    expect(await records.get('agent', 'a')).toBeUndefined();
    expect(await records.list('vault')).toEqual([{ id: 'a', other: true }]);
  });

  test('children list and page by parent, in both orders, and go with deleteChildren', async () => {
    for (const id of ['1', '2', '3', '4', '5']) await records.put('session_item', `s1/${id}`, { id }, 's1');
    await records.put('session_item', 's2/1', { id: 'x' }, 's2');
    await records.put('session_item', 's1/2', { id: '2', changed: true }, 's1');
    expect((await records.list<{ id: string }>('session_item', 's1')).map((item) => item.id)).toEqual(['1', '2', '3', '4', '5']);
    expect(await records.page('session_item', 's1', { limit: 2, order: 'asc' })).toEqual({ data: [{ id: '1' }, { id: '2', changed: true }], has_more: true });
    expect(await records.page('session_item', 's1', { after: 's1/3', limit: 2, order: 'asc' })).toEqual({ data: [{ id: '4' }, { id: '5' }], has_more: false });
    expect(await records.page('session_item', 's1', { after: 's1/3', limit: 5, order: 'desc' })).toEqual({
      data: [{ id: '2', changed: true }, { id: '1' }],
      has_more: false,
    });
    expect(await records.page('session_item', 's1', { after: 's2/1', limit: 2, order: 'asc' })).toBeUndefined();
    await records.delete('session_item', 's1/4', 's1');
    expect((await records.page<{ id: string }>('session_item', 's1', { limit: 10, order: 'desc' }))!.data.map((item) => item.id)).toEqual(['5', '3', '2', '1']);
    await records.deleteChildren('session_item', 's1');
    expect(await records.list('session_item', 's1')).toEqual([]);
    expect(await records.get('session_item', 's1/1')).toBeUndefined();
    expect(await records.list('session_item', 's2')).toEqual([{ id: 'x' }]);
  });

  test('putAll stores records together, each in its place; a value that cannot be stored leaves none put', async () => {
    await records.put('session_item', 's1/a', { id: 'a' }, 's1');
    await records.putAll([
      { kind: 'session_item', id: 's1/b', value: { id: 'b' }, parent: 's1' },
      { kind: 'session_item', id: 's1/a', value: { id: 'a', changed: true }, parent: 's1' },
      { kind: 'session', id: 's1', value: { id: 's1', items: 2 } },
    ]);
    expect(await records.list('session_item', 's1')).toEqual([{ id: 'a', changed: true }, { id: 'b' }]);
    expect(await records.get('session', 's1')).toEqual({ id: 's1', items: 2 });
    await expect(
      records.putAll([
        { kind: 'session_item', id: 's1/c', value: { id: 'c' }, parent: 's1' },
        { kind: 'session', id: 's1', value: { id: 's1', size: 1n } },
      ]),
    ).rejects.toThrow(/BigInt/);
    expect(await records.get('session_item', 's1/c')).toBeUndefined();
    expect(await records.get('session', 's1')).toEqual({ id: 's1', items: 2 });
    await records.putAll([]);
  });

  test('records outlive the store that put them: a store opened again at the same place has them', async ({ skip }) => {
    skip(storeCase.kind === 'memory', 'a memory store keeps nothing past itself');
    await records.put('session', 'sess_1', { id: 'sess_1', status: 'requires_action' });
    await records.put('session_item', 'sess_1/i', { id: 'i' }, 'sess_1');
    const reopened = tracked(storeCase.open(place)).records!;
    expect(await reopened.get('session', 'sess_1')).toEqual({ id: 'sess_1', status: 'requires_action' });
    expect(await reopened.page('session_item', 'sess_1', { limit: 5, order: 'asc' })).toEqual({ data: [{ id: 'i' }], has_more: false });
  });
});
