import { Redis } from 'ioredis';
import { StoreUnavailableError, type ResponseStore, type StoredResponse } from './response-store.ts';

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

/**
 * Responses in Redis, one JSON string per key `<prefix>response:<id>`: the store for several
 * emulator instances sharing state. ioredis reconnects forever in the background, so the store
 * recovers by itself when Redis comes back.
 */
export class RedisResponseStore implements ResponseStore {
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #ttlSeconds: number | undefined;
  /** Why the connection is down, to explain the next failed operation; cleared when it is up. */
  #lastConnectionError: Error | undefined;

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
  }

  async get(id: string): Promise<StoredResponse | undefined> {
    const json = await this.#run(`get of response ${id}`, () => this.#client.get(this.#key(id)));
    return json === null ? undefined : (JSON.parse(json) as StoredResponse);
  }

  async put(stored: StoredResponse): Promise<void> {
    const id = stored.response.id;
    const json = JSON.stringify(stored);
    const ttlSeconds = this.#ttlSeconds;
    await this.#run(`put of response ${id}`, () =>
      ttlSeconds === undefined ? this.#client.set(this.#key(id), json) : this.#client.set(this.#key(id), json, 'EX', ttlSeconds),
    );
  }

  async delete(id: string): Promise<boolean> {
    return (await this.#run(`delete of response ${id}`, () => this.#client.del(this.#key(id)))) > 0;
  }

  async check(): Promise<void> {
    await this.#run('ping', () => this.#client.ping());
  }

  async close(): Promise<void> {
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
