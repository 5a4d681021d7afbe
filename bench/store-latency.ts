import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Redis } from 'ioredis';
import type OpenAI from 'openai';
import type { Response, ResponseCreateParamsNonStreaming } from 'openai/resources/responses/responses';
import type { ServerConfig } from '../server/platform/config.ts';
import type { StoreKind } from '../server/platform/stores/create-store.ts';
import { inlineProgram } from '../test/support/programs.ts';
import { startTestRedis, type TestRedis } from '../test/support/redis.ts';
import { startServer, type RunningServer } from '../test/support/server.ts';
import type { MeasureOptions } from './measure.ts';
import { benchServerConfig, LOOP_PROGRAM, LOOP_TOOLS, TOOL } from './resume-program.ts';
import { measureRoundRobin, type Stage } from './staged-measure.ts';

type Progress = (message: string) => void;

/** One row of Table 2: a store and a kind of request, measured or skipped with the reason. */
export interface StoreLatencyRow {
  readonly store: StoreKind;
  readonly request: string;
  readonly samples?: number[];
  readonly skipped?: string;
}

export interface StoreLatencyResult {
  readonly rows: StoreLatencyRow[];
  /** Where each store lived and what version ran it. */
  readonly notes: string[];
}

/** Depth of the longer stored chain a continuation walks (one store read per response). */
export const LONG_CHAIN = 10;

/**
 * A small cache bound on every Table 2 server alike: each program turn starts a program that
 * stays paused, and without a bound hundreds of idle isolates would pile up over the run.
 */
export const PAUSED_PROGRAMS_KEPT = 16;

interface StoreServer {
  readonly store: StoreKind;
  readonly server: RunningServer;
  /** Tips of stored `previous_response_id` chains, by depth. */
  readonly chainTips: ReadonlyMap<number, string>;
  /** The last response each kind of request stored, read back at the end. */
  readonly lastIds: Map<string, string>;
}

function create(client: OpenAI, body: Omit<ResponseCreateParamsNonStreaming, 'model' | 'store'>): Promise<Response> {
  return client.responses.create({ model: 'ptc-emulator', store: true, ...body });
}

function expectOutput(label: string, response: Response, types: string, previous: string | null): void {
  const got = response.output.map((item) => item.type).join(', ');
  if (got !== types || (response.previous_response_id ?? null) !== previous) {
    throw new Error(`${label}: expected ${types} after ${previous ?? 'nothing'}, got ${got} (previous_response_id ${String(response.previous_response_id)})`);
  }
}

/** A chain of `depth` stored message turns; returns the id of its last response. */
async function storeChain(client: OpenAI, depth: number): Promise<string> {
  let previous: string | null = null;
  for (let turn = 0; turn < depth; turn++) {
    const response: Response = await create(client, { input: `turn ${turn}`, ...(previous ? { previous_response_id: previous } : {}) });
    expectOutput(`storing a chain of ${depth}`, response, 'message', previous);
    previous = response.id;
  }
  return previous!;
}

/** The kinds of request Table 2 times, each one `store: true`. */
const REQUESTS: readonly { readonly name: string; readonly stage: (target: StoreServer) => Stage<Response> }[] = [
  {
    name: 'message turn ("hello", no tools)',
    stage: (target) => ({
      timed: () => create(target.server.client, { input: 'hello' }),
      check: (response) => expectOutput(`${target.store} message turn`, response, 'message', null),
    }),
  },
  {
    name: `program turn (starts, pauses on ${TOOL})`,
    stage: (target) => ({
      timed: () => create(target.server.client, { input: inlineProgram(LOOP_PROGRAM), tools: LOOP_TOOLS }),
      check: (response) => expectOutput(`${target.store} program turn`, response, 'program, function_call', null),
    }),
  },
  ...[1, LONG_CHAIN].map((depth) => ({
    name: `continuation (previous_response_id, chain of ${depth})`,
    stage: (target: StoreServer): Stage<Response> => {
      const tip = target.chainTips.get(depth)!;
      return {
        timed: () => create(target.server.client, { input: 'hello again', previous_response_id: tip }),
        check: (response) => expectOutput(`${target.store} continuation of ${depth}`, response, 'message', tip),
      };
    },
  })),
];

/** The Redis Table 2 uses, or why there is none (startTestRedis: PTC_TEST_REDIS_URL, else redis-server on PATH). */
async function redisOrReason(): Promise<{ redis: TestRedis } | { reason: string }> {
  try {
    const redis = await startTestRedis();
    if (redis) return { redis };
    return { reason: 'PTC_TEST_REDIS_URL is not set and no redis-server is on PATH' };
  } catch (error) {
    return { reason: error instanceof Error ? error.message : String(error) };
  }
}

function sqliteVersion(): string {
  const db = new DatabaseSync(':memory:');
  try {
    return String(db.prepare('SELECT sqlite_version() AS version').get()?.version);
  } finally {
    db.close();
  }
}

/** Redis's version, for the notes; then every key this run wrote (all under its unique prefix) is deleted. */
async function redisVersionAndCleanUp(redis: TestRedis): Promise<string> {
  const client = new Redis(redis.url, { maxRetriesPerRequest: 0 });
  try {
    const info = await client.info('server');
    const version = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${redis.keyPrefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await client.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    return version;
  } finally {
    client.disconnect();
  }
}

/**
 * Table 2: what a store adds to a request. One server per store (memory, the baseline; SQLite in
 * a fresh temporary data directory; Redis when one is available), identical otherwise, each
 * timed with `store: true` requests: a plain message turn, a program turn that pauses, and
 * `previous_response_id` continuations that read a stored chain of 1 and of LONG_CHAIN
 * responses. Servers are measured in round-robin so drift falls on all stores alike.
 */
export async function measureStoreLatency(options: MeasureOptions, progress: Progress): Promise<StoreLatencyResult> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ptc-bench-resume-'));
  const fingerprintKey = randomUUID();
  const notes: string[] = [`sqlite: node:sqlite, SQLite ${sqliteVersion()}, file in ${dataDir} (WAL, synchronous=NORMAL)`];
  const rows: StoreLatencyRow[] = [];
  const targets: StoreServer[] = [];
  progress('stores: starting Redis (if available)');
  const redisResult = await redisOrReason();
  const redis = 'redis' in redisResult ? redisResult.redis : undefined;
  try {
    const configs: [StoreKind, Partial<ServerConfig>][] = [
      ['memory', {}],
      ['sqlite', { dataDir }],
    ];
    if (redis) configs.push(['redis', { redisUrl: redis.url, redisPrefix: redis.keyPrefix }]);
    for (const [store, overrides] of configs) {
      const server = await startServer({
        logger: false,
        config: benchServerConfig({ fingerprintKey, store, maxPausedPrograms: PAUSED_PROGRAMS_KEPT, ...overrides }),
      });
      targets.push({ store, server, chainTips: new Map(), lastIds: new Map() });
    }
    for (const target of targets) {
      const tips = target.chainTips as Map<number, string>;
      for (const depth of [1, LONG_CHAIN]) tips.set(depth, await storeChain(target.server.client, depth));
    }

    for (const kind of REQUESTS) {
      progress(`stores: ${kind.name}`);
      const stages = targets.map((target): Stage<Response> => {
        const stage = kind.stage(target);
        return {
          timed: () => stage.timed(),
          check: async (response) => {
            await stage.check?.(response);
            target.lastIds.set(kind.name, response.id);
          },
        };
      });
      const samples = await measureRoundRobin(stages, options);
      targets.forEach((target, index) => rows.push({ store: target.store, request: kind.name, samples: samples[index]! }));
    }

    // What was stored can be read back, on every store: the writes really happened.
    for (const target of targets) {
      for (const [kind, id] of target.lastIds) {
        const stored = await target.server.client.responses.retrieve(id);
        if (stored.id !== id) throw new Error(`${target.store}: ${kind}: stored response ${id} reads back as ${stored.id}`);
      }
    }
  } finally {
    for (const target of targets) await target.server.close();
    rmSync(dataDir, { recursive: true, force: true });
    if (redis) {
      notes.push(
        `redis: Redis ${await redisVersionAndCleanUp(redis)} at ${redis.url} (${process.env['PTC_TEST_REDIS_URL'] ? 'PTC_TEST_REDIS_URL' : 'a redis-server started for this run, no persistence'}), keys under ${redis.keyPrefix}`,
      );
      await redis.stop();
    }
  }
  if (!redis) {
    const reason = 'reason' in redisResult ? redisResult.reason : 'unknown';
    rows.push({ store: 'redis', request: '(all)', skipped: `skipped: ${reason}` });
  }
  return { rows, notes };
}
