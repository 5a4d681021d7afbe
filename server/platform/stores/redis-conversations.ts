import { randomUUID } from 'node:crypto';
import type { ChainableCommander, Redis } from 'ioredis';
import type { ConversationObject } from '../../../schemas/conversation.ts';
import type { ConversationItem } from '../../../schemas/items.ts';
import { UnknownCursorError, type ConversationStore, type ItemPage, type ItemPageQuery } from './conversation-store.ts';

/**
 * Runs the commands of one operation against Redis, turning any failure into a
 * StoreUnavailableError naming `operation` (RedisResponseStore's, so that responses and
 * conversations fail alike).
 */
export type RedisRun = <T>(operation: string, command: () => Promise<T>) => Promise<T>;

// KEYS: the conversation, its order, its items, its counter; ARGV: item id, item JSON, ... .
// A script, so that the check that the conversation exists and the writes are one step: an
// append racing a delete writes nothing rather than items without a conversation. NX keeps an
// id already there in its place (as the in-memory store does) if two appends raced past the
// caller's check; its body is the newer one.
const APPEND_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local count = #ARGV / 2
if count == 0 then return 1 end
local first = redis.call('INCRBY', KEYS[4], count) - count
for i = 1, count do
  redis.call('ZADD', KEYS[2], 'NX', first + i, ARGV[2 * i - 1])
  redis.call('HSET', KEYS[3], ARGV[2 * i - 1], ARGV[2 * i])
end
return 1`;

// KEYS: the conversation, its lock; ARGV: the token, the TTL in ms. 1: taken, 0: held by
// another, -1: no such conversation (which gets no lock key: it would only expire unused).
const LOCK_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end
return 0`;

// KEYS: the lock; ARGV: the holder's token. A holder whose lock expired, and was taken by
// another response since, must not free that response's lock.
const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

const TAKEN = 1;
const MISSING = -1;

/**
 * Conversations in the Redis of the responses, each under keys `<prefix>conversation:{<id>}`
 * (the ConversationObject as JSON) and that followed by `:order` (a sorted set of the item
 * ids, scored by their place), `:items` (a hash of item id to item JSON), `:seq` (the last
 * place handed out) and `:lock`. The braces make `<id>` the Redis Cluster hash tag, so a
 * conversation's keys share one slot and its scripts and transactions may touch them all.
 * None of them expires: the response TTL is for responses, which a client can make again;
 * a conversation expiring would take items with it that nothing can bring back.
 */
export class RedisConversationStore implements ConversationStore {
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #run: RedisRun;

  constructor(client: Redis, prefix: string, run: RedisRun) {
    this.#client = client;
    this.#prefix = prefix;
    this.#run = run;
  }

  async create(conversation: ConversationObject, items: readonly ConversationItem[]): Promise<void> {
    const { id } = conversation;
    const keys = this.#keys(id);
    // A Map keeps an id given twice at its first place with its last body, as append does.
    const bodies = new Map(items.map((item) => [item.id, JSON.stringify(item)]));
    await this.#run(`create of conversation ${id}`, async () => {
      const write = this.#client.multi();
      // The id is meant to be new; should it not be, what was there is replaced, not merged.
      write.del(keys.order, keys.items, keys.seq, keys.lock);
      write.set(keys.conversation, JSON.stringify(conversation));
      if (bodies.size > 0) {
        write.zadd(keys.order, ...[...bodies.keys()].flatMap((itemId, index) => [index + 1, itemId]));
        write.hset(keys.items, bodies);
        write.set(keys.seq, bodies.size);
      }
      await exec(write);
    });
  }

  async get(id: string): Promise<ConversationObject | undefined> {
    const json = await this.#run(`get of conversation ${id}`, () => this.#client.get(this.#keys(id).conversation));
    return json === null ? undefined : (JSON.parse(json) as ConversationObject);
  }

  async update(id: string, metadata: ConversationObject['metadata']): Promise<ConversationObject | undefined> {
    const key = this.#keys(id).conversation;
    return this.#run(`update of conversation ${id}`, async () => {
      const json = await this.#client.get(key);
      if (json === null) return undefined;
      const updated: ConversationObject = { ...(JSON.parse(json) as ConversationObject), metadata: { ...metadata } };
      // Only the metadata ever changes, so a concurrent update may win either way; XX stops
      // this one from bringing back a conversation deleted since the GET.
      const written = await this.#client.set(key, JSON.stringify(updated), 'XX');
      return written === null ? undefined : updated;
    });
  }

  async delete(id: string): Promise<boolean> {
    const keys = this.#keys(id);
    const [removed] = await this.#run(`delete of conversation ${id}`, () =>
      exec(this.#client.multi().del(keys.conversation).del(keys.order, keys.items, keys.seq, keys.lock)),
    );
    return removed === 1;
  }

  async append(id: string, items: readonly ConversationItem[]): Promise<boolean> {
    const keys = this.#keys(id);
    const args = items.flatMap((item) => [item.id, JSON.stringify(item)]);
    const appended = await this.#run(`append to conversation ${id}`, () =>
      this.#client.eval(APPEND_SCRIPT, 4, keys.conversation, keys.order, keys.items, keys.seq, ...args),
    );
    return appended === 1;
  }

  async items(id: string): Promise<ConversationItem[] | undefined> {
    const keys = this.#keys(id);
    return this.#run(`get of the items of conversation ${id}`, async () => {
      const [exists, ids] = await exec(this.#client.multi().exists(keys.conversation).zrange(keys.order, 0, -1));
      if (exists !== 1) return undefined;
      return this.#bodies(keys.items, ids as string[]);
    });
  }

  async existingIds(id: string, itemIds: readonly string[]): Promise<Set<string>> {
    if (itemIds.length === 0) return new Set();
    const { order } = this.#keys(id);
    const scores = await this.#run(`check of ${itemIds.length} items of conversation ${id}`, () => {
      const read = this.#client.multi();
      for (const itemId of itemIds) read.zscore(order, itemId);
      return exec(read);
    });
    return new Set(itemIds.filter((_, index) => scores[index] !== null));
  }

  async page(id: string, query: ItemPageQuery): Promise<ItemPage | undefined> {
    const keys = this.#keys(id);
    const { after, limit, order } = query;
    const operation = `list of the items of conversation ${id}`;
    // One past the page says whether more follow.
    let ids: string[];
    if (after === undefined) {
      const found = await this.#run(operation, async () => {
        const read = this.#client.multi().exists(keys.conversation);
        if (order === 'asc') read.zrange(keys.order, 0, limit);
        else read.zrevrange(keys.order, 0, limit);
        const [exists, range] = await exec(read);
        return exists === 1 ? (range as string[]) : undefined;
      });
      if (found === undefined) return undefined;
      ids = found;
    } else {
      const [exists, score] = await this.#run(operation, () => exec(this.#client.multi().exists(keys.conversation).zscore(keys.order, after)));
      if (exists !== 1) return undefined;
      // Thrown here, not inside #run, which would make it a StoreUnavailableError.
      if (score === null) throw new UnknownCursorError(after);
      // `(`: strictly after the cursor's place.
      ids = await this.#run(operation, () =>
        order === 'asc'
          ? this.#client.zrangebyscore(keys.order, `(${score}`, '+inf', 'LIMIT', 0, limit + 1)
          : this.#client.zrevrangebyscore(keys.order, `(${score}`, '-inf', 'LIMIT', 0, limit + 1),
      );
    }
    const data = await this.#run(operation, () => this.#bodies(keys.items, ids.slice(0, limit)));
    return { data, has_more: ids.length > limit };
  }

  async item(id: string, itemId: string): Promise<ConversationItem | undefined> {
    const json = await this.#run(`get of item ${itemId} of conversation ${id}`, () => this.#client.hget(this.#keys(id).items, itemId));
    return json === null ? undefined : (JSON.parse(json) as ConversationItem);
  }

  async deleteItem(id: string, itemId: string): Promise<boolean> {
    const keys = this.#keys(id);
    const [removed] = await this.#run(`delete of item ${itemId} of conversation ${id}`, () =>
      exec(this.#client.multi().zrem(keys.order, itemId).hdel(keys.items, itemId)),
    );
    return removed === 1;
  }

  async lock(id: string, ttlMs: number): Promise<(() => Promise<void>) | undefined> {
    const keys = this.#keys(id);
    const token = randomUUID();
    // PX takes a positive whole number of milliseconds.
    const px = Math.max(1, Math.ceil(ttlMs));
    const outcome = await this.#run(`lock of conversation ${id}`, () => this.#client.eval(LOCK_SCRIPT, 2, keys.conversation, keys.lock, token, px));
    // No conversation, nothing to guard: the caller finds it missing when it reads it.
    if (outcome === MISSING) return async () => {};
    if (outcome !== TAKEN) return undefined;
    return async () => {
      await this.#run(`release of the lock of conversation ${id}`, () => this.#client.eval(RELEASE_SCRIPT, 1, keys.lock, token));
    };
  }

  /** The items stored under `ids`, in that order; an id deleted since it was listed is skipped. */
  async #bodies(itemsKey: string, ids: readonly string[]): Promise<ConversationItem[]> {
    if (ids.length === 0) return [];
    const bodies = await this.#client.hmget(itemsKey, ...ids);
    return bodies.filter((json): json is string => json !== null).map((json) => JSON.parse(json) as ConversationItem);
  }

  #keys(id: string) {
    const conversation = `${this.#prefix}conversation:{${id}}`;
    return { conversation, order: `${conversation}:order`, items: `${conversation}:items`, seq: `${conversation}:seq`, lock: `${conversation}:lock` };
  }
}

/** The replies of a transaction: ioredis resolves EXEC with each command's error beside its reply, not rejecting. */
async function exec(transaction: ChainableCommander): Promise<unknown[]> {
  const results = await transaction.exec();
  if (results === null) throw new Error('transaction aborted');
  const failed = results.find(([error]) => error);
  if (failed) throw failed[0];
  return results.map(([, result]) => result);
}
