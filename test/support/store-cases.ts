import { mkdtempSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { createResponseStore, type StoreKind } from '../../server/platform/stores/create-store.ts';
import type { ResponseStore } from '../../server/platform/stores/response-store.ts';
import { startTestRedis, type TestRedis } from './redis.ts';

export interface StoreCase {
  readonly kind: StoreKind;
  /** Why this store cannot be tested here; undefined when it can. */
  readonly skipReason: string | undefined;
  /** A fresh, empty place for a store to live: a new data directory or a new key prefix. */
  newPlace(): string;
  /** Opens the store at a place, through the same factory the server uses. */
  open(place: string): ResponseStore;
}

export interface StoreCases {
  /** Memory, SQLite and Redis, in that order. */
  readonly cases: readonly StoreCase[];
  /** The test Redis, when there is one (startTestRedis). */
  readonly redis: TestRedis | undefined;
  /** The test file's temporary directory (set once its beforeAll ran). */
  tempDir(): string;
  /** Closes `store` after the running test, whatever happened. */
  tracked<T extends ResponseStore>(store: T): T;
}

/**
 * Every store kind, each opened in a fresh place per test, for a test file that checks a
 * contract on all of them. Registers the file's hooks: a temporary directory made before its
 * tests and removed after, the stores a test opened closed after it, the test Redis stopped.
 */
export async function storeCases(tempPrefix: string): Promise<StoreCases> {
  const redis = await startTestRedis();
  afterAll(() => redis?.stop());
  let tempDir = '';
  beforeAll(async () => {
    tempDir = await mkdtemp(join(tmpdir(), tempPrefix));
  });
  afterAll(() => rm(tempDir, { recursive: true, force: true }));
  const opened: ResponseStore[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((store) => store.close()));
  });
  const tracked = <T extends ResponseStore>(store: T): T => {
    opened.push(store);
    return store;
  };
  let placeCounter = 0;
  const cases: readonly StoreCase[] = [
    { kind: 'memory', skipReason: undefined, newPlace: () => '', open: () => tracked(createResponseStore({ kind: 'memory', dataDir: tempDir })) },
    {
      kind: 'sqlite',
      skipReason: undefined,
      newPlace: () => join(tempDir, `data-${++placeCounter}`),
      open: (dataDir) => tracked(createResponseStore({ kind: 'sqlite', dataDir })),
    },
    {
      kind: 'redis',
      skipReason: redis ? undefined : 'no Redis available (see the warning above)',
      newPlace: () => `${redis?.keyPrefix}${++placeCounter}:`,
      open: (redisPrefix) => tracked(createResponseStore({ kind: 'redis', dataDir: tempDir, redisUrl: redis?.url, redisPrefix })),
    },
  ];
  return { cases, redis, tempDir: () => tempDir, tracked };
}

export interface ServerStores {
  /** Each store kind, and whether it can be tested here (Redis needs a Redis): for describe.each. */
  readonly stores: [StoreKind, boolean][];
  /** A server's store settings for `store` in a place of its own: a new data directory, a new Redis key prefix. */
  configFor(store: StoreKind): { store: StoreKind; dataDir: string; redisUrl: string | undefined; redisPrefix: string };
}

/**
 * Every store kind for a test file that runs servers on each: registers the hooks that stop
 * the test Redis and remove the file's data directories after its tests.
 */
export async function serverStores(tempPrefix: string): Promise<ServerStores> {
  const redis = await startTestRedis();
  const dataRoot = mkdtempSync(join(tmpdir(), tempPrefix));
  afterAll(async () => {
    await redis?.stop();
    rmSync(dataRoot, { recursive: true, force: true });
  });
  let placeCounter = 0;
  return {
    stores: [
      ['memory', true],
      ['sqlite', true],
      ['redis', redis !== undefined],
    ],
    configFor(store) {
      const place = ++placeCounter;
      return { store, dataDir: join(dataRoot, `data-${place}`), redisUrl: redis?.url, redisPrefix: `${redis?.keyPrefix}${place}:` };
    },
  };
}
