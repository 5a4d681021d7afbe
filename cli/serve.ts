import { accessSync, constants, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildServer } from '../server/app.ts';
import { ConfigError, dataDirOf, keepsKeyFile, loadConfig, type ServerConfig } from '../server/platform/config.ts';
import { loadScenarioFile, type ScenarioFile } from '../server/engine/stand-ins/scenario-model.ts';
import { PACKAGE } from '../server/platform/package-info.ts';
import { KEY_FILE } from '../server/platform/sealing-keys.ts';
import { SQLITE_FILE_NAME } from '../server/platform/stores/create-store.ts';
import { ensureNodeFlag } from './node-flag.ts';
import { serveHelp, settingsFromFlags } from './setting-flags.ts';
import { UsageError } from './usage-error.ts';

/**
 * The data directory must exist and be writable, and the files already in it usable, before
 * the store or the key file opens there: otherwise a one-line error, not a stack.
 */
function checkDataDir(config: ServerConfig): void {
  const keyFile = keepsKeyFile(config);
  if (config.store !== 'sqlite' && !keyFile) return;
  const dataDir = dataDirOf(config);
  const check = (path: string, mode: number, exists: boolean): void => {
    try {
      if (!exists) mkdirSync(path, { recursive: true });
      accessSync(path, mode);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (exists && code === 'ENOENT') return;
      throw new UsageError(
        `PTC_DATA_DIR ${resolve(dataDir)} cannot be used: ${resolve(path)}: ${code ?? (error as Error).message} (set --data-dir or PTC_DATA_DIR to a directory this user can write)`,
      );
    }
  };
  check(dataDir, constants.R_OK | constants.W_OK, false);
  if (keyFile) check(join(dataDir, KEY_FILE), constants.R_OK, true);
  if (config.store === 'sqlite') check(join(dataDir, SQLITE_FILE_NAME), constants.R_OK | constants.W_OK, true);
}

/** The one line a person reads at start: where the API is, and what this server runs with. */
function startLine(config: ServerConfig, origin: string, scenarios: ScenarioFile | undefined): string {
  const store =
    config.store === 'sqlite'
      ? `sqlite (${resolve(dataDirOf(config), SQLITE_FILE_NAME)})`
      : config.store === 'redis'
        ? `redis (prefix ${config.redisPrefix})`
        : 'memory (lost on exit)';
  const workers = config.workers === 0 ? 'isolates in process' : `${config.workers} worker${config.workers === 1 ? '' : 's'}`;
  const rules = scenarios
    ? `${scenarios.rules.length} scenario rule${scenarios.rules.length === 1 ? '' : 's'} from ${config.scenariosPath}`
    : 'no scenario file';
  // What decides the turns nothing else does (docs/STAND-IN.md).
  const autopilot = config.autopilot ? 'autopilot on' : 'autopilot off (unscripted turns run nothing)';
  // The backend's URL and model, never its key.
  const backend = config.modelBackend ? ` · model backend ${config.modelBackend.url}${config.modelBackend.model ? ` (${config.modelBackend.model})` : ''}` : '';
  const { recordDir, upstreamUrl, replayDir } = config.cassettes;
  // Record and replay change what answers (docs/CASSETTES.md): the line says so.
  const cassettes = recordDir
    ? ` · recording cassettes to ${recordDir} from ${upstreamUrl}`
    : replayDir
      ? ` · replaying cassettes from ${replayDir}${config.cassettes.replayStrict ? ' (strict)' : ''}`
      : '';
  return `ptc-emulator ${PACKAGE.version} · API at ${origin}/v1 · store ${store} · ${workers} · ${rules} · ${autopilot}${backend}${cassettes}`;
}

/** `ptc-emulator serve`: serve on HOST:PORT until SIGINT or SIGTERM. */
export async function serve(args: readonly string[]): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(serveHelp());
    return;
  }
  const { env, fromFlag } = settingsFromFlags(args);
  // Programs read local time (`getHours()`, `toString()`): every instance must run in one time
  // zone or a replay on another instance diverges. Isolates created after this see UTC.
  process.env.TZ = 'UTC';
  // Flags over the environment, read once: buildServer reads the same, so a flag that mends a
  // bad environment value is not undone there.
  const settings = { ...process.env, ...env };
  let config: ServerConfig;
  try {
    config = loadConfig(settings);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // A message names the variable; when a flag set it, name the flag the user typed.
    const variable = /^[A-Z_]+/.exec(error.message)?.[0] ?? '';
    throw new UsageError(fromFlag.has(variable) ? `${fromFlag.get(variable)} (${error.message})` : error.message);
  }
  // Isolates in this process need Node's flag; workers get it from the pool.
  if (config.workers === 0) await ensureNodeFlag();
  checkDataDir(config);
  const scenarios = config.scenariosPath === undefined ? undefined : loadScenarioFile(config.scenariosPath);
  let app;
  try {
    app = await buildServer({ config, env: settings, ...(scenarios ? { scenarios } : {}) });
  } catch (error) {
    // What is in the data directory (a SQLite file that is not one, a directory where the key
    // file goes) is the operator's to mend: one line, as for any setting.
    const { code, message } = error as NodeJS.ErrnoException;
    // node:sqlite's errors have code ERR_SQLITE_ERROR; file-system errors have an errno code.
    if (code === 'ERR_SQLITE_ERROR' || (code !== undefined && /^E[A-Z]+$/.test(code))) {
      throw new UsageError(`PTC_DATA_DIR ${resolve(dataDirOf(config))} cannot be used: ${message.split('\n')[0]}`);
    }
    throw error;
  }

  // Drain: stop taking connections, let running requests finish (their programs run to their
  // step's end), stop background jobs and workers, close the store; exit 1 if it takes too long.
  // A second signal while draining (a terminal's Ctrl-C reaches a re-executed child twice) changes nothing.
  let draining = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (draining) return;
      draining = true;
      app.log.info({ signal }, 'draining');
      // Written synchronously: pino's asynchronous stream would lose a line that precedes exit().
      setTimeout(() => {
        process.stderr.write(`ptc-emulator: requests still running at the shutdown deadline (${config.shutdownTimeoutMs} ms); exiting\n`);
        process.exit(1);
      }, config.shutdownTimeoutMs).unref();
      app.drain();
      void app.close().then(
        () => process.exit(0),
        (error: unknown) => {
          process.stderr.write(`ptc-emulator: shutdown failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
          process.exit(1);
        },
      );
    });
  }
  let origin: string;
  // Fastify logs its own "listening" line; the start line below says more, in words, so that
  // one line is held back (the level is restored before any request is served).
  const level = app.log.level;
  app.log.level = 'warn';
  try {
    origin = await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    await app.close();
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new UsageError(`port ${config.port} on ${config.host} is already in use (set --port or PORT; 0 picks a free one)`);
    if (code === 'EACCES')
      throw new UsageError(`this user may not listen on ${config.host}:${config.port} (ports below 1024 need privileges; set --port or PORT)`);
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') throw new UsageError(`cannot listen on ${config.host}: no such local address (set --host or HOST)`);
    throw error;
  } finally {
    app.log.level = level;
  }
  // A stdout or stderr that fails (a reader gone: EPIPE; a full disk) silences what goes there, as
  // it does the log lines (server/platform/log-destination.ts): it never stops the server. A
  // failed stdout is said once on stderr, which may still work: the start line names the port.
  process.stdout.once('error', (error: NodeJS.ErrnoException) => {
    process.stderr.write(`ptc-emulator: stdout failed (${error.code ?? error.message}): the start line and the log lines are not written\n`);
  });
  process.stdout.on('error', () => {});
  process.stderr.on('error', () => {});
  // What was logged as it started (a worker not pinned) comes before the start line.
  await app.flushLogs();
  process.stdout.write(`${startLine(config, origin, scenarios)}\n`);
  // Serving goes on (the store may come back: Redis is reconnected to), but not in silence.
  const health = await app.inject({ method: 'GET', url: '/health' });
  if (health.statusCode !== 200) {
    const problem = (health.json() as { store?: { error?: string } }).store?.error ?? health.body;
    process.stderr.write(`ptc-emulator: warning: the response store is unavailable (${problem}); requests that need it are answered 503 until it is back\n`);
  }
}
