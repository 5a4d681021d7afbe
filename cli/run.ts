import { readFileSync, statSync } from 'node:fs';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from '../runtime/index.ts';
import { parseArgs } from 'node:util';
import { buildServer } from '../server/app.ts';
import { loadConfig } from '../server/platform/config.ts';
import { TOOL_KINDS } from '../server/engine/conversation/tool-kinds.ts';
import type { ModelFunction } from '../server/engine/stand-ins/model-decision.ts';
import { UsageError } from './usage-error.ts';

export const RUN_HELP = `Usage: ptc-emulator run PROGRAM.js [--tools tools.json] [--outputs answers.json] [--json]

Runs one program in the emulator's sandbox, as a model's program would run: the same isolate
in a worker process, limits (PTC_CPU_TIME_MS, PTC_MAX_CALLS, … from the environment), checks
and items.

  --tools FILE     The Responses API "tools" array the program may call (JSON). A tool without
                   allowed_callers is made callable by programs; function and custom tools,
                   namespaces of them and MCP servers work here (a shell or apply_patch call
                   stops the run: exit code 3).
  --outputs FILE   Answers to the program's calls (JSON): an object from a tool's name
                   ("get_inventory", or "crm.get_customer" in a namespace) to a list of outputs
                   used in call order, the last one repeating. A string output is sent as it
                   is, anything else as JSON. A single value stands for a list of one.
  --json           Print every output item, as the Responses API returns them, as one JSON array.

Prints the program's batches of calls and its program_output. Exit code: 0 when the program
completed, 1 when it ended incomplete, 3 when it waits on a call the outputs file cannot
answer, 2 for a usage error.
`;

/** Exit code of a program that is still waiting on a call no answer was given for. */
const PAUSED_EXIT_CODE = 3;

interface OutputItem {
  readonly type: string;
  readonly [key: string]: unknown;
}

/**
 * A file's text, refused before it is read unless it is a regular file of at most `maxBytes`
 * (a FIFO would block, /dev/zero never end, a huge file be read only to be refused).
 */
function readBounded(path: string, what: string, maxBytes: number): string {
  try {
    const stat = statSync(path);
    if (!stat.isFile()) throw new UsageError(`${what} ${path} is not a regular file`);
    if (stat.size > maxBytes) throw new UsageError(`${what} ${path} has ${stat.size} bytes, more than the ${maxBytes} it may have`);
    return readFileSync(path, 'utf8');
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`cannot read ${what} ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

function readJson(path: string, what: string, maxBytes: number): unknown {
  const text = readBounded(path, what, maxBytes);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${what} ${path} is not JSON: ${(error as Error).message}`);
  }
  if (jsonDepthExceeds(parsed, MAX_JSON_DEPTH)) throw new UsageError(`${what} ${path} nests deeper than ${MAX_JSON_DEPTH} levels`);
  return parsed;
}

/** A tool callable by programs unless it says who may call it; a namespace's tools alike. */
function callableByPrograms(tool: unknown): unknown {
  if (tool === null || typeof tool !== 'object' || Array.isArray(tool)) return tool;
  const { type } = tool as { type?: unknown };
  if (type === 'programmatic_tool_calling') return tool;
  if (type === 'namespace' && Array.isArray((tool as { tools?: unknown }).tools)) {
    return { ...tool, tools: (tool as { tools: unknown[] }).tools.map(callableByPrograms) };
  }
  return 'allowed_callers' in tool ? tool : { ...tool, allowed_callers: ['programmatic'] };
}

/** The tools file's tools, each callable by programs unless it says who may call it. */
function programTools(document: unknown, path: string): unknown[] {
  if (!Array.isArray(document)) throw new UsageError(`tools file ${path} must hold a JSON array of tools, as a request's "tools"`);
  const tools = document.map(callableByPrograms);
  if (!tools.some((tool) => (tool as { type?: unknown } | null)?.type === 'programmatic_tool_calling')) tools.push({ type: 'programmatic_tool_calling' });
  return tools;
}

/** Hands out each tool's answers in call order; the last one repeats. */
class Answers {
  readonly #lists = new Map<string, unknown[]>();
  readonly #used = new Map<string, number>();

  constructor(document: unknown, path: string) {
    if (document === null || typeof document !== 'object' || Array.isArray(document)) {
      throw new UsageError(`outputs file ${path} must hold a JSON object from tool names to their outputs`);
    }
    for (const [name, value] of Object.entries(document)) this.#lists.set(name, Array.isArray(value) ? value : [value]);
  }

  next(tool: string): string | undefined {
    const list = this.#lists.get(tool);
    if (!list || list.length === 0) return undefined;
    const used = this.#used.get(tool) ?? 0;
    this.#used.set(tool, used + 1);
    const value = list[Math.min(used, list.length - 1)];
    return typeof value === 'string' ? value : JSON.stringify(value);
  }
}

const { function: FUNCTION, custom: CUSTOM, shell: SHELL, apply_patch: APPLY_PATCH, mcp: MCP } = TOOL_KINDS;
/** The calls `run` answers (function and custom tools), and the type of each one's output. */
const ANSWERED_TYPES: Readonly<Record<string, string>> = { [FUNCTION.call.type]: FUNCTION.output.type, [CUSTOM.call.type]: CUSTOM.output.type };

function callName(item: OutputItem): string {
  return typeof item.namespace === 'string' ? `${item.namespace}.${String(item.name)}` : String(item.name);
}

function describe(item: OutputItem): string {
  switch (item.type) {
    case 'program':
      return `program ${String(item.call_id)}`;
    case FUNCTION.call.type:
      return `  call ${callName(item)}(${String(item.arguments)})`;
    case CUSTOM.call.type:
      return `  call ${callName(item)}(${JSON.stringify(item.input)})`;
    case 'program_output':
      return `program_output ${String(item.status)}: ${String(item.result)}`;
    case 'mcp_list_tools':
      return `mcp_list_tools ${String(item.server_label)}${item.error ? `: ${String(item.error)}` : ''}`;
    case MCP.call.type:
      return `  mcp ${String(item.server_label)}.${String(item.name)}(${String(item.arguments)}) → ${String(item.output ?? item.error)}`;
    default:
      return `${item.type}`;
  }
}

/** `ptc-emulator run PROGRAM.js`: returns the exit code. */
export async function run(args: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      allowPositionals: true,
      options: { tools: { type: 'string' }, outputs: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (error) {
    const { code } = error as NodeJS.ErrnoException;
    const option = /'(-[^']*)'/.exec((error as Error).message)?.[1];
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) throw new UsageError(`unknown flag ${option} for run (see ptc-emulator run --help)`);
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && option) throw new UsageError(`${option.split(' ')[0]} needs a value (see ptc-emulator run --help)`);
    throw new UsageError(`${(error as Error).message} (see ptc-emulator run --help)`);
  }
  if (parsed.values.help) {
    process.stdout.write(RUN_HELP);
    return 0;
  }
  if (parsed.positionals.length !== 1)
    throw new UsageError('run takes one program file: ptc-emulator run PROGRAM.js [--tools tools.json] [--outputs answers.json]');
  const programPath = parsed.positionals[0]!;
  // Settings (limits above all) from the environment, but never a place on disk or a socket:
  // this command keeps everything in memory and listens nowhere.
  const { PTC_DATA_DIR: _dataDir, PTC_STORE: _store, HOST: _host, PORT: _port, ...env } = process.env;
  const config = loadConfig(env);
  // A program larger than the code limit is refused all the same; this only spares reading it.
  const code = readBounded(programPath, 'program', Math.max(config.limits.maxCodeBytes * 4, 1024 * 1024));
  const tools =
    parsed.values.tools === undefined
      ? [{ type: 'programmatic_tool_calling' }]
      : programTools(readJson(parsed.values.tools, 'tools file', config.bodyLimitBytes), parsed.values.tools);
  const answers = new Answers(
    parsed.values.outputs === undefined ? {} : readJson(parsed.values.outputs, 'outputs file', config.bodyLimitBytes),
    parsed.values.outputs ?? '',
  );

  // The whole emulator without a socket: the program meets exactly the checks and items a
  // client of the server would. Its isolate runs in a worker process, as on the server, so a
  // program that crashes isolated-vm ends `runtime_crashed` instead of taking this command
  // down. Nothing is written to disk.
  const model: ModelFunction = (context) =>
    context.phase === 'after_program' && context.program ? { type: 'message', text: context.program.result } : { type: 'program', code };
  const app = await buildServer({ model, store: 'memory', logger: false, env, config: { workers: 1, journalSize: 0 } });
  const items: OutputItem[] = [];
  try {
    let body: Record<string, unknown> = { model: 'ptc-emulator', input: 'Run the program.', tools };
    for (;;) {
      const reply = await app.inject({ method: 'POST', url: '/v1/responses', payload: body });
      const response = reply.json() as { id: string; output?: OutputItem[]; error?: { message: string; param?: string | null } };
      if (reply.statusCode !== 200) {
        const where = response.error?.param ? ` (${response.error.param})` : '';
        throw new UsageError(`the emulator refused the program: ${response.error?.message ?? reply.body}${where}`);
      }
      const output = response.output ?? [];
      items.push(...output);
      const calls = output.filter((item) => item.type in ANSWERED_TYPES);
      if (calls.length === 0) {
        // A shell_call or apply_patch_call waits on a client that runs commands or edits files:
        // this command answers function and custom tools only.
        const waiting = output.find((item) => item.type === SHELL.call.type || item.type === APPLY_PATCH.call.type);
        if (waiting && !output.some((item) => item.type === 'program_output')) {
          report(items, parsed.values.json === true, `waiting on a ${waiting.type}, which run does not answer (it answers function and custom tools)`);
          return PAUSED_EXIT_CODE;
        }
        break;
      }
      const answered: Record<string, unknown>[] = [];
      for (const call of calls) {
        const answer = answers.next(callName(call));
        if (answer === undefined) {
          report(items, parsed.values.json === true, `waiting on ${callName(call)}: the outputs file has no answer for it`);
          return PAUSED_EXIT_CODE;
        }
        answered.push({ type: ANSWERED_TYPES[call.type], call_id: call.call_id, output: answer, caller: call.caller });
      }
      items.push(...(answered as OutputItem[]));
      body = { model: 'ptc-emulator', previous_response_id: response.id, input: answered, tools };
    }
  } finally {
    await app.close();
  }
  const outcome = items.findLast((item) => item.type === 'program_output');
  report(items, parsed.values.json === true, undefined);
  return outcome?.status === 'completed' ? 0 : 1;
}

function report(items: readonly OutputItem[], json: boolean, waiting: string | undefined): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(items, null, 2)}\n`);
  } else {
    const lines: string[] = [];
    let batches = 0;
    let inBatch = false;
    for (const item of items) {
      if (item.type === 'message' || item.type === 'reasoning') continue;
      const isCall = item.type in ANSWERED_TYPES;
      if (isCall && !inBatch) lines.push(`batch ${++batches}`);
      inBatch = isCall;
      if (item.type === FUNCTION.output.type || item.type === CUSTOM.output.type) lines.push(`    → ${String(item.output)}`);
      else lines.push(describe(item));
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  if (waiting) process.stderr.write(`ptc-emulator: ${waiting}\n`);
}
