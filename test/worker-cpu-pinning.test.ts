import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_LIMITS } from '../runtime/limits.ts';
import { allowedCpus } from '../runtime/worker/cpu-pinning.ts';
import { WorkerPool, type WorkerPoolOptions } from '../runtime/worker/worker-pool.ts';
import { loadConfig } from '../server/platform/config.ts';
import { spawnServer } from './support/server-process.ts';

const SUPERVISION = { heartbeatMs: 100, heartbeatTimeoutMs: 60_000, maxRssBytes: 2 ** 31, maxIdleCpuShare: 1 };
const RUNTIME = { pausedTtlMs: 60_000, maxPausedPrograms: 10, maxPausedHeapBytes: 2 ** 30, warmIsolates: 1 };

/** The CPUs a thread may run on, from its status file (`/proc/<pid>/task/<tid>/status`). */
function cpusOf(statusPath: string): string {
  const list = /^Cpus_allowed_list:\s*(\S+)\s*$/m.exec(readFileSync(statusPath, 'utf8'))?.[1];
  if (list === undefined) throw new Error(`no Cpus_allowed_list in ${statusPath}`);
  return list;
}

/** The CPU list of every thread of process `pid`, one entry per distinct list. */
const threadCpus = (pid: number): string[] => [...new Set(readdirSync(`/proc/${pid}/task`).map((tid) => cpusOf(`/proc/${pid}/task/${tid}/status`)))];

const pools: WorkerPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

async function readyPool(options: Partial<WorkerPoolOptions>): Promise<WorkerPool> {
  const pool = new WorkerPool({ ...SUPERVISION, size: 2, runtime: RUNTIME, ...options });
  pools.push(pool);
  await pool.ready();
  return pool;
}

const linux = process.platform === 'linux';
const ownCpus = linux ? cpusOf('/proc/self/status') : '';

describe('allowedCpus', () => {
  it.skipIf(!linux)('lists the CPUs this process may run on, as the kernel counts them', () => {
    const cpus = allowedCpus();
    expect(cpus.length).toBe(availableParallelism());
    expect(new Set(cpus).size).toBe(cpus.length);
  });
});

// CI's machine has two CPUs; on one CPU nothing is pinned, and this says nothing.
describe.skipIf(!linux || allowedCpus().length < 2)('workers pinned to CPUs', () => {
  it('pins each worker, every thread of it, to a CPU of its own, in turn', async () => {
    const pool = await readyPool({});
    const [first, second] = allowedCpus();
    const pids = pool.pids;
    expect(pids).toHaveLength(2);
    expect(threadCpus(pids[0]!)).toEqual([String(first)]);
    expect(threadCpus(pids[1]!)).toEqual([String(second)]);
    // A program runs there as anywhere.
    const event = await pool.start('p', { code: "text('ok')", tools: [], seed: 1, clock: 0, limits: DEFAULT_LIMITS });
    expect(event.type).toBe('completed');
    // The threads isolated-vm started for the program's steps are pinned as well.
    for (const pid of pids) expect(threadCpus(pid)).toHaveLength(1);
  }, 120_000);

  it("pins a worker's replacement to the CPU of the worker it replaces", async () => {
    const pool = await readyPool({});
    const [, second] = allowedCpus();
    const dead = pool.pids[1]!;
    process.kill(dead, 'SIGKILL');
    // Replaced at once, in the same slot (the second).
    await vi.waitFor(() => expect(pool.pids[1]).not.toBe(dead), { timeout: 60_000, interval: 20 });
    await pool.ready();
    expect(pool.pids).toHaveLength(2);
    expect(threadCpus(pool.pids[1]!)).toEqual([String(second)]);
  }, 120_000);

  it('leaves workers where the kernel puts them with pinCpus: false (PTC_WORKER_CPU_PINNING=off)', async () => {
    const pool = await readyPool({ pinCpus: false });
    for (const pid of pool.pids) expect(threadCpus(pid)).toEqual([ownCpus]);
  }, 120_000);

  it('serve pins its workers unless PTC_WORKER_CPU_PINNING=off', async () => {
    for (const [setting, pinned] of [
      ['on', true],
      ['off', false],
    ] as const) {
      const server = await spawnServer({ PTC_WORKERS: '2', PTC_WORKER_CPU_PINNING: setting });
      try {
        const health = (await (await fetch(`${server.baseURL.replace(/\/v1$/, '')}/health`)).json()) as { workers: number[] };
        expect(health.workers).toHaveLength(2);
        const lists = health.workers.map((pid) => threadCpus(pid));
        if (pinned)
          expect(lists).toEqual(
            allowedCpus()
              .slice(0, 2)
              .map((cpu) => [String(cpu)]),
          );
        else expect(lists).toEqual([[ownCpus], [ownCpus]]);
      } finally {
        await server.stop();
      }
    }
  }, 180_000);
});

describe('PTC_WORKER_CPU_PINNING', () => {
  it('is on or off, and nothing else', () => {
    expect(loadConfig({ PTC_WORKER_CPU_PINNING: 'off' }).workerCpuPinning).toBe(false);
    expect(loadConfig({}).workerCpuPinning).toBe(true);
    expect(() => loadConfig({ PTC_WORKER_CPU_PINNING: 'yes' })).toThrow('PTC_WORKER_CPU_PINNING must be "on" or "off", got "yes"');
  });
});
