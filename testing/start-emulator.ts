import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildServer, type BuildServerOptions } from '../server/app.ts';
import type { JournalEntry } from '../server/engine/journal-details.ts';
import type { StoreKind } from '../server/platform/stores/create-store.ts';
import type { ResponseStore } from '../server/platform/stores/response-store.ts';

export interface StartEmulatorOptions {
  /** Scenario rules, as an object or the path of a YAML or JSON file (docs/STAND-IN.md). */
  readonly scenarios?: BuildServerOptions['scenarios'];
  /** An in-process stand-in model, asked first each turn. */
  readonly model?: BuildServerOptions['model'];
  /** In-process answers for the emulated hosted shell and code_interpreter. */
  readonly hosted?: BuildServerOptions['hosted'];
  /** Where `store: true` responses live. Default `memory`: nothing is written to disk. */
  readonly store?: StoreKind | ResponseStore;
  /**
   * Any server setting (server/platform/config.ts), over these defaults: a key made for this emulator
   * alone, one worker process running the isolates (so the test runner needs no Node flag),
   * the environment's PTC_* variables ignored.
   */
  readonly config?: BuildServerOptions['config'];
  /** Address to listen on; default 127.0.0.1. */
  readonly host?: string;
  /** Port to listen on; default 0, a free one. */
  readonly port?: number;
  /** pino logger options; default none. */
  readonly logger?: BuildServerOptions['logger'];
}

export interface RunningEmulator {
  /** The API's base URL, with `/v1`: what `new OpenAI({ baseURL })` takes. */
  readonly baseURL: string;
  /** The server's origin, without `/v1`. */
  readonly url: string;
  readonly port: number;
  /** The Fastify instance, for `inject()` or hooks. */
  readonly app: FastifyInstance;
  /** The requests the emulator has answered, newest first, with their program traces and client-loop checks. */
  journal(limit?: number): Promise<JournalEntry[]>;
  /** Empties the journal (between tests). */
  reset(): Promise<void>;
  /** Stops the server, its workers and its store. */
  close(): Promise<void>;
}

/** Set by `ptc-emulator explore` for the command it runs: the base URL of its emulator. */
export const EXPLORE_URL_VARIABLE = 'PTC_EXPLORE_URL';

/**
 * An emulator for a test: listening on a free loopback port, responses in memory, its own
 * sealing key, no log, nothing written to disk. Settings come from `config` and these
 * defaults only, never from the environment, so a test runs the same everywhere; but for one
 * variable: under `ptc-emulator explore` (PTC_EXPLORE_URL set), the handle is the explorer's
 * emulator, so that the suite's loop meets its shapes (its `model`, `scenarios` and `config`
 * are then not used: the explorer decides).
 */
export async function startEmulator(options: StartEmulatorOptions = {}): Promise<RunningEmulator> {
  // Under `ptc-emulator explore`, the suite's loop must meet the explorer's emulator, not one of its own.
  const explored = process.env[EXPLORE_URL_VARIABLE];
  if (explored) return exploringEmulator(explored);
  const config = { fingerprintKey: randomBytes(32).toString('hex'), workers: 1, ...options.config };
  const app = await buildServer({
    config,
    // The environment's settings never reach a test's emulator.
    env: {},
    store: options.store ?? (options.config?.store as StoreKind | undefined) ?? 'memory',
    logger: options.logger ?? false,
    ...(options.model ? { model: options.model } : {}),
    ...(options.scenarios ? { scenarios: options.scenarios } : {}),
    ...(options.hosted ? { hosted: options.hosted } : {}),
  });
  try {
    await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 });
  } catch (error) {
    await app.close();
    throw error;
  }
  const { address, family, port } = app.server.address() as AddressInfo;
  const url = `http://${family === 'IPv6' ? `[${address}]` : address}:${port}`;
  let closed: Promise<void> | undefined;
  return {
    baseURL: `${url}/v1`,
    url,
    port,
    app,
    async journal(limit = 100) {
      const reply = await app.inject({ method: 'GET', url: `/v1/emulator/journal?limit=${limit}`, headers: authorization(config) });
      return (reply.json() as { data: JournalEntry[] }).data;
    },
    async reset() {
      await app.inject({ method: 'DELETE', url: '/v1/emulator/journal', headers: authorization(config) });
    },
    close() {
      closed ??= app.close().then(() => undefined);
      return closed;
    },
  };
}

function authorization(config: { readonly apiKey?: string | undefined }): Record<string, string> {
  return config.apiKey === undefined ? {} : { authorization: `Bearer ${config.apiKey}` };
}

/** The handle of the emulator `ptc-emulator explore` runs, reached over HTTP: it is that command's to close. */
function exploringEmulator(baseURL: string): RunningEmulator {
  const url = baseURL.replace(/\/v1\/?$/, '');
  return {
    baseURL: `${url}/v1`,
    url,
    port: Number(new URL(url).port),
    get app(): FastifyInstance {
      throw new Error(`the emulator runs in the process of ptc-emulator explore (${EXPLORE_URL_VARIABLE}), not in this one`);
    },
    async journal(limit = 100) {
      return ((await (await fetch(`${url}/v1/emulator/journal?limit=${limit}`)).json()) as { data: JournalEntry[] }).data;
    },
    async reset() {
      await fetch(`${url}/v1/emulator/journal`, { method: 'DELETE' });
    },
    close: async () => {},
  };
}
