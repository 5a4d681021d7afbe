import { buildServer } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { ScenarioError } from './model/scenario-model.ts';

/** `npm start`: serve on HOST:PORT until SIGINT or SIGTERM. */
async function main(): Promise<void> {
  // Programs read local time (`getHours()`, `toString()`): every instance must run in one time
  // zone or a replay on another instance diverges. Isolates created after this see UTC.
  process.env.TZ = 'UTC';
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`ptc-emulator: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  let app;
  try {
    app = await buildServer({ config });
  } catch (error) {
    if (error instanceof ScenarioError) {
      process.stderr.write(`ptc-emulator: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  // Drain: stop taking connections, let running requests finish (their programs run to their
  // step's end), stop background jobs and workers, close the store; exit 1 if it takes too long.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
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
  await app.listen({ host: config.host, port: config.port });
}

await main();
