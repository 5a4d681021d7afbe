import { availableParallelism } from 'node:os';
import {
  DEFAULT_SPIN_WAIT_MS,
  DEFAULT_WARM_ISOLATES,
  EmulatorError,
  MAX_SPIN_WAIT_MS,
  LIMIT_DEFINITIONS,
  resolveLimits,
  type LimitName,
  type ProgramLimits,
} from '../../runtime/index.ts';
import { STORE_KINDS, type StoreKind } from './stores/create-store.ts';

export type ClientChecks = 'strict' | 'lenient';

/**
 * Server settings read from the environment, declared once. The README's configuration table
 * lists these and the limits of runtime/limits.ts; a test keeps them in step.
 */
export const SETTINGS = {
  HOST: { default: '127.0.0.1', description: 'Address to listen on.' },
  PORT: { default: '8787', description: 'Port to listen on.' },
  LOG_LEVEL: { default: 'info', description: 'pino level: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`.' },
  PTC_API_KEY: { default: '', description: 'When set, requests must send `Authorization: Bearer <key>`; otherwise any key is accepted.' },
  PTC_SCENARIOS: { default: '', description: 'Path of a scenario file (YAML or JSON) for the model stand-in.' },
  PTC_AUTOPILOT: {
    default: 'on',
    description:
      '`on`: when no other stand-in decides a turn, the autopilot does, as a model that uses PTC would: it calls the tools the message is about, with arguments valid against their parameters, in a program it writes, and states the results (docs/STAND-IN.md). `off`: such a turn gets a message saying how to steer the stand-in, and the `x-ptc-nothing-ran` header.',
  },
  PTC_EXPLORE: {
    default: 'off',
    description:
      "`on`: every conversation's program is drawn from the explorer's catalogue of shapes a client loop must survive (pauses, batches, failures, each runtime limit, a message one response late, …), seeded by `PTC_EXPLORE_SEED` or the request's `x-ptc-seed`; `GET /v1/emulator/explore` reports what each shape came to (docs/EXPLORE.md). A request's `x-ptc-explore` header turns it on or off for that request.",
  },
  PTC_EXPLORE_SEED: {
    default: '0',
    description: 'The seed explore mode draws shapes with when a request sets none (`ptc-emulator explore` sets one per run of its command).',
  },
  PTC_RECORD: {
    default: '',
    description:
      'Record mode: a directory to write cassettes to (docs/CASSETTES.md). Each `POST /v1/responses` goes to `PTC_UPSTREAM` and its answer back unchanged; every model decision is written as one YAML entry.',
  },
  PTC_UPSTREAM: { default: '', description: 'Record mode: the upstream Responses API, e.g. `https://api.openai.com/v1`.' },
  PTC_UPSTREAM_API_KEY: {
    default: '',
    description:
      "Record mode: the key sent upstream as `Authorization: Bearer <key>` (set it in the environment); when empty, the client's own `Authorization` is passed on. Never written to a cassette.",
  },
  PTC_REPLAY: {
    default: '',
    description:
      'Replay mode: a directory of cassettes whose recorded decisions answer every request (nothing is sent anywhere); a request no entry matches is a 404 `cassette_miss`.',
  },
  PTC_REPLAY_STRICT: {
    default: 'false',
    description:
      '`true`: in replay mode a recorded program that calls or ends otherwise in our runtime fails its response (409 `cassette_divergence`); `false` reports it in the journal and the log only.',
  },
  PTC_CASSETTE_REDACT: {
    default: '',
    description:
      'A regular expression (JavaScript syntax) whose matches in recorded strings are replaced by `[REDACTED]`, beside the built-in rules for keys and tokens (docs/CASSETTES.md).',
  },
  PTC_CLIENT_CHECKS: { default: 'strict', description: '`strict` or `lenient` client-loop checks (per request: header `x-ptc-client-checks`).' },
  PTC_MODELS: { default: 'ptc-emulator', description: 'Comma-separated model ids listed by `GET /v1/models` (requests may name any model).' },
  PTC_WORKERS: {
    default: '',
    description:
      'Worker processes that run the isolates (one per core when empty). `0` runs isolates in the server process, where a program that crashes isolated-vm takes the server down.',
  },
  PTC_WORKER_MAX_RSS_MB: {
    default: '1536',
    description:
      'Resident memory of one worker beyond which it is killed (SIGKILL) and replaced; the steps it was running are run again by themselves (docs/SANDBOX.md).',
  },
  PTC_WORKER_HEARTBEAT_MS: { default: '500', description: 'How often the supervisor checks each worker (heartbeat, memory, CPU).' },
  PTC_WORKER_HEARTBEAT_TIMEOUT_MS: { default: '5000', description: 'A worker that answers no heartbeat for this long is killed and replaced.' },
  PTC_WORKER_MAX_IDLE_CPU_PERCENT: {
    default: '50',
    description: 'CPU a worker with no step running may use, in percent of one core, before it is killed (a runaway isolate).',
  },
  PTC_WORKER_CPU_PINNING: {
    default: 'on',
    description:
      "`on` pins each worker to one CPU of those the server may use, in turn (Linux, with `taskset`), where the pool fills them evenly: `PTC_WORKERS` a multiple of their count (the default, one per CPU), and no CPU quota narrower than them; a program's steps then hand its isolate between the worker's threads without waking another CPU, which on a virtual machine goes through the hypervisor. Elsewhere, and with `off`, the kernel places the workers. A worker that cannot be pinned (no `taskset`) runs unpinned, and the log says so once.",
  },
  PTC_MAX_CONCURRENT_TURNS: { default: '32', description: 'Requests running a turn at once; more wait.' },
  PTC_MAX_QUEUED_TURNS: {
    default: '128',
    description:
      'Requests waiting for a turn; one more is answered 429 `server_busy` with `retry-after`. New conversations may fill half; continuations and retries all of it, and go first.',
  },
  PTC_BUSY_RETRY_AFTER_MS: { default: '250', description: 'The `retry-after-ms` of a 429 `server_busy`.' },
  PTC_PROGRAM_EXPIRY_MS: { default: '86400000', description: 'A paused program can no longer be resumed this long after it started (`program_expired`).' },
  PTC_MCP_TIMEOUT_MS: {
    default: '30000',
    description:
      "How long one MCP operation (listing a server's tools, or a call) may take, connecting included; a call past it fails with an error the program receives.",
  },
  PTC_MCP_IDLE_TIMEOUT_MS: {
    default: '300000',
    description:
      'A connection to an MCP server (one per server URL and headers, reused across requests) that no call or listing has used for this long is closed, ending its session.',
  },
  PTC_MCP_MAX_CONNECTIONS: {
    default: '100',
    description: 'MCP connections kept at most; beyond, the least recently used idle ones are closed (one in use never is).',
  },
  PTC_MCP_ALLOWED_URLS: {
    default: '',
    description:
      'Comma-separated prefixes an MCP `server_url` must start with (e.g. `http://127.0.0.1:,https://mcp.example.com/`; end a host with `:` or `/`); empty allows any. A server it does not allow is listed with an `error` and never contacted.',
  },
  PTC_WEBHOOK_URLS: {
    default: '',
    description:
      "Comma-separated URLs that receive every webhook event the emulator sends (a background response's outcome, an agent session's status: docs/WEBHOOKS.md), signed with `PTC_WEBHOOK_SECRET`. Endpoints can also be made through the API (`client.webhooks.create`).",
  },
  PTC_WEBHOOK_SECRET: {
    default: '',
    description:
      "The signing secret of `PTC_WEBHOOK_URLS`' deliveries (`whsec_<base64>` as the hosted API gives, or any string); the receiver passes the same to `client.webhooks.unwrap()` (or `OPENAI_WEBHOOK_SECRET`). Required when `PTC_WEBHOOK_URLS` is set.",
  },
  PTC_WEBHOOK_ALLOWED_URLS: {
    default: '',
    description:
      'Comma-separated prefixes the URL of an endpoint made through the API must start with (e.g. `http://127.0.0.1:`); empty allows any. Another URL is a 400 `invalid_value`.',
  },
  PTC_WEBHOOK_MAX_ATTEMPTS: {
    default: '8',
    description: 'Attempts at delivering one webhook event to one endpoint, the first included, until it answers 2xx.',
  },
  PTC_WEBHOOK_RETRY_MS: {
    default: '1000',
    description: "The wait before a webhook delivery's second attempt; each later one waits twice as long as the one before (at most 5 minutes).",
  },
  PTC_SHUTDOWN_TIMEOUT_MS: { default: '10000', description: 'On SIGTERM, how long running requests may take to finish before the process exits anyway.' },
  PTC_PAUSED_TTL_MS: {
    default: '600000',
    description: "How long a paused program's isolate is kept alive without being resumed; after that it resumes by replay.",
  },
  PTC_MAX_PAUSED_PROGRAMS: {
    default: '1000',
    description:
      'Paused isolates kept at most; beyond, the least recently used are dropped (they resume by replay). `0` turns the cache off: every resume replays.',
  },
  PTC_WARM_ISOLATES: {
    default: String(DEFAULT_WARM_ISOLATES),
    description:
      'Isolates each process that runs programs keeps made ahead of demand, with the prelude loaded, so that a program does not wait for one (each is fresh: one program, never reused; made while no step runs, for `PTC_MEMORY_MB`, no more than free memory holds at that limit; disposed after 30 s unused). `0` makes each isolate as its program starts.',
  },
  PTC_SPIN_WAIT_MS: {
    default: String(DEFAULT_SPIN_WAIT_MS),
    description: `How long, at most, each program step keeps the event loop of the process that runs it turning instead of sleeping, from each hand-over of its isolate to isolated-vm's thread, while it is the only step that process runs: isolated-vm's thread then hands the step back without waking a sleeping CPU, which on a virtual machine goes through the hypervisor (README, "Waiting awake for a step"). A worker also waits so for the server's next message once it has handed a paused program back, while those messages come within it (README, "Waiting awake for the server"). Never in a process confined to one CPU (a pinned worker, \`PTC_WORKER_CPU_PINNING\`). Up to ${MAX_SPIN_WAIT_MS}; \`0\` lets it sleep at once.`,
  },
  PTC_MAX_PAUSED_HEAP_MB: { default: '512', description: 'Heap of all paused isolates together, in MiB; beyond, the least recently used are dropped.' },
  PTC_INSPECTOR: { default: 'on', description: '`on` serves the inspector page at `/inspector` (docs/INSPECTOR.md); `off` answers 404 there.' },
  PTC_JOURNAL_SIZE: { default: '200', description: 'Requests kept by the journal (`GET /v1/emulator/journal`); `0` turns it off.' },
  PTC_BODY_LIMIT_BYTES: { default: '33554432', description: 'Largest request body accepted (413 beyond).' },
  PTC_REQUEST_TIMEOUT_MS: {
    default: '300000',
    description:
      "Time a client has to send one whole request, its headers and body, from its first byte (Node's own default, which Fastify turns off; the headers alone within 60 s, Node's `headersTimeout`, or this if less): past it a 408 `request_timeout` and the connection closed, so a client that stops in the middle of a body does not hold what it sent. A response already under way (a route that answered without reading a body) is cut off, not interrupted by the 408. Checked every quarter of it, at most every 30 s. A WebSocket message has as long from its first byte: past it an `error` event `request_timeout` and the socket closed with 1008. At least 1000: it cannot be turned off.",
  },
  PTC_MAX_ARRIVING_BODY_BYTES: {
    default: '536870912',
    description:
      'Bytes of request bodies being received at once, all connections together (each body is bounded by `PTC_BODY_LIMIT_BYTES`): a body of 64 KiB or more that would take them past it is a 429 `server_busy` with `retry-after` (answered once the client has sent it, read and dropped; at once, never asked for, when the client waits for `100 Continue`), unless it is the only one arriving; smaller bodies are always read, so that large ones held half-sent refuse no one else. WebSocket messages count too, being received and then waiting on their socket to be served (each as 1 KiB at least): one being received past the bound, once it comes to 64 KiB, is an `error` event `server_busy` and its socket closed with 1013 (try again later); one received when its socket holds 64 KiB or more of them is answered with that `error` event, not kept, and the socket stays open. `GET /metrics` shows them (`ptc_request_body_bytes_arriving`).',
  },
  PTC_MAX_INPUT_ITEMS: {
    default: '5000',
    description:
      "Items one request's `input` may carry (each costs the server's loop: checks, history, usage; 20,000 took ~160 ms). Longer conversations continue with `previous_response_id`; raised far, `PTC_MAX_BODY_VALUES` may need raising too. Code: `too_many_input_items`.",
  },
  PTC_MAX_BODY_VALUES: {
    default: '200000',
    description:
      "JSON values (objects, arrays, strings, numbers, booleans, nulls) one request body or WebSocket message may hold, counted as soon as it is parsed (in the parsing thread for a large one), before anything validates it: each costs the server's loop 100–200 ns just to receive from that thread, then its checks. Code: `too_many_values`, naming the member of the body that holds them.",
  },
  PTC_MAX_SCHEMA_BYTES: {
    default: '1048576',
    description:
      "JSON Schemas one request's tools give programs to check with (strict `parameters`, `output_schema`), all together, UTF-8 bytes of their JSON. Code: `schema_too_large`. Each must also be within the hosted API's limits for strict schemas, fixed, not settings: 10 levels of nesting, 5,000 object properties, 1,000 enum values, 120,000 characters of property names, definition names, enum and const values, 15,000 for a string enum of more than 250 values (and the emulator's 500 `patternProperties`). Code: `invalid_function_parameters`.",
  },
  PTC_SCHEMA_COMPILE_TIMEOUT_MS: {
    default: '2000',
    description:
      "How much CPU time compiling one request's schemas may take (ajv, in a low-priority thread beside the server's loop, which ends the job after ten times this in wall time however starved; a schema compiled before is not compiled again). Within the limits above, 5,000 plain properties take ajv about 0.6 s here, 3,000 of twelve keywords each 2 s. Code: `schema_too_complex`.",
  },
  PTC_STORE: {
    default: 'sqlite',
    description: 'Where `store: true` responses live: `sqlite` (a file in `PTC_DATA_DIR`), `redis` (shared by many instances) or `memory` (lost on restart).',
  },
  PTC_DATA_DIR: {
    default: './data',
    description:
      'Directory for the embedded state: the SQLite store and the generated fingerprint key. With `PTC_STORE=memory` and this unset, nothing is written.',
  },
  REDIS_URL: { default: '', description: 'Redis for `PTC_STORE=redis`, e.g. `redis://127.0.0.1:6379/0`.' },
  PTC_REDIS_PREFIX: { default: 'ptc:', description: 'Prefix of every Redis key the emulator writes.' },
  PTC_FINGERPRINT_KEY: {
    default: '',
    description:
      'Secret sealing fingerprints and call ids (any string; the same on every instance that shares conversations). When empty, a key generated in `PTC_DATA_DIR/fingerprint.key` on first start; with `PTC_STORE=memory` and no `PTC_DATA_DIR`, a key made for this process alone.',
  },
  PTC_FINGERPRINT_OLD_KEYS: { default: '', description: 'Comma-separated earlier secrets still accepted when verifying (key rotation).' },
  PTC_MODEL_BACKEND: {
    default: '',
    description:
      'Base URL of an OpenAI-compatible Chat Completions API (e.g. `http://127.0.0.1:8080/v1`) whose model writes the programs, direct calls and messages (docs/MODEL-BACKEND.md); empty: no model backend.',
  },
  PTC_MODEL_BACKEND_MODEL: { default: '', description: "The model the backend is asked for (also `--model`); empty: the request's `model`." },
  PTC_MODEL_BACKEND_API_KEY: {
    default: '',
    description: 'Sent to the backend as `Authorization: Bearer <key>`; never logged, stored or returned. Prefer the environment to the flag.',
  },
  PTC_MODEL_BACKEND_TIMEOUT_MS: {
    default: '120000',
    description: 'How long one request to the backend may take, connecting included. Code: `model_backend_timeout`.',
  },
  PTC_MODEL_BACKEND_RETRIES: {
    default: '2',
    description:
      'Tries after the first when the backend answers 429 or 5xx or cannot be reached (waiting as its `retry-after` asks, or 250 ms doubling, at most 10 s). Codes: `model_backend_rate_limited`, `model_backend_error`.',
  },
} as const;

export interface ServerConfig {
  readonly host: string;
  readonly port: number;
  readonly logLevel: string;
  readonly apiKey: string | undefined;
  readonly scenariosPath: string | undefined;
  /** Whether the autopilot decides the turns no other stand-in does. */
  readonly autopilot: boolean;
  /** Whether every conversation explores (docs/EXPLORE.md), and the seed it draws with. */
  readonly explore: boolean;
  readonly exploreSeed: number;
  /** Record and replay (server/engine/stand-ins/cassettes/). */
  readonly cassettes: CassetteConfig;
  readonly clientChecks: ClientChecks;
  readonly models: readonly string[];
  /** 0: isolates in the server process. */
  readonly workers: number;
  readonly workerMaxRssBytes: number;
  readonly workerHeartbeatMs: number;
  readonly workerHeartbeatTimeoutMs: number;
  readonly workerMaxIdleCpuShare: number;
  /** Each worker pinned to one CPU (runtime/worker/cpu-pinning.ts). */
  readonly workerCpuPinning: boolean;
  readonly maxConcurrentTurns: number;
  readonly maxQueuedTurns: number;
  readonly busyRetryAfterMs: number;
  readonly programExpiryMs: number;
  readonly shutdownTimeoutMs: number;
  readonly mcpTimeoutMs: number;
  readonly mcpIdleTimeoutMs: number;
  readonly mcpMaxConnections: number;
  /** Prefixes MCP server URLs must start with; empty: any URL. */
  readonly mcpAllowedUrls: readonly string[];
  /** Webhooks (server/platform/webhooks/). */
  readonly webhooks: WebhookConfig;
  readonly pausedTtlMs: number;
  readonly maxPausedPrograms: number;
  readonly warmIsolates: number;
  readonly spinWaitMs: number;
  readonly maxPausedHeapBytes: number;
  readonly bodyLimitBytes: number;
  readonly requestTimeoutMs: number;
  readonly maxArrivingBodyBytes: number;
  readonly maxInputItems: number;
  readonly maxBodyValues: number;
  readonly maxSchemaBytes: number;
  readonly schemaCompileTimeoutMs: number;
  readonly journalSize: number;
  /** Whether `/inspector` serves the page over the journal. */
  readonly inspector: boolean;
  readonly store: StoreKind;
  /**
   * `PTC_DATA_DIR` as set; unset means ./data (see dataDirOf), except that a server whose store
   * is memory then writes nothing at all, its sealing key included.
   */
  readonly dataDir: string | undefined;
  readonly redisUrl: string | undefined;
  readonly redisPrefix: string;
  readonly fingerprintKey: string | undefined;
  readonly fingerprintOldKeys: readonly string[];
  readonly limits: ProgramLimits;
  /** The model backend, when `PTC_MODEL_BACKEND` is set. */
  readonly modelBackend?: ModelBackendConfig;
}

export interface ModelBackendConfig {
  readonly url: string;
  readonly model?: string;
  readonly apiKey?: string;
  readonly timeoutMs: number;
  readonly retries: number;
}

export class ConfigError extends EmulatorError {
  override readonly name = 'ConfigError';
  readonly code = 'PTC_ERR_CONFIG';
}

/** The directory of the embedded state: `PTC_DATA_DIR`, or its default. */
export function dataDirOf(config: Pick<ServerConfig, 'dataDir'>): string {
  return config.dataDir ?? SETTINGS.PTC_DATA_DIR.default;
}

/**
 * Whether the sealing key lives in a file of the data directory (so programs paused before a
 * restart resume after it): unless a secret is configured, or the server keeps everything in
 * memory and was given no data directory.
 */
export function keepsKeyFile(config: Pick<ServerConfig, 'dataDir' | 'store' | 'fingerprintKey'>): boolean {
  return config.fingerprintKey === undefined && (config.store !== 'memory' || config.dataDir !== undefined);
}

/** pino's levels, the values LOG_LEVEL may take. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** One row per setting, limits included, in the order the README's table and `--help` list them. */
export interface SettingRow {
  /** The environment variable. */
  readonly env: string;
  readonly default: string;
  /** Markdown: the README shows it as it is, `--help` without the backticks. */
  readonly description: string;
}

/** The command-line flag of a setting: `PTC_MAX_CALLS` is `--max-calls`, `HOST` is `--host`. */
export function settingFlag(env: string): string {
  return `--${env.replace(/^PTC_/, '').toLowerCase().replaceAll('_', '-')}`;
}

export function settingRows(): SettingRow[] {
  return [
    ...Object.entries(SETTINGS).map(([env, setting]) => ({ env, default: setting.default, description: setting.description })),
    ...Object.values(LIMIT_DEFINITIONS).map((limit) => ({
      env: limit.env,
      default: String(limit.default),
      description: `${limit.description} Code: \`${limit.code}\`.`,
    })),
  ];
}

/** The largest delay Node's timers take (2^31 - 1 ms); a larger one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A whole number in decimal digits within [min, max]. Settings ending in `_MS` are delays, so at
 * most MAX_TIMER_MS; an empty value means the default (as an unset one does).
 */
function integer(
  env: NodeJS.ProcessEnv,
  name: keyof typeof SETTINGS | string,
  fallback: string,
  min: number,
  max = name.endsWith('_MS') ? MAX_TIMER_MS : Number.MAX_SAFE_INTEGER,
): number {
  const raw = env[name] || fallback;
  const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function onOff(env: NodeJS.ProcessEnv, name: keyof typeof SETTINGS, fallback: string): boolean {
  const value = (env[name] ?? fallback).trim() || fallback;
  if (value !== 'on' && value !== 'off') throw new ConfigError(`${name} must be "on" or "off", got "${value}"`);
  return value === 'on';
}

function setting(env: NodeJS.ProcessEnv, name: keyof typeof SETTINGS): string {
  return env[name] ?? SETTINGS[name].default;
}

/** A setting that may not be set to nothing (an empty HOST would listen on every interface). */
function nonEmpty(env: NodeJS.ProcessEnv, name: keyof typeof SETTINGS): string {
  const value = setting(env, name);
  if (value.trim() === '') throw new ConfigError(`${name} must not be empty (its default is "${SETTINGS[name].default}")`);
  return value;
}

/** Retries of one backend request: each may wait up to 10 s, and a turn waits for all of them. */
const MAX_BACKEND_RETRIES = 10;

function modelBackendConfig(env: NodeJS.ProcessEnv): ModelBackendConfig | undefined {
  const url = setting(env, 'PTC_MODEL_BACKEND').trim();
  if (url === '') return undefined;
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
    throw new ConfigError(`PTC_MODEL_BACKEND must be an http:// or https:// URL, got "${url}"`);
  const model = setting(env, 'PTC_MODEL_BACKEND_MODEL').trim();
  const apiKey = setting(env, 'PTC_MODEL_BACKEND_API_KEY');
  return {
    url,
    ...(model ? { model } : {}),
    ...(apiKey ? { apiKey } : {}),
    timeoutMs: integer(env, 'PTC_MODEL_BACKEND_TIMEOUT_MS', SETTINGS.PTC_MODEL_BACKEND_TIMEOUT_MS.default, 1),
    retries: integer(env, 'PTC_MODEL_BACKEND_RETRIES', SETTINGS.PTC_MODEL_BACKEND_RETRIES.default, 0, MAX_BACKEND_RETRIES),
  };
}

export interface CassetteConfig {
  readonly recordDir: string | undefined;
  readonly upstreamUrl: string | undefined;
  readonly upstreamApiKey: string | undefined;
  readonly replayDir: string | undefined;
  readonly replayStrict: boolean;
  /** PTC_CASSETTE_REDACT's source; checked to compile. */
  readonly redactPattern: string | undefined;
}

function cassetteConfig(env: NodeJS.ProcessEnv): CassetteConfig {
  const recordDir = setting(env, 'PTC_RECORD') || undefined;
  const replayDir = setting(env, 'PTC_REPLAY') || undefined;
  const upstreamUrl = setting(env, 'PTC_UPSTREAM') || undefined;
  if (recordDir && replayDir) throw new ConfigError('PTC_RECORD and PTC_REPLAY cannot both be set: a server records or replays');
  if (recordDir && !upstreamUrl) throw new ConfigError('PTC_RECORD needs PTC_UPSTREAM, the Responses API to record from');
  if (upstreamUrl && !/^https?:\/\//.test(upstreamUrl)) throw new ConfigError(`PTC_UPSTREAM must be an http(s) URL, got "${upstreamUrl}"`);
  const strict = setting(env, 'PTC_REPLAY_STRICT');
  if (strict !== 'true' && strict !== 'false') throw new ConfigError(`PTC_REPLAY_STRICT must be "true" or "false", got "${strict}"`);
  const redactPattern = setting(env, 'PTC_CASSETTE_REDACT') || undefined;
  if (redactPattern !== undefined) {
    try {
      new RegExp(redactPattern, 'g');
    } catch (error) {
      throw new ConfigError(`PTC_CASSETTE_REDACT is not a regular expression: ${(error as Error).message}`);
    }
  }
  return {
    recordDir,
    upstreamUrl,
    upstreamApiKey: setting(env, 'PTC_UPSTREAM_API_KEY') || undefined,
    replayDir,
    replayStrict: strict === 'true',
    redactPattern,
  };
}

/** Worker processes one server may start: a typo of an extra digit should not fork thousands. */
const MAX_WORKERS = 256;

export interface WebhookConfig {
  /** `PTC_WEBHOOK_URLS`: endpoints that get every event, signed with `secret`. */
  readonly urls: readonly string[];
  readonly secret: string;
  /** Prefixes an endpoint made through the API must start with; empty: any URL. */
  readonly allowedUrls: readonly string[];
  readonly maxAttempts: number;
  readonly retryMs: number;
}

/** A comma-separated list, each entry trimmed, empty ones left out. */
function commaList(env: NodeJS.ProcessEnv, name: keyof typeof SETTINGS): string[] {
  return setting(env, name)
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
}

function webhookConfig(env: NodeJS.ProcessEnv): WebhookConfig {
  const urls = commaList(env, 'PTC_WEBHOOK_URLS');
  for (const url of urls) {
    if (!/^https?:\/\/[^/]/.test(url) || !URL.canParse(url)) throw new ConfigError(`PTC_WEBHOOK_URLS must list http:// or https:// URLs, got "${url}"`);
  }
  const secret = setting(env, 'PTC_WEBHOOK_SECRET');
  if (urls.length > 0 && secret === '') {
    throw new ConfigError('PTC_WEBHOOK_SECRET must be set when PTC_WEBHOOK_URLS is: the receivers verify each delivery with it');
  }
  return {
    urls,
    secret,
    allowedUrls: commaList(env, 'PTC_WEBHOOK_ALLOWED_URLS'),
    maxAttempts: integer(env, 'PTC_WEBHOOK_MAX_ATTEMPTS', SETTINGS.PTC_WEBHOOK_MAX_ATTEMPTS.default, 1, 100),
    retryMs: integer(env, 'PTC_WEBHOOK_RETRY_MS', SETTINGS.PTC_WEBHOOK_RETRY_MS.default, 1),
  };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): ServerConfig {
  const clientChecks = setting(env, 'PTC_CLIENT_CHECKS');
  if (clientChecks !== 'strict' && clientChecks !== 'lenient') {
    throw new ConfigError(`PTC_CLIENT_CHECKS must be "strict" or "lenient", got "${clientChecks}"`);
  }
  const logLevel = setting(env, 'LOG_LEVEL');
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  const limits: Partial<Record<LimitName, number>> = {};
  for (const [name, definition] of Object.entries(LIMIT_DEFINITIONS) as [LimitName, (typeof LIMIT_DEFINITIONS)[LimitName]][]) {
    if (env[definition.env] !== undefined) limits[name] = integer(env, definition.env, '', 1);
  }
  let resolvedLimits: ProgramLimits;
  try {
    resolvedLimits = resolveLimits(limits);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  const store = setting(env, 'PTC_STORE') as StoreKind;
  if (!STORE_KINDS.includes(store)) throw new ConfigError(`PTC_STORE must be one of ${STORE_KINDS.join(', ')}, got "${store}"`);
  if (store === 'redis' && !setting(env, 'REDIS_URL')) throw new ConfigError('PTC_STORE=redis needs REDIS_URL');
  const modelBackend = modelBackendConfig(env);
  const models = setting(env, 'PTC_MODELS')
    .split(',')
    .map((model) => model.trim())
    .filter(Boolean);
  return {
    host: nonEmpty(env, 'HOST'),
    port: integer(env, 'PORT', SETTINGS.PORT.default, 0, 65_535),
    logLevel,
    apiKey: setting(env, 'PTC_API_KEY') || undefined,
    scenariosPath: setting(env, 'PTC_SCENARIOS') || undefined,
    autopilot: onOff(env, 'PTC_AUTOPILOT', SETTINGS.PTC_AUTOPILOT.default),
    explore: onOff(env, 'PTC_EXPLORE', SETTINGS.PTC_EXPLORE.default),
    exploreSeed: integer(env, 'PTC_EXPLORE_SEED', SETTINGS.PTC_EXPLORE_SEED.default, 0, 2 ** 32 - 1),
    cassettes: cassetteConfig(env),
    clientChecks,
    models: models.length > 0 ? models : [SETTINGS.PTC_MODELS.default],
    workers: integer(env, 'PTC_WORKERS', String(availableParallelism()), 0, MAX_WORKERS),
    workerMaxRssBytes: integer(env, 'PTC_WORKER_MAX_RSS_MB', SETTINGS.PTC_WORKER_MAX_RSS_MB.default, 64) * 1024 * 1024,
    workerHeartbeatMs: integer(env, 'PTC_WORKER_HEARTBEAT_MS', SETTINGS.PTC_WORKER_HEARTBEAT_MS.default, 10),
    workerHeartbeatTimeoutMs: integer(env, 'PTC_WORKER_HEARTBEAT_TIMEOUT_MS', SETTINGS.PTC_WORKER_HEARTBEAT_TIMEOUT_MS.default, 100),
    workerMaxIdleCpuShare: integer(env, 'PTC_WORKER_MAX_IDLE_CPU_PERCENT', SETTINGS.PTC_WORKER_MAX_IDLE_CPU_PERCENT.default, 1) / 100,
    workerCpuPinning: onOff(env, 'PTC_WORKER_CPU_PINNING', SETTINGS.PTC_WORKER_CPU_PINNING.default),
    maxConcurrentTurns: integer(env, 'PTC_MAX_CONCURRENT_TURNS', SETTINGS.PTC_MAX_CONCURRENT_TURNS.default, 1),
    maxQueuedTurns: integer(env, 'PTC_MAX_QUEUED_TURNS', SETTINGS.PTC_MAX_QUEUED_TURNS.default, 0),
    busyRetryAfterMs: integer(env, 'PTC_BUSY_RETRY_AFTER_MS', SETTINGS.PTC_BUSY_RETRY_AFTER_MS.default, 0),
    programExpiryMs: integer(env, 'PTC_PROGRAM_EXPIRY_MS', SETTINGS.PTC_PROGRAM_EXPIRY_MS.default, 1),
    shutdownTimeoutMs: integer(env, 'PTC_SHUTDOWN_TIMEOUT_MS', SETTINGS.PTC_SHUTDOWN_TIMEOUT_MS.default, 0),
    mcpTimeoutMs: integer(env, 'PTC_MCP_TIMEOUT_MS', SETTINGS.PTC_MCP_TIMEOUT_MS.default, 1),
    mcpIdleTimeoutMs: integer(env, 'PTC_MCP_IDLE_TIMEOUT_MS', SETTINGS.PTC_MCP_IDLE_TIMEOUT_MS.default, 1),
    mcpMaxConnections: integer(env, 'PTC_MCP_MAX_CONNECTIONS', SETTINGS.PTC_MCP_MAX_CONNECTIONS.default, 1),
    mcpAllowedUrls: setting(env, 'PTC_MCP_ALLOWED_URLS')
      .split(',')
      .map((prefix) => prefix.trim())
      .filter(Boolean),
    webhooks: webhookConfig(env),
    pausedTtlMs: integer(env, 'PTC_PAUSED_TTL_MS', SETTINGS.PTC_PAUSED_TTL_MS.default, 1),
    maxPausedPrograms: integer(env, 'PTC_MAX_PAUSED_PROGRAMS', SETTINGS.PTC_MAX_PAUSED_PROGRAMS.default, 0),
    warmIsolates: integer(env, 'PTC_WARM_ISOLATES', SETTINGS.PTC_WARM_ISOLATES.default, 0),
    spinWaitMs: integer(env, 'PTC_SPIN_WAIT_MS', SETTINGS.PTC_SPIN_WAIT_MS.default, 0, MAX_SPIN_WAIT_MS),
    maxPausedHeapBytes: integer(env, 'PTC_MAX_PAUSED_HEAP_MB', SETTINGS.PTC_MAX_PAUSED_HEAP_MB.default, 1) * 1024 * 1024,
    bodyLimitBytes: integer(env, 'PTC_BODY_LIMIT_BYTES', SETTINGS.PTC_BODY_LIMIT_BYTES.default, 1024),
    requestTimeoutMs: integer(env, 'PTC_REQUEST_TIMEOUT_MS', SETTINGS.PTC_REQUEST_TIMEOUT_MS.default, 1000),
    maxArrivingBodyBytes: integer(env, 'PTC_MAX_ARRIVING_BODY_BYTES', SETTINGS.PTC_MAX_ARRIVING_BODY_BYTES.default, 1024),
    maxInputItems: integer(env, 'PTC_MAX_INPUT_ITEMS', SETTINGS.PTC_MAX_INPUT_ITEMS.default, 1),
    maxBodyValues: integer(env, 'PTC_MAX_BODY_VALUES', SETTINGS.PTC_MAX_BODY_VALUES.default, 1),
    maxSchemaBytes: integer(env, 'PTC_MAX_SCHEMA_BYTES', SETTINGS.PTC_MAX_SCHEMA_BYTES.default, 1),
    schemaCompileTimeoutMs: integer(env, 'PTC_SCHEMA_COMPILE_TIMEOUT_MS', SETTINGS.PTC_SCHEMA_COMPILE_TIMEOUT_MS.default, 1),
    journalSize: integer(env, 'PTC_JOURNAL_SIZE', SETTINGS.PTC_JOURNAL_SIZE.default, 0),
    inspector: onOff(env, 'PTC_INSPECTOR', SETTINGS.PTC_INSPECTOR.default),
    store,
    dataDir: env.PTC_DATA_DIR || undefined,
    redisUrl: setting(env, 'REDIS_URL') || undefined,
    redisPrefix: setting(env, 'PTC_REDIS_PREFIX'),
    fingerprintKey: setting(env, 'PTC_FINGERPRINT_KEY') || undefined,
    fingerprintOldKeys: setting(env, 'PTC_FINGERPRINT_OLD_KEYS')
      .split(',')
      .map((key) => key.trim())
      .filter(Boolean),
    limits: resolvedLimits,
    ...(modelBackend ? { modelBackend } : {}),
  };
}
