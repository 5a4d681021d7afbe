import { join } from 'node:path';
import { MemoryResponseStore } from './memory-store.ts';
import { RedisResponseStore } from './redis-store.ts';
import type { ResponseStore } from './response-store.ts';
import { SqliteResponseStore } from './sqlite-store.ts';

/** The stores the emulator can keep `store: true` responses in; config validates against this. */
export const STORE_KINDS = ['memory', 'sqlite', 'redis'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

/** The SQLite store's file name inside the data directory. */
export const SQLITE_FILE_NAME = 'ptc-emulator.sqlite';

export interface CreateResponseStoreOptions {
  readonly kind: StoreKind;
  /** Where durable local state lives (`PTC_DATA_DIR`); the SQLite file goes here. */
  readonly dataDir: string;
  /** Required for `redis`, e.g. `redis://127.0.0.1:6379/0`. */
  readonly redisUrl?: string;
  /** Key prefix in Redis; defaults to `ptc:`. */
  readonly redisPrefix?: string;
  /** Seconds a response lives in Redis; absent means forever. */
  readonly redisTtlSeconds?: number;
}

export function createResponseStore(options: CreateResponseStoreOptions): ResponseStore {
  switch (options.kind) {
    case 'memory':
      return new MemoryResponseStore();
    case 'sqlite':
      return new SqliteResponseStore(join(options.dataDir, SQLITE_FILE_NAME));
    case 'redis': {
      if (!options.redisUrl) {
        throw new Error('The redis response store needs a Redis URL (e.g. redis://127.0.0.1:6379), and none was given');
      }
      return new RedisResponseStore(options.redisUrl, { prefix: options.redisPrefix, ttlSeconds: options.redisTtlSeconds });
    }
  }
}
