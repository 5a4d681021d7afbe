import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ServerProcess {
  readonly baseURL: string;
  readonly client: OpenAI;
  readonly process: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far (its pino logs). */
  output(): string;
  /** Ends the process abruptly, as a crash or `kill -9` would: nothing is flushed or closed. */
  kill(): Promise<void>;
  /** Ends the process with SIGTERM and waits for it to exit. */
  stop(): Promise<void>;
}

/**
 * The emulator as a user runs it: `node --no-node-snapshot --import tsx cli/main.ts serve` in its
 * own process, configured by environment, on an ephemeral loopback port.
 */
export async function spawnServer(env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--no-node-snapshot', '--import', 'tsx', 'cli/main.ts', 'serve'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listening = new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      const match = /API at (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server exited with ${code} before listening:\n${output}`)));
  });
  const timeout = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const origin = await listening.finally(() => clearTimeout(timeout));
  const exited = once(child, 'exit');
  return {
    baseURL: `${origin}/v1`,
    client: new OpenAI({ apiKey: 'test-key', baseURL: `${origin}/v1`, maxRetries: 0 }),
    process: child,
    output: () => output,
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
