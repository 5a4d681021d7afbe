import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../server/app.ts';
import { CassetteError } from '../server/engine/stand-ins/cassettes/cassette-entry.ts';
import { ConfigError, loadConfig } from '../server/platform/config.ts';
import { loadScenarioFile } from '../server/engine/stand-ins/scenario-model.ts';
import { htmlReport } from './eval/html-report.ts';
import { buildReport, reportNotes, reportTable } from './eval/report.ts';
import { ResponsesClient } from './eval/responses-client.ts';
import { EVAL_MODES, runTask, type RunResult } from './eval/run-task.ts';
import { loadTaskFile } from './eval/task-file.ts';
import { settingsFromFlags } from './setting-flags.ts';
import { UsageError } from './usage-error.ts';

export const EVAL_HELP = `Usage: ptc-emulator eval TASKS.yaml [--json FILE] [--html FILE] [--base-url URL] [serve's flags]

Runs every task of the file twice, once with its tools called directly by the model and once
by the model's programs (programmatic tool calling), running the tools with the file's module,
and prints per task and in total: correct or not, path taken, input / output / total tokens,
model turns, requests, tool calls, retries, tool-output bytes that reached the model's context,
approvals and wall time, with PTC's ratio to direct calling. docs/EVAL.md has the file format.

The model is the emulator's: by default one started here, on a loopback port, with the task
file's scenarios, or a model backend or cassettes set by serve's flags (--model-backend URL
--model NAME, --replay DIR; serve --help lists them all) or PTC_* variables.

  --json FILE      Also write every run's figures and answer as JSON.
  --html FILE      Also write the report as an HTML page with charts.
  --base-url URL   Use the Responses API at URL, with its /v1 (e.g. http://127.0.0.1:8787/v1),
                   instead of starting an emulator; the key is OPENAI_API_KEY. The task
                   file's scenarios are not used.

Exit code: 0 when every run was correct, 1 when one was not, 2 for a usage error.
`;

/** Eval's own flags; the rest are serve's settings for the emulator it starts. */
const OWN_FLAGS = new Set(['--json', '--html', '--base-url']);

function splitArgs(args: readonly string[]): { positionals: string[]; own: Map<string, string>; settings: string[] } {
  const positionals: string[] = [];
  const own = new Map<string, string>();
  const settings: string[] = [];
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (!arg.startsWith('-')) {
      positionals.push(arg);
      continue;
    }
    if (!arg.startsWith('--')) throw new UsageError(`unknown flag ${arg} for eval (see ptc-emulator eval --help)`);
    const equals = arg.indexOf('=');
    const flag = equals === -1 ? arg : arg.slice(0, equals);
    const value = equals === -1 ? args[index + 1] : arg.slice(equals + 1);
    if (equals === -1) index++;
    // `--html --json x` is a missing value, not a file named --json.
    if (value === undefined || value === '' || (equals === -1 && value.startsWith('-'))) throw new UsageError(`${flag} needs a value`);
    if (OWN_FLAGS.has(flag)) own.set(flag, value);
    else settings.push(flag, value);
  }
  return { positionals, own, settings };
}

/** The emulator the runs talk to: one started here unless --base-url names another. */
async function startModel(scenarios: string | undefined, settings: readonly string[]): Promise<{ baseURL: string; apiKey: string; app?: FastifyInstance }> {
  const { env: fromFlags } = settingsFromFlags(settings, 'eval');
  // Settings from the environment and the flags, but never a place on disk, a port or a key:
  // this emulator keeps everything in memory and listens on loopback for this command alone.
  const {
    PTC_DATA_DIR: _dataDir,
    PTC_STORE: _store,
    HOST: _host,
    PORT: _port,
    PTC_API_KEY: _key,
    PTC_SCENARIOS: _scenarios,
    ...env
  } = { ...process.env, ...fromFlags };
  let config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    throw new UsageError(error.message);
  }
  if (scenarios === undefined && !config.modelBackend && !config.cassettes.replayDir) {
    throw new UsageError(
      'nothing would play the model: give the task file scenarios, or set a model backend (--model-backend URL --model NAME) or cassettes (--replay DIR), or --base-url',
    );
  }
  // A model backend or cassettes play the model in place of the task file's scenarios, which
  // would otherwise decide first. Loaded here, as serve does: a file that does not load is
  // refused before any worker starts.
  const elsewhere = config.modelBackend
    ? `--model-backend ${config.modelBackend.url}`
    : config.cassettes.replayDir
      ? `--replay ${config.cassettes.replayDir}`
      : undefined;
  if (elsewhere && scenarios !== undefined) process.stderr.write(`ptc-emulator: the task file's scenarios are not used: ${elsewhere} plays the model\n`);
  const rules = scenarios === undefined || elsewhere ? undefined : loadScenarioFile(scenarios);
  let app: FastifyInstance;
  try {
    app = await buildServer({ ...(rules === undefined ? {} : { scenarios: rules }), store: 'memory', logger: false, env, config: { workers: 1 } });
  } catch (error) {
    if (error instanceof CassetteError) throw new UsageError(error.message);
    throw error;
  }
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  // One program with a strict tool before the first timed run, so that the first run does not
  // pay alone for starting the worker and the schema compiler's thread (~300 ms here). Not when
  // a model backend or cassettes answer: the warm-up would be a model call, or a miss.
  if (!config.modelBackend && !config.cassettes.replayDir) await warmUp(app);
  return { baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'ptc-eval', app };
}

async function warmUp(app: FastifyInstance): Promise<void> {
  const warmTool = {
    type: 'function',
    name: 'warm_up',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    strict: true,
    output_schema: { type: 'object' },
    allowed_callers: ['programmatic'],
  };
  await app.inject({
    method: 'POST',
    url: '/v1/responses',
    payload: { model: 'ptc-eval-warm-up', input: "```js\ntext('warm')\n```", tools: [warmTool, { type: 'programmatic_tool_calling' }] },
  });
}

/** `ptc-emulator eval TASKS.yaml`: runs, prints the table, writes the files asked for. */
export async function evaluate(args: readonly string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(EVAL_HELP);
    return 0;
  }
  const { positionals, own, settings } = splitArgs(args);
  if (positionals.length !== 1) throw new UsageError('eval takes one task file: ptc-emulator eval TASKS.yaml');
  const file = await loadTaskFile(positionals[0]!);
  const baseUrl = own.get('--base-url');
  if (baseUrl !== undefined && settings.length > 0)
    throw new UsageError(`${settings[0]} sets up the emulator eval starts, and --base-url names another: give one or the other`);
  const badUrl = baseUrl === undefined ? undefined : ResponsesClient.check(baseUrl);
  if (badUrl) throw new UsageError(badUrl);
  if (baseUrl !== undefined && file.scenarios !== undefined)
    process.stderr.write(`ptc-emulator: the task file's scenarios are not used: --base-url ${baseUrl} plays the model\n`);
  // The report files are opened before the first run, so that a path that cannot be written
  // is said now rather than after every run.
  for (const flag of ['--json', '--html']) {
    const path = own.get(flag);
    if (path === undefined) continue;
    try {
      writeFileSync(path, '');
    } catch (error) {
      throw new UsageError(`${flag} ${path} cannot be written: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  const model = baseUrl === undefined ? await startModel(file.scenarios, settings) : { baseURL: baseUrl, apiKey: process.env.OPENAI_API_KEY ?? 'ptc-eval' };
  const results: RunResult[] = [];
  try {
    const client = new ResponsesClient(model.baseURL, model.apiKey);
    for (const task of file.tasks) for (const mode of EVAL_MODES) results.push(await runTask(file, task, mode, client));
  } finally {
    await model.app?.close();
  }
  const report = buildReport(results);
  const table = reportTable(report);
  const notes = reportNotes(report);
  process.stdout.write(`${table}\n${notes.map((note) => `\n${note}`).join('')}${notes.length ? '\n' : ''}`);
  const json = own.get('--json');
  if (json !== undefined) writeFileSync(json, `${JSON.stringify({ source: file.path, ...report }, null, 2)}\n`);
  const html = own.get('--html');
  if (html !== undefined) writeFileSync(html, htmlReport(report, positionals[0]!));
  return results.every((result) => result.correct) ? 0 : 1;
}
