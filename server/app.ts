import type { z } from 'zod';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import { API_ERRORS, type ApiErrorDefinition } from '../schemas/error-codes.ts';
import { jsonDepthExceeds, MAX_JSON_DEPTH, ProgramRuntime, resolveLimits, WorkerPool, type ProgramEngine, type ProgramLimits } from '../runtime/index.ts';
import { ApiError } from './api-error.ts';
import { BackgroundJobs } from './background.ts';
import { RequestJournal, type JournalDetails } from './journal.ts';
import { registerJournalRoutes } from './routes/journal.ts';
import { TurnGate } from './turn-gate.ts';
import { loadSealingKeys } from './sealing-keys.ts';
import { ConfigError, dataDirOf, keepsKeyFile, loadConfig, type ServerConfig } from './config.ts';
import { newId } from './ids.ts';
import { inlineModel } from './model/inline-model.ts';
import type { ModelFunction } from './model/model-decision.ts';
import { loadScenarioFile, parseScenarios, scenarioKnobs, scenarioModel, ScenarioFile } from './model/scenario-model.ts';
import { ModelStandIn } from './model/stand-in.ts';
import { HostedTools, type HostedHandlers } from './model/hosted-tools.ts';
import { ProgramClaims } from './conversation/program-claims.ts';
import { McpClients } from './mcp/mcp-client.ts';
import { registerHealthRoutes } from './routes/health.ts';
import { registerIndexRoutes } from './routes/index.ts';
import { registerMetricsRoutes } from './routes/metrics.ts';
import { registerModelRoutes } from './routes/models.ts';
import { registerResponseRoutes } from './routes/responses.ts';
import { createResponseStore, type StoreKind } from './stores/create-store.ts';
import { StoreUnavailableError, type ResponseStore } from './stores/response-store.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Stops taking new requests (503 shutting_down) while the running ones finish; then call close(). */
    drain(): void;
  }
  interface FastifyRequest {
    /** What the routes noted about this request for the journal. */
    journal: JournalDetails | null;
    /** True when the reply was a stream written by hand, which the route journals itself. */
    streamedByHand: boolean;
  }
}

export interface BuildServerOptions {
  /** Settings; anything absent comes from `env` (server/config.ts). `limits` may name only some. */
  readonly config?: Partial<Omit<ServerConfig, 'limits'>> & { readonly limits?: Partial<ProgramLimits> };
  /** The environment settings are read from; default `process.env`. `{}`: defaults only. */
  readonly env?: NodeJS.ProcessEnv;
  /** An in-process stand-in model, asked first each turn (tests embedding the server). */
  readonly model?: ModelFunction;
  /** Scenario rules, as an object or a file path; overrides `PTC_SCENARIOS`. Validated either way. */
  readonly scenarios?: z.input<typeof ScenarioFile> | string;
  /** In-process answers for the emulated hosted shell and code_interpreter, asked before the scenario's. */
  readonly hosted?: HostedHandlers;
  /**
   * Where `store: true` responses live: a store kind (as `PTC_STORE`) or a store of your own.
   * With `memory` and no `dataDir`, the server writes nothing to disk.
   */
  readonly store?: StoreKind | ResponseStore;
  /** pino logger options, or false for none. Default: pino at the configured level. */
  readonly logger?: FastifyServerOptions['logger'];
}

/** The longest path segment (a response id) the router hands to a route. */
const MAX_PATH_PARAM_LENGTH = 1024;

/** Routes that answer without an API key: the index, health probes and metrics scrapes. */
const PUBLIC_PATHS = new Set(['/', '/v1', '/health', '/metrics']);

/** Maps whatever a route or Fastify threw onto the OpenAI error envelope. */
function toApiError(error: FastifyError | Error, bodyLimitBytes: number): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (error instanceof StoreUnavailableError) return new ApiError('store_unavailable', `The response store is unavailable: ${error.message}. Retry later.`, null, { 'retry-after': '1' });
  const code = 'code' in error ? error.code : undefined;
  const statusCode = 'statusCode' in error ? error.statusCode : undefined;
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('request_too_large', `The request body exceeds the limit of ${bodyLimitBytes} bytes (PTC_BODY_LIMIT_BYTES).`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type', 'The request body must be JSON with the header Content-Type: application/json.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('invalid_json', 'The request body is empty; send a JSON object.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('invalid_json', 'The request body does not match its Content-Length.');
  }
  if (statusCode === 400 && (error instanceof SyntaxError || /JSON|__proto__|constructor/i.test(error.message))) {
    return new ApiError('invalid_json', `We could not parse the JSON body of your request: ${error.message}`);
  }
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    return new ApiError('invalid_value', error.message);
  }
  return undefined;
}

export async function buildServer(options: BuildServerOptions = {}): Promise<FastifyInstance> {
  const loaded = loadConfig(options.env ?? process.env);
  let limits: ProgramLimits;
  try {
    // Limits given in code are checked as those from the environment are, over them.
    limits = resolveLimits({ ...loaded.limits, ...options.config?.limits });
  } catch (error) {
    throw new ConfigError(`config.limits: ${(error as Error).message}`);
  }
  const config: ServerConfig = { ...loaded, ...options.config, limits, ...(typeof options.store === 'string' ? { store: options.store } : {}) };
  const store =
    typeof options.store === 'object' ? options.store : createResponseStore({ kind: config.store, dataDir: dataDirOf(config), redisUrl: config.redisUrl, redisPrefix: config.redisPrefix });
  const runtimeOptions = { pausedTtlMs: config.pausedTtlMs, maxPausedPrograms: config.maxPausedPrograms, maxPausedHeapBytes: config.maxPausedHeapBytes };
  let onWorkerDeath: (pid: number | undefined, reason: string, detail: string) => void = () => {};
  const runtime: ProgramEngine =
    config.workers > 0
      ? new WorkerPool({
          size: config.workers,
          runtime: runtimeOptions,
          heartbeatMs: config.workerHeartbeatMs,
          heartbeatTimeoutMs: config.workerHeartbeatTimeoutMs,
          maxRssBytes: config.workerMaxRssBytes,
          maxIdleCpuShare: config.workerMaxIdleCpuShare,
          onWorkerDeath: (pid, reason, detail) => onWorkerDeath(pid, reason, detail),
        })
      : new ProgramRuntime(runtimeOptions);
  if (runtime instanceof WorkerPool) await runtime.ready();
  const sealingKeys = loadSealingKeys({
    secret: config.fingerprintKey,
    oldSecrets: config.fingerprintOldKeys,
    dataDir: dataDirOf(config),
    // A store of the embedder's own is taken for durable state, which the key must outlive.
    persist: typeof options.store === 'object' || keepsKeyFile(config),
  });

  const chain: ModelFunction[] = [];
  if (options.model) chain.push(options.model);
  const scenarioSource = options.scenarios ?? config.scenariosPath;
  const scenarios = scenarioSource === undefined ? undefined : typeof scenarioSource === 'string' ? loadScenarioFile(scenarioSource) : parseScenarios(scenarioSource);
  if (scenarios) chain.push(scenarioModel(scenarios));
  chain.push(inlineModel);
  const journal = new RequestJournal(config.journalSize);
  const background = new BackgroundJobs();

  const app = Fastify({
    logger: options.logger ?? { level: config.logLevel },
    bodyLimit: config.bodyLimitBytes,
    genReqId: () => newId('req'),
    requestIdHeader: false,
    // Ids reach the routes (and their 404s) whatever their length, up to this.
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    // The router's own refusals (a malformed URL, an absurd path segment) in the envelope too.
    frameworkErrors: (error, request, reply) => {
      const apiError =
        error.code === 'FST_ERR_BAD_URL'
          ? new ApiError('invalid_value', `The URL ${request.url} is not valid (malformed percent-encoding).`)
          : new ApiError('unknown_url', `Invalid URL (${request.method} ${request.url.split('?')[0]}).`);
      void (reply as unknown as FastifyReply).status(apiError.status).header('x-request-id', request.id).send(apiError.toEnvelope());
    },
    // Requests Node's HTTP parser refuses never reach Fastify: answer them in the envelope, then close.
    clientErrorHandler: (error, socket) => {
      if (!socket.writable) return socket.destroy();
      const tooLarge = (error as NodeJS.ErrnoException).code === 'HPE_HEADER_OVERFLOW';
      const body = new ApiError(tooLarge ? 'request_too_large' : 'invalid_json', tooLarge ? 'The request headers are too large.' : `The HTTP request is malformed: ${error.message}.`, null, {}, tooLarge ? 431 : 400).toEnvelope();
      const json = JSON.stringify(body);
      socket.end(
        `HTTP/1.1 ${tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request'}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(json)}\r\nx-request-id: ${newId('req')}\r\nConnection: close\r\n\r\n${json}`,
      );
    },
  });

  onWorkerDeath = (pid, reason, detail) => app.log.warn({ worker: pid, reason }, `worker replaced: ${detail}`);

  // Bodies are JSON only: Fastify would otherwise read text/plain into a string.
  app.removeContentTypeParser('text/plain');

  let draining = false;
  app.decorate('drain', () => {
    draining = true;
  });

  // Nothing downstream (validation messages, usage, stores, the reply) may recurse into an
  // absurdly nested body: it is refused before anything reads it.
  app.addHook('preValidation', async (request) => {
    if (jsonDepthExceeds(request.body, MAX_JSON_DEPTH)) {
      throw new ApiError('invalid_json', `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`);
    }
  });

  // While draining, every reply ends its connection: a keep-alive connection busy when the
  // drain began would otherwise stay open and hold close() up.
  app.addHook('onSend', async (_request, reply) => {
    if (draining) reply.header('connection', 'close');
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (draining) {
      reply.header('connection', 'close');
      throw new ApiError('shutting_down', 'The server is shutting down and takes no new requests; retry on another instance or after it restarts.', null, { 'retry-after': '1' });
    }
    if (config.apiKey === undefined || PUBLIC_PATHS.has(request.url.split('?')[0]!)) return;
    if (request.headers.authorization !== `Bearer ${config.apiKey}`) {
      throw new ApiError('invalid_api_key', 'Incorrect API key provided. Send the key in PTC_API_KEY as Authorization: Bearer <key>.');
    }
  });

  // The journal: what each API request did, noted by the routes, recorded when the reply is sent.
  app.decorateRequest('journal', null);
  app.decorateRequest('streamedByHand', false);
  const note = (request: FastifyRequest, details: JournalDetails): void => {
    request.journal = { ...request.journal, ...details };
  };
  const record = (request: FastifyRequest, status: number, elapsed: number): void => {
    const path = request.url.split('?')[0]!;
    if (!path.startsWith('/v1/') || path.startsWith('/v1/emulator/')) return;
    journal.record({
      request_id: request.id,
      at: new Date().toISOString(),
      method: request.method,
      path,
      status,
      duration_ms: Math.round(elapsed * 1000) / 1000,
      ...request.journal,
    });
  };
  app.addHook('onResponse', async (request, reply) => {
    if (!request.streamedByHand) record(request, reply.statusCode, reply.elapsedTime);
  });

  app.setErrorHandler((error: FastifyError | Error, request, reply) => {
    let apiError = toApiError(error, config.bodyLimitBytes);
    if (!apiError) {
      request.log.error({ err: error }, 'unexpected error');
      apiError = new ApiError('server_error', `The server had an error while processing your request (request id ${request.id}).`);
    }
    const envelope = apiError.toEnvelope();
    note(request, {
      error: envelope.error as { code: string; type: string; message: string; param: string | null },
      ...((API_ERRORS[apiError.code] as ApiErrorDefinition).clientLoop ? { client_loop: { rejected: apiError.code, tolerated: [] } } : {}),
    });
    return reply.status(apiError.status).headers(apiError.headers).send(envelope);
  });

  app.setNotFoundHandler((request) => {
    throw new ApiError('unknown_url', `Invalid URL (${request.method} ${request.url.split('?')[0]}).`);
  });

  // One MCP client for the server's life: connections to each MCP server are kept and reused,
  // within the pool's bounds.
  const mcp = new McpClients({ idleTimeoutMs: config.mcpIdleTimeoutMs, maxConnections: config.mcpMaxConnections, allowedUrls: config.mcpAllowedUrls });

  registerResponseRoutes(app, {
    store,
    clientChecks: config.clientChecks,
    maxInputItems: config.maxInputItems,
    respond: {
      store,
      services: {
        runtime,
        claims: new ProgramClaims(),
        standIn: new ModelStandIn(chain),
        sealingKeys,
        limits: config.limits,
        schemaBounds: { maxBytes: config.maxSchemaBytes, compileTimeoutMs: config.schemaCompileTimeoutMs },
        programExpiryMs: config.programExpiryMs,
        hosted: new HostedTools(options.hosted, scenarios?.hosted),
        mcp,
        mcpTimeoutMs: config.mcpTimeoutMs,
      },
      scenarioKnobs: scenarios ? scenarioKnobs(scenarios) : () => undefined,
    },
    background,
    gate: new TurnGate({ maxConcurrent: config.maxConcurrentTurns, maxQueued: config.maxQueuedTurns, retryAfterMs: config.busyRetryAfterMs }),
    note,
    recordStream: (request, reply) => record(request, reply.raw.statusCode, reply.elapsedTime),
    recordBackground: ({ requestId, status, ...details }) =>
      journal.record({ request_id: requestId, at: new Date().toISOString(), method: 'BACKGROUND', path: `/v1/responses/${requestId}`, status, duration_ms: 0, ...details }),
  });
  registerJournalRoutes(app, journal);
  registerModelRoutes(app, config.models, Math.floor(Date.now() / 1000));
  registerIndexRoutes(app);
  registerHealthRoutes(app, runtime, store);
  registerMetricsRoutes(app, runtime);

  app.addHook('onClose', async () => {
    await background.stopAll();
    await mcp.close();
    await runtime.close();
    await store.close();
  });
  return app;
}
