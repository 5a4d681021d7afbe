import type { Socket } from 'node:net';
import type { z } from 'zod';
import fastifyWebsocket from '@fastify/websocket';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { resolveLimits, type ProgramLimits } from '../runtime/index.ts';
import { ArrivingBodies } from './api/http/arriving-bodies.ts';
import { holdContinues } from './api/http/expect-continue.ts';
import { newRequestId } from './api/http/request-timeout.ts';
import { parseJsonBodies } from './api/http/json-body-reader.ts';
import { ApiError } from './platform/api-error.ts';
import { BackgroundResponses } from './api/responses/background.ts';
import { answerClientError, answerFrameworkError, registerErrorHandlers } from './api/http/error-handler.ts';
import { RequestJournal } from './api/journal/journal.ts';
import { journalRequests } from './api/journal/journal-hooks.ts';
import { registerJournalRoutes } from './api/journal/journal-routes.ts';
import { INSPECTOR_PATHS, registerInspectorRoutes } from './api/inspector/routes.ts';
import { registerJournalEventRoutes } from './api/inspector/journal-events.ts';
import { TurnGate } from './engine/turn-gate.ts';
import { createLogDestination } from './platform/log-destination.ts';
import { createProgramEngine } from './platform/program-engine.ts';
import { loadSealingKeys } from './platform/sealing-keys.ts';
import { ConfigError, dataDirOf, keepsKeyFile, loadConfig, type ServerConfig } from './platform/config.ts';
import { modelBackend } from './engine/stand-ins/backend/backend-model.ts';
import { inlineModel } from './engine/stand-ins/inline-model.ts';
import type { ModelFunction } from './engine/stand-ins/model-decision.ts';
import { autopilotModel, createCallPlanner } from './engine/stand-ins/autopilot/autopilot-model.ts';
import { Explorer } from './engine/stand-ins/explorer/explorer-model.ts';
import { ExploreLedger, type ExploredConversation } from './engine/explore/explore-ledger.ts';
import { registerExploreRoutes } from './api/explore/explore-routes.ts';
import { loadScenarioFile, parseScenarios, scenarioKnobs, scenarioModel, type ScenarioFile } from './engine/stand-ins/scenario-model.ts';
import { ModelStandIn, type NamedStandIn } from './engine/stand-ins/stand-in.ts';
import { CassetteReplay } from './engine/stand-ins/cassettes/cassette-replay.ts';
import { registerRecordRoutes } from './api/cassettes/record-routes.ts';
import { HostedTools, type HostedHandlers } from './engine/stand-ins/hosted-tools.ts';
import { ProgramClaims } from './engine/conversation/program-claims.ts';
import type { RespondDeps } from './engine/conversation/respond.ts';
import { warmTokenizer } from './engine/usage.ts';
import { McpClients } from './platform/mcp/mcp-client.ts';
import { registerAgentsApi } from './api/agents/register.ts';
import { registerCompactAndCountRoutes } from './api/responses/compact-and-count.ts';
import { registerConversationRoutes } from './api/conversations/conversations-routes.ts';
import { registerHealthRoutes } from './api/service/health.ts';
import { registerIndexRoutes } from './api/service/index-routes.ts';
import { registerMetricsRoutes } from './api/service/metrics.ts';
import { registerModelRoutes } from './api/service/models.ts';
import { registerResponseRoutes } from './api/responses/responses-routes.ts';
import { registerResponsesSocketRoute, socketErrorHandler } from './api/responses/responses-socket.ts';
import { createResponseStore, type StoreKind } from './platform/stores/create-store.ts';
import type { ResponseStore } from './platform/stores/response-store.ts';
import { WebhookEndpoints } from './platform/webhooks/webhook-endpoints.ts';
import { WebhookSender } from './platform/webhooks/webhook-sender.ts';
import { registerWebhookRoutes } from './api/webhooks/webhook-routes.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Stops taking new requests (503 shutting_down) while the running ones finish; then call close(). */
    drain(): void;
    /** Writes the log lines held for a batch now (the CLI, before its start line), resolving once written (at most a second): the server's own destination only. */
    flushLogs(): Promise<void>;
    /** Explore mode's controls (`ptc-emulator explore`): the seed of requests that set none, and what was explored. */
    explorer: { setSeed(seed: number): void; conversations(): ExploredConversation[] };
  }
}

export interface BuildServerOptions {
  /** Settings; anything absent comes from `env` (server/platform/config.ts). `limits` may name only some. */
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
  /**
   * pino logger options, or false for none. Default: pino at the configured level, to stdout in
   * batches and bounded (`logBatchBytes`, `logFlushMs`, `logBufferBytes`).
   */
  readonly logger?: FastifyServerOptions['logger'];
}

/** The longest path segment (a response id) the router hands to a route. */
const MAX_PATH_PARAM_LENGTH = 1024;

/** Routes that answer without an API key: the index, health probes and metrics scrapes. */
const PUBLIC_PATHS = new Set(['/', '/v1', '/health', '/metrics']);

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
    typeof options.store === 'object'
      ? options.store
      : createResponseStore({ kind: config.store, dataDir: dataDirOf(config), redisUrl: config.redisUrl, redisPrefix: config.redisPrefix });
  // What the pool reports as it starts (a worker that died, one not pinned) comes before the
  // app's logger exists: kept, and written once it does.
  const early: ((log: FastifyBaseLogger) => void)[] = [];
  let logPool = (write: (log: FastifyBaseLogger) => void): void => {
    early.push(write);
  };
  const runtime = await createProgramEngine(config, {
    onPinFailed: (pid, detail) => logPool((log) => log.warn({ worker: pid }, `workers are not pinned to CPUs (PTC_WORKER_CPU_PINNING): ${detail}`)),
    onWorkerDeath: (pid, reason, detail) => logPool((log) => log.warn({ worker: pid, reason }, `worker replaced: ${detail}`)),
  });
  const sealingKeys = loadSealingKeys({
    secret: config.fingerprintKey,
    oldSecrets: config.fingerprintOldKeys,
    dataDir: dataDirOf(config),
    // A store of the embedder's own is taken for durable state, which the key must outlive.
    persist: typeof options.store === 'object' || keepsKeyFile(config),
  });

  const chain: NamedStandIn[] = [];
  if (options.model) chain.push({ name: 'function', model: options.model });
  // Replay mode: the cassettes decide every turn, and nothing after them in the chain is asked.
  const replay =
    config.cassettes.replayDir === undefined
      ? undefined
      : new CassetteReplay({ dir: config.cassettes.replayDir, strict: config.cassettes.replayStrict, redactPattern: config.cassettes.redactPattern });
  if (replay) chain.push({ name: 'cassette', model: replay.model });
  const scenarioSource = options.scenarios ?? config.scenariosPath;
  const scenarios =
    scenarioSource === undefined ? undefined : typeof scenarioSource === 'string' ? loadScenarioFile(scenarioSource) : parseScenarios(scenarioSource);
  if (scenarios) chain.push({ name: 'scenario', model: scenarioModel(scenarios) });
  // A real model decides every turn the scenario leaves: fenced blocks in a user's message are its to read.
  if (config.modelBackend) chain.push({ name: 'model_backend', model: modelBackend(config.modelBackend) });
  chain.push({ name: 'inline', model: inlineModel });
  // The autopilot's planner serves the explorer too (a request may explore on any server: its
  // knob); its threads start only once a plan is asked for.
  const planner = createCallPlanner();
  const explorer = new Explorer({ planner, limits: config.limits, always: config.explore });
  explorer.seed = config.exploreSeed;
  const exploreLedger = new ExploreLedger(explorer);
  chain.push({ name: 'explorer', model: explorer.model });
  // Last: whatever nothing else decided, as a model using PTC would.
  if (config.autopilot) chain.push({ name: 'autopilot', model: autopilotModel(planner) });
  const journal = new RequestJournal(config.journalSize);
  warmTokenizer();

  // Unless the caller brings its own logger: stdout, in batches and bounded (log-destination.ts).
  const logs = options.logger === undefined ? createLogDestination() : undefined;
  const app = Fastify({
    logger: logs ? { level: config.logLevel, stream: logs.stream } : options.logger,
    bodyLimit: config.bodyLimitBytes,
    requestTimeout: config.requestTimeoutMs,
    // Node's server must be made with its request timeout (set afterwards, as Fastify does, it is
    // never checked), and looks for requests past it every so often: 30 s by default, too seldom
    // for a short one.
    http: { requestTimeout: config.requestTimeoutMs, connectionsCheckingInterval: Math.min(30_000, Math.ceil(config.requestTimeoutMs / 4)) },
    genReqId: newRequestId,
    requestIdHeader: false,
    // Ids reach the routes (and their 404s) whatever their length, up to this.
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    // Refusals that never reach the error handler: the router's, and Node's HTTP parser's.
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
  });

  // WebSocket mode (routes/responses-ws.ts). A message is bounded as a body is; the route closes
  // its sockets at shutdown, after the request each is serving, so the plugin's own closing
  // (every socket at once, with no close code) is left out. One read of a socket can carry
  // thousands of short messages: ws hands them over one a turn of the loop, not all in one.
  await app.register(fastifyWebsocket, {
    options: { maxPayload: config.bodyLimitBytes, allowSynchronousEvents: false },
    errorHandler: socketErrorHandler,
    preClose: (done) => done(),
  });

  logPool = (write) => write(app.log);
  for (const write of early.splice(0)) write(app.log);

  // Bodies are JSON only: Fastify would otherwise read text/plain into a string. Large ones are
  // parsed off the loop (json-body.ts).
  app.removeContentTypeParser('text/plain');
  const arrivingBodies = new ArrivingBodies(config.maxArrivingBodyBytes);
  parseJsonBodies(app, config.maxBodyValues, arrivingBodies);
  // `Expect: 100-continue`: the 100 is sent as the body reader starts, not by Node as the head
  // comes, so that a client never uploads a body the server refuses by its head.
  holdContinues(app);

  let draining = false;
  app.decorate('drain', () => {
    draining = true;
  });

  // Connections that have not sent a byte yet: Node's close() counts them as busy (it waits for
  // their first request, up to headersTimeout), and an HTTP client may open one ahead of need
  // (undici does after a stream it aborted). Closing drops them: they hold no request.
  const connections = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  app.addHook('preClose', async () => {
    for (const socket of connections) if (socket.bytesRead === 0) socket.destroy();
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
      throw new ApiError('shutting_down', 'The server is shutting down and takes no new requests; retry on another instance or after it restarts.', null, {
        'retry-after': '1',
      });
    }
    if (config.apiKey === undefined || PUBLIC_PATHS.has(request.url.split('?')[0]!) || (config.inspector && INSPECTOR_PATHS.has(request.url.split('?')[0]!)))
      return;
    if (request.headers.authorization !== `Bearer ${config.apiKey}`) {
      throw new ApiError('invalid_api_key', 'Incorrect API key provided. Send the key in PTC_API_KEY as Authorization: Bearer <key>.');
    }
  });

  // Errors are journaled too: the error handler notes them on the request's entry.
  const recorder = journalRequests(app, journal);
  registerErrorHandlers(app, { bodyLimitBytes: config.bodyLimitBytes, journal: recorder });
  replay?.attach(app, recorder.note);

  // One MCP client for the server's life: connections to each MCP server are kept and reused,
  // within the pool's bounds.
  const mcp = new McpClients({ idleTimeoutMs: config.mcpIdleTimeoutMs, maxConnections: config.mcpMaxConnections, allowedUrls: config.mcpAllowedUrls });

  const respond: RespondDeps = {
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
    standInKnobs: (context) => {
      // A scenario rule's knobs over the explored shape's.
      const explored = explorer.knobs(context);
      const scripted = scenarios ? scenarioKnobs(scenarios)(context) : undefined;
      return explored || scripted ? { ...explored, ...scripted } : undefined;
    },
    observer: exploreLedger,
    maxReferencedBytes: config.bodyLimitBytes,
  };
  // Webhooks go to the endpoints of the settings and those made through the API (in the store).
  const webhooks = new WebhookSender({
    endpoints: new WebhookEndpoints(store.records, config.webhooks),
    maxAttempts: config.webhooks.maxAttempts,
    retryMs: config.webhooks.retryMs,
    onAttempt: recorder.recordWebhook,
    log: app.log,
  });
  const background = new BackgroundResponses({ store, respond, recordBackground: recorder.recordBackground, webhooks });
  // Before the HTTP server waits for the requests under way: those waiting on a background response stop waiting.
  app.addHook('preClose', async () => background.closing());

  // One gate for every turn, whichever way its request came (HTTP or a WebSocket message).
  const gate = new TurnGate({ maxConcurrent: config.maxConcurrentTurns, maxQueued: config.maxQueuedTurns, retryAfterMs: config.busyRetryAfterMs });
  // First: the index lists every route registered after it.
  registerIndexRoutes(app);
  registerResponsesSocketRoute(app, {
    respond,
    gate,
    clientChecks: config.clientChecks,
    maxInputItems: config.maxInputItems,
    maxBodyValues: config.maxBodyValues,
    bodyLimitBytes: config.bodyLimitBytes,
    arrivingBodies,
    requestTimeoutMs: config.requestTimeoutMs,
    draining: () => draining,
    recordSocketMessage: recorder.recordSocketMessage,
  });
  // Record mode: the upstream answers every /v1/responses request, and its decisions are kept.
  const { recordDir, upstreamUrl } = config.cassettes;
  if (recordDir !== undefined && upstreamUrl !== undefined) {
    registerRecordRoutes(app, {
      dir: recordDir,
      upstreamUrl,
      upstreamApiKey: config.cassettes.upstreamApiKey,
      redactPattern: config.cassettes.redactPattern,
      note: recorder.note,
    });
  } else {
    registerResponseRoutes(app, {
      store,
      clientChecks: config.clientChecks,
      maxInputItems: config.maxInputItems,
      respond,
      background,
      gate,
      note: recorder.note,
      recordStream: recorder.recordStream,
    });
  }
  registerCompactAndCountRoutes(app, { store, sealingKeys, maxInputItems: config.maxInputItems, maxReferencedBytes: config.bodyLimitBytes });
  registerConversationRoutes(app, store, sealingKeys, config.bodyLimitBytes);
  const agents = registerAgentsApi(app, { store, respond, gate, recorder, webhooks, bodyLimitBytes: config.bodyLimitBytes });
  registerWebhookRoutes(app, { records: store.records, sender: webhooks, allowedUrls: config.webhooks.allowedUrls });
  registerJournalRoutes(app, journal);
  registerExploreRoutes(app, exploreLedger);
  app.decorate('flushLogs', async () => logs?.flush());
  app.decorate('explorer', {
    setSeed: (seed: number) => {
      explorer.seed = seed;
    },
    conversations: () => exploreLedger.conversations(),
  });
  registerJournalEventRoutes(app, journal);
  if (config.inspector) registerInspectorRoutes(app);
  registerModelRoutes(app, config.models, Math.floor(Date.now() / 1000));
  registerHealthRoutes(app, runtime, store);
  registerMetricsRoutes(app, runtime, arrivingBodies, logs);

  app.addHook('onClose', async () => {
    agents?.stopAll();
    await background.stopAll();
    // After the jobs: a background response the shutdown failed still tells of it.
    await webhooks.close();
    await mcp.close();
    await planner.close();
    await runtime.close();
    await store.close();
    await logs?.close();
  });
  return app;
}
