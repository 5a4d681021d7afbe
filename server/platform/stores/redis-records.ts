import type { Redis } from 'ioredis';
import type { RedisRun } from './redis-conversations.ts';
import type { RecordKind, RecordPageQuery, RecordPut, RecordStore } from './record-store.ts';

// KEYS: the kind's bodies (a hash), the order it lists in (a sorted set: the kind's, or the
// parent's), the kind's counter; ARGV: id, JSON. One step, so a record is never in the hash
// without its place in the order; a replaced record keeps its place.
const PUT_SCRIPT = `
if redis.call('ZSCORE', KEYS[2], ARGV[1]) == false then
  redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[3]), ARGV[1])
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1`;

// KEYS: the kind's bodies, the parent's order. Every child, then the order itself.
const DELETE_CHILDREN_SCRIPT = `
local ids = redis.call('ZRANGE', KEYS[2], 0, -1)
for i = 1, #ids do redis.call('HDEL', KEYS[1], ids[i]) end
redis.call('DEL', KEYS[2])
return #ids`;

/**
 * The Agents API's records in Redis: for each kind a hash of bodies by id at
 * `<prefix>records:<kind>`, the kind's order at `<prefix>records:<kind>:order` and each parent's
 * at `<prefix>records:<kind>:of:<parent>`. They never expire.
 */
export class RedisRecordStore implements RecordStore {
  constructor(
    readonly client: Redis,
    readonly prefix: string,
    readonly run: RedisRun,
  ) {}

  async put(kind: RecordKind, id: string, value: object, parent?: string): Promise<void> {
    const json = JSON.stringify(value);
    await this.run(`put of ${kind} ${id}`, () =>
      this.client.eval(PUT_SCRIPT, 3, this.#bodies(kind), this.#order(kind, parent), `${this.#bodies(kind)}:seq`, id, json),
    );
  }

  async putAll(records: readonly RecordPut[]): Promise<void> {
    if (records.length === 0) return;
    const serialized = records.map((record) => JSON.stringify(record.value));
    // One MULTI: the puts run together, no other client's command between them.
    await this.run(`put of ${records.length} records`, async () => {
      const multi = this.client.multi();
      records.forEach((record, index) => {
        const bodies = this.#bodies(record.kind);
        multi.eval(PUT_SCRIPT, 3, bodies, this.#order(record.kind, record.parent), `${bodies}:seq`, record.id, serialized[index]!);
      });
      const results = await multi.exec();
      const failed = results?.find(([error]) => error);
      if (failed) throw failed[0];
    });
  }

  async get<T>(kind: RecordKind, id: string): Promise<T | undefined> {
    const json = await this.run(`get of ${kind} ${id}`, () => this.client.hget(this.#bodies(kind), id));
    return json === null ? undefined : (JSON.parse(json) as T);
  }

  async delete(kind: RecordKind, id: string, parent?: string): Promise<boolean> {
    const [removed] = await this.run(`delete of ${kind} ${id}`, async () => {
      const results = await this.client.multi().hdel(this.#bodies(kind), id).zrem(this.#order(kind, parent), id).exec();
      const failed = results?.find(([error]) => error);
      if (failed) throw failed[0];
      return (results ?? []).map(([, count]) => Number(count));
    });
    return (removed ?? 0) > 0;
  }

  async list<T>(kind: RecordKind, parent?: string): Promise<T[]> {
    return this.run(`list of ${kind}`, async () => {
      const ids = await this.client.zrange(this.#order(kind, parent), 0, -1);
      if (ids.length === 0) return [];
      const bodies = await this.client.hmget(this.#bodies(kind), ...ids);
      return bodies.filter((json): json is string => json !== null).map((json) => JSON.parse(json) as T);
    });
  }

  async deleteChildren(kind: RecordKind, parent: string): Promise<void> {
    await this.run(`delete of the ${kind} records of ${parent}`, () =>
      this.client.eval(DELETE_CHILDREN_SCRIPT, 2, this.#bodies(kind), this.#order(kind, parent)),
    );
  }

  async page<T>(kind: RecordKind, parent: string, query: RecordPageQuery): Promise<{ data: T[]; has_more: boolean } | undefined> {
    return this.run(`page of the ${kind} records of ${parent}`, async () => {
      const order = this.#order(kind, parent);
      let start = 0;
      if (query.after !== undefined) {
        const rank = query.order === 'asc' ? await this.client.zrank(order, query.after) : await this.client.zrevrank(order, query.after);
        if (rank === null) return undefined;
        start = rank + 1;
      }
      // One more than the page, to know whether more follow.
      const end = start + query.limit;
      const ids = query.order === 'asc' ? await this.client.zrange(order, start, end) : await this.client.zrevrange(order, start, end);
      const pageIds = ids.slice(0, query.limit);
      const bodies = pageIds.length === 0 ? [] : await this.client.hmget(this.#bodies(kind), ...pageIds);
      return { data: bodies.filter((json): json is string => json !== null).map((json) => JSON.parse(json) as T), has_more: ids.length > query.limit };
    });
  }

  #bodies(kind: RecordKind): string {
    return `${this.prefix}records:${kind}`;
  }

  #order(kind: RecordKind, parent: string | undefined): string {
    return parent === undefined ? `${this.#bodies(kind)}:order` : `${this.#bodies(kind)}:of:${parent}`;
  }
}
