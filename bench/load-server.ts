import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { StringDecoder } from 'node:string_decoder';
import { join } from 'node:path';
import http from 'node:http';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { cpuMsFromStat } from '../runtime/proc-stat.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
/** The tail of the server's output kept for a failure message; the rest is counted, not kept. */
const OUTPUT_TAIL_CHARS = 16_384;

export interface BenchServer {
  readonly origin: string;
  readonly port: number;
  readonly pid: number;
  readonly process: ChildProcess;
  /** pino lines at warn (40) and above, and error (50) and above, seen so far. */
  logCounts(): { warn: number; error: number };
  /** The first few warn-or-worse log lines, as written. */
  warnings(): readonly string[];
  /** The last few KiB of the server's output. */
  outputTail(): string;
  /** SIGTERM, then wait for the exit (SIGKILL after 15 s). */
  stop(): Promise<void>;
}

/** Servers spawned and not stopped: told to stop too when this process is (see stopServersOnSignal). */
const running = new Set<ChildProcess>();
let listeningForSignals = false;

/**
 * A bench told to end (SIGTERM from `timeout` or a CI cancel, SIGINT, SIGHUP) first sends SIGTERM
 * to the servers it started, which take their workers with them: otherwise they outlive it.
 * Ctrl-C reaches them by itself, through the terminal's process group; a signal to the bench alone
 * does not.
 */
function stopServersOnSignal(): void {
  if (listeningForSignals) return;
  listeningForSignals = true;
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.once(signal, () => {
      for (const child of running) child.kill('SIGTERM');
      process.exit(128 + (signal === 'SIGHUP' ? 1 : signal === 'SIGINT' ? 2 : 15));
    });
  }
}

/** A free loopback port: asked of the kernel, then released for the server to take. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const address = probe.address();
  probe.close();
  await once(probe, 'close');
  if (address === null || typeof address === 'string') throw new Error('could not find a free port');
  return address.port;
}

/** One GET on a fresh connection (no keep-alive: probes must not hold sockets between samples). */
export function getJson(origin: string, path: string, timeoutMs = 5_000): Promise<{ status: number; body: unknown; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get(`${origin}${path}`, { agent: false, timeout: timeoutMs }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ status: response.statusCode ?? 0, body, text });
      });
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error(`GET ${path} timed out after ${timeoutMs} ms`)));
    request.on('error', reject);
  });
}

/**
 * The emulator as a user runs it (`node --no-node-snapshot --import tsx cli/main.ts serve`), in its
 * own process, configured only by the environment given (nothing inherited but PATH), on a free
 * loopback port; resolves once GET /health answers 200. Its output goes to a file, as a
 * deployment's log does, read when asked for: through a pipe, a load run writing a line per
 * request would wait on this process (busy being the load) to read them, and measure that.
 * `script` is what it runs instead of the CLI's `serve` (bench:floor's bare server).
 */
export async function spawnBenchServer(env: Record<string, string>, script: readonly string[] = ['cli/main.ts', 'serve']): Promise<BenchServer> {
  const port = await freePort();
  const logPath = join(mkdtempSync(join(tmpdir(), 'ptc-bench-server-')), 'output.log');
  const logFd = openSync(logPath, 'w');
  const child = spawn(process.execPath, ['--no-node-snapshot', '--import', 'tsx', ...script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env, PORT: String(port) },
    stdio: ['ignore', logFd, logFd],
  });
  closeSync(logFd);
  running.add(child);
  stopServersOnSignal();
  let tail = '';
  let partial = '';
  let readTo = 0;
  // A read may end inside a character: the decoder keeps its first bytes for the next.
  const decoder = new StringDecoder('utf8');
  const counts = { warn: 0, error: 0 };
  const warnings: string[] = [];
  const onData = (text: string): void => {
    tail = (tail + text).slice(-OUTPUT_TAIL_CHARS);
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const level = /"level":(\d+)/.exec(line);
      const value = level ? Number(level[1]) : 0;
      if (value >= 40) {
        counts.warn += 1;
        if (value >= 50) counts.error += 1;
        if (warnings.length < 5) warnings.push(line.slice(0, 600));
      }
    }
  };
  /** Reads what the server wrote since the last call. */
  const catchUp = (): void => {
    const size = statSync(logPath).size;
    if (size <= readTo) return;
    const fd = openSync(logPath, 'r');
    try {
      const chunk = Buffer.alloc(Math.min(size - readTo, 4 * 2 ** 20));
      for (; readTo < size; ) {
        const read = readSync(fd, chunk, 0, Math.min(chunk.length, size - readTo), readTo);
        if (read === 0) break;
        readTo += read;
        onData(decoder.write(chunk.subarray(0, read)));
      }
    } finally {
      closeSync(fd);
    }
  };
  const exited = once(child, 'exit');
  void exited.then(() => running.delete(child));
  let exitedEarly = false;
  void exited.then(() => {
    exitedEarly = true;
  });
  const origin = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exitedEarly) {
      catchUp();
      throw new Error(`server exited before answering /health:\n${tail}`);
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      catchUp();
      throw new Error(`server did not answer /health within 30 s:\n${tail}`);
    }
    const health = await getJson(origin, '/health', 1_000).catch(() => undefined);
    if (health?.status === 200) break;
    await sleep(100);
  }
  if (child.pid === undefined) throw new Error('server process has no pid');
  return {
    origin,
    port,
    pid: child.pid,
    process: child,
    logCounts: () => {
      catchUp();
      return { ...counts };
    },
    warnings: () => {
      catchUp();
      return [...warnings];
    },
    outputTail: () => {
      catchUp();
      return tail;
    },
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      child.kill('SIGTERM');
      await exited;
      clearTimeout(killer);
    },
  };
}

/** Resident memory of a process in bytes (VmRSS of /proc/<pid>/status), or undefined once it is gone. */
export function rssBytes(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat, or undefined once it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  const cpuMs = cpuMsFromStat(`/proc/${pid}/stat`);
  return cpuMs === undefined ? undefined : cpuMs / 1000;
}

/**
 * CPU milliseconds (user + system) each thread of a process has used, by thread id, from
 * /proc/<pid>/task (Linux); empty once the process is gone. The main thread's id is the pid.
 */
export function threadCpuMs(pid: number): Map<number, number> {
  const byThread = new Map<number, number>();
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byThread;
  }
  for (const tid of threads) {
    const cpuMs = cpuMsFromStat(`/proc/${pid}/task/${tid}/stat`);
    if (cpuMs !== undefined) byThread.set(Number(tid), cpuMs);
  }
  return byThread;
}

/** The worker pids GET /health reports (`workers: [pids]`), or [] for a server without workers. */
export async function workerPids(origin: string): Promise<number[]> {
  const health = await getJson(origin, '/health');
  const workers = (health.body as { workers?: unknown } | undefined)?.workers;
  if (health.status !== 200) throw new Error(`GET /health answered ${health.status}: ${health.text}`);
  if (workers === undefined) return [];
  if (!Array.isArray(workers) || !workers.every((pid) => Number.isSafeInteger(pid)))
    throw new Error(`GET /health: unexpected workers ${JSON.stringify(workers)}`);
  return workers as number[];
}

/** Prometheus counters of GET /metrics as name{labels} → value. */
export async function metrics(origin: string): Promise<Map<string, number>> {
  const { status, text } = await getJson(origin, '/metrics');
  if (status !== 200) throw new Error(`GET /metrics answered ${status}`);
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    values.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return values;
}

/** CPU seconds a server process and its workers (together) have used so far; NaN for one gone. */
export function cpuSecondsOf(serverPid: number, workerPids: readonly number[]): { server: number; workers: number } {
  const server = cpuSeconds(serverPid) ?? Number.NaN;
  return { server, workers: workerPids.reduce((sum, pid) => sum + (cpuSeconds(pid) ?? Number.NaN), 0) };
}
