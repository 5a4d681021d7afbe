import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

/**
 * vitest's global setup: after the whole run, no process a test started may still be running.
 * A test's processes are recognised by their command line: a Node process running a script of
 * this checkout (workers, the CLI, fixtures, example clients; not vitest itself), or a
 * redis-server this run spawned (noted in suiteDir()). Those already running
 * when the suite started (a server a developer left up) are not the suite's. Leftovers get a few seconds to exit (a worker stops
 * when its parent's channel closes), then are killed and fail the run, named.
 */

const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url));
const GRACE_MS = 5_000;

function commandLines(): Map<number, string> {
  const found = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
      if (command) found.set(pid, command);
    } catch {
      // It exited while being read.
    }
  }
  return found;
}

/**
 * vitest.config.ts puts this run's id (the process id of the run, this process) in every test
 * worker's environment, and test/support/redis.ts notes each redis-server it spawns in
 * `suiteDir()`: a redis-server is this suite's when it is noted there (another suite running
 * beside it, or a CI's own Redis, started after this one began, is not). redis-server rewrites
 * its command line and environment for its title, so neither can tell.
 */
export const SUITE_MARK = 'PTC_TEST_SUITE';

/** Where this run's redis-servers are noted, one empty file per process id. */
export function suiteDir(run: string): string {
  return join(tmpdir(), `ptc-test-suite-${run}`);
}

const noted = (): Set<number> => {
  try {
    return new Set(readdirSync(suiteDir(String(process.pid))).map(Number));
  } catch {
    return new Set();
  }
};

function startedByTests(pid: number, command: string, redisServers: ReadonlySet<number>): boolean {
  if (/\bvitest\b/.test(command)) return false;
  if (/(^|\/)redis-server\b/.test(command)) return redisServers.has(pid);
  return /(^|\/)node\b/.test(command) && command.includes(CHECKOUT);
}

function candidates(): Map<number, string> {
  const redisServers = noted();
  return new Map([...commandLines()].filter(([pid, command]) => startedByTests(pid, command, redisServers)));
}

let before = new Set<number>();

export function setup(): void {
  before = new Set(candidates().keys());
}

export async function teardown(): Promise<void> {
  const leftovers = (): [number, string][] => [...candidates()].filter(([pid]) => !before.has(pid));
  const deadline = Date.now() + GRACE_MS;
  while (leftovers().length > 0 && Date.now() < deadline) await sleep(100);
  const left = leftovers();
  rmSync(suiteDir(String(process.pid)), { recursive: true, force: true });
  if (left.length === 0) return;
  for (const [pid] of left) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  // vitest reports an error thrown here but exits 0 for it: the exit code is set as well.
  process.exitCode = 1;
  throw new Error(
    `Processes started by the tests outlived the suite (now killed):\n${left.map(([pid, command]) => `  ${pid} ${command.slice(0, 200)}`).join('\n')}`,
  );
}
