import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The built command, as the package's `bin` runs it (`npm test` builds first). */
export const BUILT_CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

export function assertBuilt(): void {
  if (!existsSync(BUILT_CLI)) throw new Error(`${BUILT_CLI} is missing: run \`npm run build\` (npm test does) before these tests`);
}

/**
 * An environment without the test runner's own settings: no `--no-node-snapshot` in
 * NODE_OPTIONS, no PTC_* variables, so each test says what it sets.
 */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...extra };
}

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Every process these tests start, killed when the file's tests end however they end. */
const started = new Set<ChildProcess>();

/** Kills what is left of every process started here, each with its own process group (spawned detached: the CLI, a re-executed child, its workers). */
function reapAll(): void {
  for (const child of started) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
  }
}
// After the file's tests, however they ended (a failed assertion skips a test's own clean-up),
// and on exit; a fork the runner ends with a signal runs no exit handler, so afterAll is the one that counts.
afterAll(reapAll);
process.on('exit', reapAll);

export function track(child: ChildProcess): ChildProcess {
  started.add(child);
  child.once('exit', () => started.delete(child));
  return child;
}

/** Runs `node dist/cli/main.js ARGS` (no Node flag: the CLI's own business) to its end. */
export function runCli(args: readonly string[], options: SpawnOptions & { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<CliResult> {
  assertBuilt();
  const child = track(
    spawn(process.execPath, [BUILT_CLI, ...args], { cwd: ROOT, ...options, env: options.env ?? cleanEnv(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
  return new Promise((resolve) => {
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export interface ServingCli {
  readonly child: ChildProcess;
  readonly startLine: string;
  readonly origin: string;
  output(): string;
  stop(): Promise<number | null>;
}

/**
 * Starts `serve ARGS` and waits for its start line. It listens on a free port: `--port 0`, or
 * the `PORT` of `env` when that is set (a server started with no flags at all).
 */
export async function serveCli(args: readonly string[], env: Record<string, string> = {}, options: { readonly cwd?: string } = {}): Promise<ServingCli> {
  assertBuilt();
  const port = env.PORT === undefined ? ['--port', '0'] : [];
  const child = track(
    spawn(process.execPath, [BUILT_CLI, 'serve', ...port, ...args], {
      cwd: options.cwd ?? ROOT,
      env: cleanEnv(env),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let output = '';
  const startLine = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no start line within 30 s:\n${output}`));
    }, 30_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      const line = output.split('\n').find((candidate) => candidate.includes(' · API at '));
      if (line !== undefined) {
        clearTimeout(timer);
        resolve(line);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before its start line:\n${output}`));
    });
  });
  return {
    child,
    startLine,
    origin: /API at (http:\/\/\S+)\/v1/.exec(startLine)![1]!,
    output: () => output,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      return exited;
    },
  };
}
