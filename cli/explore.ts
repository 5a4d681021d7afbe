import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { buildServer } from '../server/app.ts';
import { ConfigError, loadConfig } from '../server/platform/config.ts';
import { exploreHtml } from '../server/api/explore/explore-html.ts';
import { exploreReport, reportTable, type ExploreRun } from '../server/engine/explore/explore-report.ts';
import { SHAPES } from '../server/engine/stand-ins/explorer/shapes.ts';
import { EXPLORE_URL_VARIABLE } from '../testing/start-emulator.ts';
import { ensureNodeFlag } from './node-flag.ts';
import { settingsFromFlags } from './setting-flags.ts';
import { UsageError } from './usage-error.ts';

/**
 * `ptc-emulator explore [--seeds N] [--seed S] [--json] [--html FILE] [--timeout-ms MS] [serve flags] -- COMMAND [ARGS…]`:
 * starts an emulator in explore mode, runs the user's command (their test suite, their script)
 * once per seed with OPENAI_BASE_URL pointing at it, then prints what each shape of the
 * catalogue came to on their client loop (docs/EXPLORE.md). Exit code 0 when every shape the
 * runs reached passed and every run of the command succeeded, 1 when a shape or a run failed or
 * no shape was reached, 2 for a command line it cannot run.
 */

export const EXPLORE_HELP = `Usage: ptc-emulator explore [--seeds N] [--seed S] [--json] [--html FILE] [--timeout-ms MS] [serve flags] -- COMMAND [ARGS...]

Runs COMMAND once per seed (S, S+1, ... S+N-1; default 20 seeds from 0) against an emulator in explore
mode (OPENAI_BASE_URL and OPENAI_API_KEY set for it; PTC_EXPLORE_SEED says which seed), each
conversation's program drawn from ${SHAPES.length} shapes a PTC client loop must survive, and prints, per
shape: completed, the client-loop 400 its loop got, abandoned, or never reached.
  --seeds N        runs of COMMAND (default 20)
  --seed S         the first seed (default 0)
  --json           print the report as JSON instead of a table
  --html FILE      also write the report as an HTML page
  --timeout-ms MS  how long one run may take before it is killed (default 120000)
Any flag of \`serve\` (serve --help) sets the emulator up, e.g. --workers 0.
`;

interface ExploreArgs {
  readonly seeds: number;
  readonly firstSeed: number;
  readonly json: boolean;
  readonly html: string | undefined;
  readonly timeoutMs: number;
  readonly serveFlags: string[];
  readonly command: string[];
}

function wholeNumber(flag: string, raw: string | undefined, min: number, max: number): number {
  if (raw === undefined) throw new UsageError(`${flag} needs a value`);
  const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) throw new UsageError(`${flag} must be a whole number from ${min} to ${max}, got "${raw}"`);
  return value;
}

function parseArgs(args: readonly string[]): ExploreArgs {
  const split = args.indexOf('--');
  if (split === -1 || split === args.length - 1)
    throw new UsageError('explore needs the command to run after --, e.g. ptc-emulator explore -- node my-loop.mjs (see ptc-emulator explore --help)');
  const own = args.slice(0, split);
  const parsed = {
    seeds: 20,
    firstSeed: 0,
    json: false,
    html: undefined as string | undefined,
    timeoutMs: 120_000,
    serveFlags: [] as string[],
    command: args.slice(split + 1),
  };
  for (let index = 0; index < own.length; index++) {
    const arg = own[index]!;
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = (): string | undefined => inline ?? own[++index];
    switch (flag) {
      case '--seeds':
        parsed.seeds = wholeNumber(flag, value(), 1, 10_000);
        break;
      case '--seed':
        parsed.firstSeed = wholeNumber(flag, value(), 0, 2 ** 32 - 1);
        break;
      case '--json':
        parsed.json = true;
        break;
      case '--html': {
        const file = value();
        if (!file) throw new UsageError('--html needs a file');
        parsed.html = file;
        break;
      }
      case '--timeout-ms':
        parsed.timeoutMs = wholeNumber(flag, value(), 1, 2 ** 31 - 1);
        break;
      default:
        // A flag of serve, with its value (settingsFromFlags checks both).
        parsed.serveFlags.push(arg);
        if (inline === undefined && index + 1 < own.length) parsed.serveFlags.push(own[++index]!);
    }
  }
  return parsed;
}

/** Runs the command once; its output goes to stderr, so that stdout holds the report alone. */
async function runOnce(
  command: readonly string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<{ code: number | null; signal: string | null; timedOut: boolean }> {
  const child = spawn(command[0]!, command.slice(1), { env, stdio: ['ignore', 'pipe', 'inherit'], detached: true });
  child.stdout.pipe(process.stderr, { end: false });
  let timedOut = false;
  const killGroup = (): void => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
  };
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup();
  }, timeoutMs);
  const stop = (): void => killGroup();
  process.once('exit', stop);
  try {
    const [code, signal] = (await once(child, 'close')) as [number | null, string | null];
    return { code, signal, timedOut };
  } catch (error) {
    throw new UsageError(`cannot run ${command[0]}: ${(error as Error).message}`);
  } finally {
    clearTimeout(timer);
    process.off('exit', stop);
  }
}

export async function explore(args: readonly string[]): Promise<number> {
  const split = args.indexOf('--');
  const own = split === -1 ? args : args.slice(0, split);
  if (own.includes('--help') || own.includes('-h')) {
    process.stdout.write(EXPLORE_HELP);
    return 0;
  }
  const options = parseArgs(args);
  const { env } = settingsFromFlags(options.serveFlags, 'explore');
  // Explore mode, in memory, on a free loopback port, set up by the flags alone: a scenario file
  // or a model backend in the environment (PTC_SCENARIOS, …) would decide turns before the
  // explorer, and the command's environment is the user's.
  const settings: NodeJS.ProcessEnv = { PTC_STORE: 'memory', LOG_LEVEL: 'warn', ...env, PTC_EXPLORE: 'on', HOST: '127.0.0.1', PORT: '0' };
  // The HTML report's file must be writable before the runs, not found unwritable after them.
  if (options.html) {
    try {
      writeFileSync(options.html, '');
    } catch (error) {
      throw new UsageError(`--html ${options.html} cannot be written: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  let config;
  try {
    config = loadConfig(settings);
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message);
    throw error;
  }
  process.env.TZ = 'UTC';
  if (config.workers === 0) await ensureNodeFlag();
  const app = await buildServer({ config, env: settings, logger: false });
  try {
    await app.listen({ host: config.host, port: config.port });
    const { port } = app.server.address() as AddressInfo;
    const baseURL = `http://${config.host}:${port}/v1`;
    const runs: ExploreRun[] = [];
    for (let run = 0; run < options.seeds; run++) {
      const seed = options.firstSeed + run;
      app.explorer.setSeed(seed);
      const outcome = await runOnce(
        options.command,
        // PTC_EXPLORE_URL: the test helpers (usePtcEmulator, startEmulator) hand the suite this emulator rather than start their own.
        {
          ...process.env,
          OPENAI_BASE_URL: baseURL,
          OPENAI_API_KEY: process.env.OPENAI_API_KEY ?? 'ptc-emulator',
          PTC_EXPLORE_SEED: String(seed),
          [EXPLORE_URL_VARIABLE]: baseURL,
        },
        options.timeoutMs,
      );
      const ended = outcome.timedOut ? `killed after ${options.timeoutMs} ms` : outcome.signal ? `ended by ${outcome.signal}` : `exited with ${outcome.code}`;
      process.stderr.write(`ptc-emulator explore: seed ${seed}: ${options.command.join(' ')} ${ended}\n`);
      runs.push({ seed, ended, failed: outcome.timedOut || outcome.signal !== null || outcome.code !== 0 });
    }
    const report = exploreReport(app.explorer.conversations(), runs);
    process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : reportTable(report));
    if (options.html) writeFileSync(options.html, exploreHtml(report, { inspectorLinks: false }));
    if (!report.shapes.some((row) => row.reached > 0)) {
      process.stderr.write(
        'ptc-emulator explore: no conversation reached the emulator with tools for programs: does the command read OPENAI_BASE_URL (or use usePtcEmulator), and send {"type": "programmatic_tool_calling"} with its tools?\n',
      );
    }
    return report.passed ? 0 : 1;
  } finally {
    await app.close();
  }
}
