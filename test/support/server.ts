import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { buildServer, type BuildServerOptions } from '../../server/app.ts';

export interface RunningServer {
  readonly baseURL: string;
  readonly client: OpenAI;
  close(): Promise<void>;
}

/** How many worker processes run the programs of a server a test starts: 0 runs them in the test's process. */
export const ENGINE_WORKERS = Number(process.env.PTC_TEST_ENGINE_WORKERS ?? 0);

/** The emulator on an ephemeral loopback port, and an SDK client pointed at it. */
export async function startServer(options: BuildServerOptions = {}): Promise<RunningServer> {
  // Each server its own key (as separate deployments would have), responses in memory, nothing
  // written to disk, and isolates in this process (fast to start) unless a test asks otherwise
  // or the run is the SDK suites' second one, on the worker pool `serve` runs (vitest.config.ts).
  const app = await buildServer({
    logger: false,
    ...options,
    config: { fingerprintKey: randomUUID(), store: 'memory', workers: ENGINE_WORKERS, ...options.config },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const baseURL = `http://127.0.0.1:${port}/v1`;
  return {
    baseURL,
    client: new OpenAI({ apiKey: options.config?.apiKey ?? 'test-key', baseURL, maxRetries: 0 }),
    close: () => app.close(),
  };
}

/** A sample of the server's Prometheus metrics, e.g. `metric(server, 'ptc_program_resumes_total{path="replay"}')`. */
export async function metric(server: RunningServer, sample: string): Promise<number> {
  const text = await (await fetch(`${server.baseURL.replace(/\/v1$/, '')}/metrics`)).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${sample} `));
  if (line === undefined) throw new Error(`no metric ${sample}`);
  return Number(line.slice(sample.length + 1));
}
