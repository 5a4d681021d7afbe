import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { buildServer, type BuildServerOptions } from '../../server/app.ts';

export interface RunningServer {
  readonly baseURL: string;
  readonly client: OpenAI;
  close(): Promise<void>;
}

/** The emulator on an ephemeral loopback port, and an SDK client pointed at it. */
export async function startServer(options: BuildServerOptions = {}): Promise<RunningServer> {
  const app = await buildServer({ logger: false, ...options });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const baseURL = `http://127.0.0.1:${port}/v1`;
  return {
    baseURL,
    client: new OpenAI({ apiKey: options.config?.apiKey ?? 'test-key', baseURL, maxRetries: 0 }),
    close: () => app.close(),
  };
}
