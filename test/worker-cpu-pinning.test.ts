import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_LIMITS } from '../runtime/limits.ts';
import { allowedCpus, cpusToPinTo, parseCpuList } from '../runtime/worker/cpu-pinning.ts';
import { WorkerPool, type WorkerPoolOptions } from '../runtime/worker/worker-pool.ts';
import { loadConfig } from '../server/platform/config.ts';
import { spawnServer } from './support/server-process.ts';

const SUPERVISION = { heartbeatMs: 100, heartbeatTimeoutMs: 60_000, maxRssBytes: 2 ** 31, maxIdleCpuShare: 1 };
const RUNTIME = { pausedTtlMs: 60_000, maxPausedPrograms: 10, maxPausedHeapBytes: 2 ** 30, warmIsolates: 1 };

/** The CPU list of every thread of process `pid`, one entry per distinct list (threads that end meanwhile are skipped). */
function threadCpus(pid: number): string[] {
  const lists = new Set<string>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let status: string;
    try {
      status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
    } catch {
      continue;
    }
    const list = /^Cpus_allowed_list:\s*(\S+)\s*$/m.exec(status)?.[1];
    if (list === undefined) throw new Error(`no Cpus_allowed_list for thread ${tid} of ${pid}`);
    lists.add(list);
  }
  return [...lists];
}

const pools: WorkerPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

async function readyPool(options: Partial<WorkerPoolOptions> & { size: number }): Promise<WorkerPool> {
  const pool = new WorkerPool({ ...SUPERVISION, runtime: RUNTIME, ...options });
  pools.push(pool);
  await pool.ready();
  return pool;
}

const linux = process.platform === 'linux';
const CPUS = allowedCpus();
/** This process's own CPU list, as its threads' status shows it. */
const OWN = linux ? threadCpus(process.pid)[0]! : '';

describe('which CPUs a pool is pinned to', () => {
  it('reads kernel CPU lists', () => {
    expect(parseCpuList('0-3,8,10-11')).toEqual([0, 1, 2, 3, 8, 10, 11]);
    expect(parseCpuList('5')).toEqual([5]);
    expect(parseCpuList('3-1')).toBeUndefined();
    expect(parseCpuList('0,x')).toBeUndefined();
  });

  it('pins only a pool that fills every CPU of the server evenly, with nothing narrowing them', () => {
    expect(cpusToPinTo(2, [0, 1], 2)).toEqual([0, 1]);
    expect(cpusToPinTo(4, [2, 3], 2)).toEqual([2, 3]);
    // Fewer workers than CPUs: pinned, they would leave CPUs no isolate may use.
    expect(cpusToPinTo(1, [0, 1], 2)).toEqual([]);
    expect(cpusToPinTo(2, [0, 1, 2, 3], 4)).toEqual([]);
    // More, not a multiple: some CPUs would carry more workers than others.
    expect(cpusToPinTo(3, [0, 1], 2)).toEqual([]);
    // A CPU quota (or CPUs offline): Node counts fewer than the mask lists.
    expect(cpusToPinTo(2, [0, 1, 2, 3], 2)).toEqual([]);
    // One CPU: nothing to gain.
    expect(cpusToPinTo(1, [0], 1)).toEqual([]);
  });

  it.skipIf(!linux)("lists the CPUs this process may run on, as taskset reads this process's affinity", () => {
    const reported = /list:\s*(\S+)\s*$/.exec(execFileSync('taskset', ['-c', '-p', String(process.pid)], { encoding: 'utf8' }))?.[1];
    expect(CPUS).toEqual(parseCpuList(reported ?? ''));
  });

  it('is on or off (PTC_WORKER_CPU_PINNING), and nothing else', () => {
    expect(loadConfig({}).workerCpuPinning).toBe(true);
    expect(loadConfig({ PTC_WORKER_CPU_PINNING: 'off' }).workerCpuPinning).toBe(false);
    expect(() => loadConfig({ PTC_WORKER_CPU_PINNING: 'yes' })).toThrow('PTC_WORKER_CPU_PINNING must be "on" or "off", got "yes"');
  });
});

// A pool of one worker per CPU, as the server's default is. CI's machine has two CPUs; this
// says nothing on a machine where the pool would not be pinned, or that has many CPUs.
const PER_CPU = cpusToPinTo(CPUS.length).length;
describe.skipIf(!linux || PER_CPU < 2 || PER_CPU > 4)('workers pinned to CPUs', () => {
  it('pins each worker, every thread of it, to a CPU of its own, in turn', async () => {
    const pool = await readyPool({ size: PER_CPU });
    expect(pool.pids.map(threadCpus)).toEqual(CPUS.map((cpu) => [String(cpu)]));
    // A program runs there as anywhere, and the threads isolated-vm starts for it stay pinned.
    const event = await pool.start('p', { code: "text('ok')", tools: [], seed: 1, clock: 0, limits: DEFAULT_LIMITS });
    expect(event.type).toBe('completed');
    expect(pool.pids.map(threadCpus)).toEqual(CPUS.map((cpu) => [String(cpu)]));
  }, 120_000);

  it("pins a worker's replacement to the CPU of the worker it replaces", async () => {
    const pool = await readyPool({ size: PER_CPU });
    const dead = pool.pids[1]!;
    process.kill(dead, 'SIGKILL');
    // Replaced at once, in the same slot (the second).
    await vi.waitFor(() => expect(pool.pids[1]).not.toBe(dead), { timeout: 60_000, interval: 20 });
    await pool.ready();
    expect(threadCpus(pool.pids[1]!)).toEqual([String(CPUS[1])]);
  }, 120_000);

  it('leaves workers where the kernel puts them with pinCpus: false, or fewer workers than CPUs', async () => {
    for (const pool of [await readyPool({ size: PER_CPU, pinCpus: false }), await readyPool({ size: PER_CPU - 1 })]) {
      for (const pid of pool.pids) expect(threadCpus(pid)).toEqual([OWN]);
    }
  }, 120_000);

  it('serve pins its workers unless PTC_WORKER_CPU_PINNING=off', async () => {
    for (const [setting, pinned] of [
      ['on', true],
      ['off', false],
    ] as const) {
      const server = await spawnServer({ PTC_STORE: 'memory', PTC_WORKERS: String(PER_CPU), PTC_WORKER_CPU_PINNING: setting });
      try {
        const health = (await (await fetch(`${server.baseURL.replace(/\/v1$/, '')}/health`)).json()) as { workers: number[] };
        expect(health.workers.map(threadCpus)).toEqual(CPUS.map((cpu) => [pinned ? String(cpu) : OWN]));
      } finally {
        await server.stop();
      }
    }
  }, 180_000);

  it('serves unpinned where there is no taskset, and its log says so once', async () => {
    const noTaskset = mkdtempSync(join(tmpdir(), 'ptc-no-taskset-'));
    try {
      const server = await spawnServer({ PATH: noTaskset, PTC_STORE: 'memory', PTC_WORKERS: String(PER_CPU) });
      try {
        const health = (await (await fetch(`${server.baseURL.replace(/\/v1$/, '')}/health`)).json()) as { workers: number[] };
        expect(health.workers.map(threadCpus)).toEqual(CPUS.map(() => [OWN]));
        const warnings = server
          .output()
          .split('\n')
          .filter((line) => line.includes('workers are not pinned to CPUs'));
        expect(warnings).toHaveLength(1);
        expect(warnings[0]).toContain('taskset');
      } finally {
        await server.stop();
      }
    } finally {
      rmSync(noTaskset, { recursive: true, force: true });
    }
  }, 180_000);
});
