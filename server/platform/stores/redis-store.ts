import { Redis, type ChainableCommander } from 'ioredis';
import { RedisConversationStore } from './redis-conversations.ts';
import { RedisRecordStore } from './redis-records.ts';
import { RedisSessionEventLog } from './redis-session-events.ts';
import { StoreUnavailableError, UNFINISHED_STATUSES, type ResponseStore, type StoredResponse } from './response-store.ts';

export interface RedisResponseStoreOptions {
  /** Put before every key, so several emulators (or test files) can share one Redis. */
  readonly prefix?: string;
  /** Seconds a stored response lives after its last put; absent means it never expires. */
  readonly ttlSeconds?: number;
  /** Told about each failed connection attempt (ioredis keeps retrying in the background). */
  readonly onConnectionError?: (error: Error) => void;
}

export const DEFAULT_REDIS_PREFIX = 'ptc:';

// A request waits on Redis inside an HTTP request: when Redis is down it must fail quickly with
// an error the client sees, not hang. A command issued while a connection attempt is under way
// (the first request after startup, say) waits for that attempt; if it fails, ioredis rejects
// the queued commands (no retries per request). Between attempts, while ioredis waits to
// reconnect, commands are refused at once (see #run). COMMAND_TIMEOUT_MS bounds the rest,
// including a Redis that accepts connections but never answers.
const MAX_RETRIES_PER_REQUEST = 0;
const CONNECT_TIMEOUT_MS = 2_000;
const COMMAND_TIMEOUT_MS = 5_000;

// Deletes a response (KEYS[1]), the set of its items' ids (KEYS[2]), its status (KEYS[3]) and,
// for each of its items (KEYS[4..] in pairs: the index key, the item's JSON key), both keys when
// the index still names it (ARGV[1]): an item a newer response emitted too stays that response's.
const DELETE_SCRIPT = `
local removed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[3])
for i = 4, #KEYS, 2 do
  if redis.call('GET', KEYS[i]) == ARGV[1] then redis.call('DEL', KEYS[i], KEYS[i + 1]) end
end
return removed`;

// For items a response no longer holds (KEYS in pairs: the index key, the item's JSON key):
// both keys go when the index still names the response (ARGV[1]).
const DROP_ITEMS_SCRIPT = `
for i = 1, #KEYS, 2 do
  if redis.call('GET', KEYS[i]) == ARGV[1] then redis.call('DEL', KEYS[i], KEYS[i + 1]) end
end
return 1`;

/** Throws the first failed command of a transaction's results. */
function throwIfFailed(results: [error: Error | null, result: unknown][] | null): void {
  const failed = results?.find(([error]) => error);
  if (failed) throw failed[0];
}

/**
 * Responses in Redis, one JSON string per key `<prefix>response:<id>` (its status also at
 * `<prefix>response-status:<id>`), and for each output item
 * the id of the response that emitted it at `<prefix>item:<id>` and the item's JSON at
 * `<prefix>item-json:<id>`, and each response's item ids at `<prefix>response-items:<id>` (all
 * with the response's expiry);
 * conversations under `<prefix>conversation:{<id>}` and keys beginning with it, which never
 * expire (see RedisConversationStore); the Agents API's records (RedisRecordStore) and its
 * sessions' live events (RedisSessionEventLog): the store for several emulator instances sharing state.
 * ioredis reconnects forever in the background, so the store recovers by itself when Redis
 * comes back.
 */
export class RedisResponseStore implements ResponseStore {
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #ttlSeconds: number | undefined;
  /** Why the connection is down, to explain the next failed operation; cleared when it is up. */
  #lastConnectionError: Error | undefined;
  /** The connection conditional puts WATCH on, and the queue that runs them on it one at a time. */
  #watcher: Redis | undefined;
  #watchQueue: Promise<void> = Promise.resolve();
  readonly conversations: RedisConversationStore;
  readonly records: RedisRecordStore;
  readonly sessionEvents: RedisSessionEventLog;

  constructor(url: string, options: RedisResponseStoreOptions = {}) {
    const { prefix = DEFAULT_REDIS_PREFIX, ttlSeconds, onConnectionError } = options;
    if (ttlSeconds !== undefined && !(Number.isInteger(ttlSeconds) && ttlSeconds > 0)) {
      throw new RangeError(`Redis TTL must be a positive whole number of seconds, got ${ttlSeconds}`);
    }
    this.#prefix = prefix;
    this.#ttlSeconds = ttlSeconds;
    this.#client = new Redis(url, {
      maxRetriesPerRequest: MAX_RETRIES_PER_REQUEST,
      connectTimeout: CONNECT_TIMEOUT_MS,
      commandTimeout: COMMAND_TIMEOUT_MS,
    });
    // Without a listener ioredis reports every failed connection attempt as an unhandled
    // 'error' event; the failure reaches callers through their rejected operations instead.
    this.#client.on('error', (error: Error) => {
      this.#lastConnectionError = error;
      onConnectionError?.(error);
    });
    this.#client.on('ready', () => {
      this.#lastConnectionError = undefined;
    });
    // The same client and error wrapping: a Redis that is down fails conversations as it fails responses.
    this.conversations = new RedisConversationStore(this.#client, prefix, (operation, command) => this.#run(operation, command));
    this.records = new RedisRecordStore(this.#client, prefix, (operation, command) => this.#run(operation, command));
    // Appends on this client, reads on a connection of its own (made when first needed).
    this.sessionEvents = new RedisSessionEventLog(this.#client, prefix, (operation, command) => this.#run(operation, command));
  }

  async get(id: string): Promise<StoredResponse | undefined> {
    const json = await this.#run(`get of response ${id}`, () => this.#client.get(this.#key(id)));
    return json === null ? undefined : (JSON.parse(json) as StoredResponse);
  }

  async put(stored: StoredResponse): Promise<void> {
    const id = stored.response.id;
    await this.#run(`put of response ${id}`, async () => {
      // The items it held when put before and holds no more (a background response put again):
      // their keys go, unless a newer response emitted them too.
      const before = await this.#client.smembers(this.#itemsOfKey(id));
      // One transaction: the response and its items' keys are written together.
      const write = this.#client.multi();
      this.#queueWrite(write, stored, before);
      throwIfFailed(await write.exec());
    });
  }

  async putIfUnfinished(stored: StoredResponse): Promise<boolean> {
    const id = stored.response.id;
    return this.#run(`conditional put of response ${id}`, () =>
      this.#watched(async (watcher) => {
        for (;;) {
          // A write of the response after WATCH (a cancel on another instance) fails the EXEC.
          await watcher.watch(this.#key(id), this.#statusKey(id));
          let status = await watcher.get(this.#statusKey(id));
          if (status === null) {
            // Put by an earlier version, which kept no status key: read from the body.
            const json = await watcher.get(this.#key(id));
            status = json === null ? null : (JSON.parse(json) as StoredResponse).response.status;
          }
          if (status === null || !UNFINISHED_STATUSES.has(status)) {
            await watcher.unwatch();
            return false;
          }
          const before = await watcher.smembers(this.#itemsOfKey(id));
          const write = watcher.multi();
          this.#queueWrite(write, stored, before);
          const results = await write.exec();
          // Null: written meanwhile; read it again.
          if (results === null) continue;
          throwIfFailed(results);
          return true;
        }
      }),
    );
  }

  /** Adds to `write` the commands that put a response: its body, its status, its items' keys (`before`: the items it held). */
  #queueWrite(write: ChainableCommander, stored: StoredResponse, before: readonly string[]): void {
    const id = stored.response.id;
    const ttlSeconds = this.#ttlSeconds;
    const itemIds = stored.response.output.map((item) => item.id);
    const dropped = before.filter((itemId) => !itemIds.includes(itemId));
    const set = (key: string, value: string) => (ttlSeconds === undefined ? write.set(key, value) : write.set(key, value, 'EX', ttlSeconds));
    set(this.#key(id), JSON.stringify(stored));
    set(this.#statusKey(id), stored.response.status);
    if (dropped.length > 0) {
      const keys = dropped.flatMap((itemId) => [this.#itemKey(itemId), this.#itemJsonKey(itemId)]);
      write.eval(DROP_ITEMS_SCRIPT, keys.length, ...keys, id);
    }
    write.del(this.#itemsOfKey(id));
    if (itemIds.length > 0) {
      write.sadd(this.#itemsOfKey(id), ...itemIds);
      if (ttlSeconds !== undefined) write.expire(this.#itemsOfKey(id), ttlSeconds);
    }
    for (const item of stored.response.output) {
      set(this.#itemKey(item.id), id);
      set(this.#itemJsonKey(item.id), JSON.stringify(item));
    }
  }

  /**
   * Runs `work` on the connection conditional puts WATCH on (made when first needed), one at a
   * time: a WATCH belongs to its connection, so two on one would undo each other.
   */
  #watched<T>(work: (watcher: Redis) => Promise<T>): Promise<T> {
    if (!this.#watcher) {
      this.#watcher = this.#client.duplicate();
      this.#watcher.on('error', () => {});
    }
    const watcher = this.#watcher;
    const run = this.#watchQueue.then(() => work(watcher));
    this.#watchQueue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  async delete(id: string): Promise<boolean> {
    const stored = await this.get(id);
    if (!stored) return false;
    const keys = [
      this.#key(id),
      this.#itemsOfKey(id),
      this.#statusKey(id),
      ...stored.response.output.flatMap((item) => [this.#itemKey(item.id), this.#itemJsonKey(item.id)]),
    ];
    const removed = await this.#run(`delete of response ${id}`, () => this.#client.eval(DELETE_SCRIPT, keys.length, ...keys, id));
    return Number(removed) > 0;
  }

  async outputItemBytes(ids: readonly string[]): Promise<Map<string, number>> {
    const found = new Map<string, number>();
    if (ids.length === 0) return found;
    const lengths = await this.#run(`size of ${ids.length} items`, async () => {
      const pipeline = this.#client.pipeline();
      for (const itemId of ids) pipeline.strlen(this.#itemJsonKey(itemId));
      return ((await pipeline.exec()) ?? []).map(([error, length]) => {
        if (error) throw error;
        return Number(length);
      });
    });
    ids.forEach((itemId, index) => {
      if ((lengths[index] ?? 0) > 0) found.set(itemId, lengths[index]!);
    });
    // Items indexed by an earlier version have no JSON key: the size of the response they are read from.
    const legacy = ids.filter((itemId) => !found.has(itemId));
    if (legacy.length === 0) return found;
    const owners = await this.#run(`get of ${legacy.length} items`, () => this.#client.mget(legacy.map((itemId) => this.#itemKey(itemId))));
    const sizes = await this.#run(`size of ${legacy.length} responses`, async () => {
      const pipeline = this.#client.pipeline();
      for (const owner of owners) pipeline.strlen(this.#key(owner ?? ''));
      return ((await pipeline.exec()) ?? []).map(([error, length]) => {
        if (error) throw error;
        return Number(length);
      });
    });
    legacy.forEach((itemId, index) => {
      if (owners[index] != null && (sizes[index] ?? 0) > 0) found.set(itemId, sizes[index]!);
    });
    return found;
  }

  async outputItems(ids: readonly string[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    if (ids.length === 0) return found;
    const texts = await this.#run(`get of ${ids.length} items`, () => this.#client.mget(ids.map((itemId) => this.#itemJsonKey(itemId))));
    ids.forEach((itemId, index) => {
      const text = texts[index];
      if (text != null) found.set(itemId, text);
    });
    // Items indexed by an earlier version have no JSON key: read from their response's body.
    const legacy = ids.filter((itemId) => !found.has(itemId));
    if (legacy.length === 0) return found;
    const owners = await this.#run(`get of ${legacy.length} items`, () => this.#client.mget(legacy.map((itemId) => this.#itemKey(itemId))));
    const responseIds = [...new Set(owners.filter((owner): owner is string => owner !== null))];
    if (responseIds.length === 0) return found;
    const bodies = await this.#run(`get of ${responseIds.length} responses`, () => this.#client.mget(responseIds.map((responseId) => this.#key(responseId))));
    const outputs = new Map(
      responseIds.map((responseId, index) => [responseId, bodies[index] ? (JSON.parse(bodies[index]) as StoredResponse).response.output : []]),
    );
    legacy.forEach((itemId, index) => {
      const owner = owners[index];
      const item = owner ? outputs.get(owner)?.find((candidate) => candidate.id === itemId) : undefined;
      if (item) found.set(itemId, JSON.stringify(item));
    });
    return found;
  }

  async check(): Promise<void> {
    await this.#run('ping', () => this.#client.ping());
  }

  async close(): Promise<void> {
    await this.sessionEvents.close();
    this.#watcher?.disconnect();
    // QUIT lets Redis finish the commands already sent; if it cannot be sent, just drop the
    // socket, which also stops ioredis from reconnecting.
    try {
      await this.#client.quit();
    } catch {
      this.#client.disconnect();
    }
  }

  #key(id: string): string {
    return `${this.#prefix}response:${id}`;
  }

  /** The status of a response, beside its body: what a conditional put reads. */
  #statusKey(id: string): string {
    return `${this.#prefix}response-status:${id}`;
  }

  #itemKey(id: string): string {
    return `${this.#prefix}item:${id}`;
  }

  #itemJsonKey(id: string): string {
    return `${this.#prefix}item-json:${id}`;
  }

  /** The ids of a response's output items, as it was last put. */
  #itemsOfKey(responseId: string): string {
    return `${this.#prefix}response-items:${responseId}`;
  }

  /**
   * Runs one command, turning its failure into a StoreUnavailableError that names the operation
   * and the cause: every failure of a command is Redis out of reach, or not answering in time.
   */
  async #run<T>(operation: string, command: () => Promise<T>): Promise<T> {
    try {
      // ioredis would queue the command until the next connection attempt, which backs off to
      // seconds apart while Redis stays down.
      if (this.#client.status === 'reconnecting') throw new Error('not connected');
      return await command();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const connection = this.#lastConnectionError ? ` (connection: ${this.#lastConnectionError.message})` : '';
      throw new StoreUnavailableError(`Redis ${operation} failed: ${message}${connection}`, { cause: error });
    }
  }
}
