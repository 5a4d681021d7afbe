import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const POOL = new URL('../runtime/worker/worker-pool.ts', import.meta.url).href;
const LIMITS = new URL('../runtime/limits.ts', import.meta.url).href;

/**
 * A process that owns a pool of one worker, started under the NODE_OPTIONS given: it runs one
 * program, closes the pool (its worker exits by itself) and prints the worker's pid and the
 * program's outcome.
 */
async function poolProcess(nodeOptions: string): Promise<{ pid: number; outcome: string }> {
  const script = `
    import { WorkerPool } from ${JSON.stringify(POOL)};
    import { DEFAULT_LIMITS } from ${JSON.stringify(LIMITS)};
    const pool = new WorkerPool({ size: 1, heartbeatMs: 500, heartbeatTimeoutMs: 60_000, maxRssBytes: 2 ** 31, maxIdleCpuShare: 1,
      runtime: { pausedTtlMs: 60_000, maxPausedPrograms: 10, maxPausedHeapBytes: 2 ** 30, warmIsolates: 1 } });
    const event = await pool.start('p', { code: "text('ok')", tools: [], seed: 1, clock: 0, limits: DEFAULT_LIMITS });
    const [pid] = pool.pids;
    await pool.close();
    console.log(JSON.stringify({ pid, outcome: event.type }));`;
  // The timeout kills the process if it hangs; its worker then sees the channel close and exits.
  const { stdout } = await run(process.execPath, ['--no-node-snapshot', '--import', 'tsx', '--input-type=module', '-e', script], {
    env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: nodeOptions },
    timeout: 120_000,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as { pid: number; outcome: string };
}

/** Profiles in `dir` by the pid in their name (CPU.<date>.<time>.<pid>.<thread>.<sequence>.cpuprofile). */
const profilePids = (dir: string): string[] => readdirSync(dir).map((file) => file.split('.')[3]!);

describe('a pool owner run under --cpu-prof', () => {
  it("passes its profiling flags on to its workers, which write their profiles as they exit (bench:profile's worker figures)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ptc-worker-profiles-'));
    try {
      const { pid, outcome } = await poolProcess(`--cpu-prof --cpu-prof-dir=${dir}`);
      expect(outcome).toBe('completed');
      expect(profilePids(dir)).toContain(String(pid));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
