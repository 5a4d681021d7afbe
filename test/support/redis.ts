import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { accessSync, constants, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { SUITE_MARK, suiteDir } from './no-process-left.ts';

export interface TestRedis {
  readonly url: string;
  /**
   * A key prefix no other test file uses: test files run in parallel against one Redis when
   * CI provides it, so each keeps to its own keys.
   */
  readonly keyPrefix: string;
  /** Stops the redis-server this helper started; a Redis given by URL is left running. */
  stop(): Promise<void>;
}

const STARTUP_DEADLINE_MS = 10_000;
const START_ATTEMPTS = 3;

/**
 * A real Redis for tests: the one `PTC_TEST_REDIS_URL` names (CI starts it), else a
 * redis-server spawned on a free loopback port, else undefined (with a warning saying why) so
 * suites can `describe.skipIf(!redis)`. A URL that is set but does not answer is an error, not
 * a skip: CI meant to run these tests.
 */
export async function startTestRedis(): Promise<TestRedis | undefined> {
  const keyPrefix = `ptc-test:${randomUUID()}:`;
  const givenUrl = process.env.PTC_TEST_REDIS_URL;
  if (givenUrl) {
    if (!(await answersPing(givenUrl, STARTUP_DEADLINE_MS))) {
      throw new Error(`PTC_TEST_REDIS_URL=${givenUrl} does not answer PING`);
    }
    return { url: givenUrl, keyPrefix, stop: async () => {} };
  }
  if (redisServerBinary() === undefined) {
    console.warn('Redis tests skipped: PTC_TEST_REDIS_URL is not set and no redis-server is on PATH (apt-get install redis-server)');
    return undefined;
  }
  // The free port is found by binding and releasing it, so another process can take it before
  // redis-server binds it: try again on a new port if that happens.
  let lastFailure: unknown;
  for (let attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
    try {
      return { ...(await spawnRedisServer(await freeLoopbackPort())), keyPrefix };
    } catch (error) {
      lastFailure = error;
    }
  }
  const reason = lastFailure instanceof Error ? lastFailure.message : String(lastFailure);
  throw new Error(`redis-server did not start after ${START_ATTEMPTS} attempts; last: ${reason}`);
}

/** The redis-server on PATH, if there is one. */
export function redisServerBinary(): string | undefined {
  return findOnPath('redis-server');
}

/** A loopback port nothing listens on right now. */
export async function freeLoopbackPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A throwaway redis-server on a loopback port, answering PING when this resolves. */
export async function spawnRedisServer(port: number): Promise<Omit<TestRedis, 'keyPrefix'>> {
  const binary = redisServerBinary();
  if (binary === undefined) throw new Error('no redis-server on PATH');
  // No RDB snapshots and no AOF: nothing is written to disk, and shutdown never waits on a save.
  const child = spawn(binary, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Noted as this run's, for the global teardown (no-process-left.ts).
  const run = process.env[SUITE_MARK];
  if (run && child.pid !== undefined) {
    mkdirSync(suiteDir(run), { recursive: true });
    writeFileSync(join(suiteDir(run), String(child.pid)), '');
  }
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // A test worker that dies without running afterAll must not leave the server behind.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const stop = async () => {
    process.off('exit', killOnExit);
    await stopChild(child, exited);
  };

  const url = `redis://127.0.0.1:${port}`;
  const up = await Promise.race([answersPing(url, STARTUP_DEADLINE_MS), exited.then(() => false)]);
  if (!up) {
    await stop();
    throw new Error(`redis-server on port ${port} did not come up: ${output.trim() || 'no answer to PING'}`);
  }
  return { url, stop };
}

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await exited;
}

/** Whether Redis at `url` answers PING before the deadline, retrying while it starts. */
async function answersPing(url: string, deadlineMs: number): Promise<boolean> {
  const giveUpAt = Date.now() + deadlineMs;
  while (Date.now() < giveUpAt) {
    // One connection attempt per probe, no retries or queueing: the loop does the retrying.
    const client = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false });
    client.on('error', () => {});
    try {
      await client.connect();
      if ((await client.ping()) === 'PONG') return true;
    } catch {
      // not up yet
    } finally {
      client.disconnect();
    }
    await sleep(50);
  }
  return false;
}

function findOnPath(command: string): string | undefined {
  for (const directory of (process.env.PATH ?? '').split(delimiter)) {
    if (!directory) continue;
    const candidate = join(directory, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}
