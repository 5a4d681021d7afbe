import { performance } from 'node:perf_hooks';
import { TOOL_KINDS } from '../../server/engine/conversation/tool-kinds.ts';
import { textMatches } from '../../server/engine/stand-ins/text-matcher.ts';
import { EvalRequestError, type ResponsesClient, type ResponseBody, type ResponseItem } from './responses-client.ts';
import { messageOf, oneLine, settled } from './settled.ts';
import type { EvalTask, EvalTool, TaskFile } from './task-file.ts';

/** The calls the client runs: function tools' (a program's and the model's). */
const { call: FUNCTION_CALL, output: FUNCTION_OUTPUT } = TOOL_KINDS.function;

/** The two ways a task is run: the tools called by the model itself, or by its programs. */
export const EVAL_MODES = ['direct', 'ptc'] as const;
export type EvalMode = (typeof EVAL_MODES)[number];

/** A run that has not ended after this many requests has failed: a model that never answers. */
export const MAX_REQUESTS_PER_RUN = 64;

/** A tool's `run`, or a check, that has not settled after this long has failed: a hang is not a run. */
export const TOOL_TIMEOUT_MS = 30_000;

/** What one run of one task measured (docs/EVAL.md says how each is counted). */
export interface RunResult {
  readonly task: string;
  readonly mode: EvalMode;
  readonly correct: boolean;
  /** Why the answer was judged wrong, or the error that ended the run. */
  readonly reason?: string;
  /** True when the run could not finish (a request failed): its other figures are partial. */
  readonly failed: boolean;
  readonly answer: string;
  /** How the tools were reached: `program`, `direct`, both (`program+direct`), or `none`. */
  readonly path: string;
  /** Whether that is the mode's intended path (`direct` calls only, or programs only). */
  readonly pathAsIntended: boolean;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly totalTokens: number;
  /** Responses in which the model wrote something: a program, direct calls or a message. */
  readonly modelTurns: number;
  readonly requests: number;
  readonly toolCalls: number;
  readonly programCalls: number;
  readonly directCalls: number;
  readonly toolErrors: number;
  readonly retries: number;
  /** UTF-8 bytes of tool output the model read: direct calls' outputs and programs' results. */
  readonly contextBytes: number;
  readonly approvals: number;
  readonly wallMs: number;
}

interface Tally {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  modelTurns: number;
  requests: number;
  programCalls: number;
  directCalls: number;
  toolErrors: number;
  contextBytes: number;
  approvals: number;
  programs: number;
  calls: { name: string; arguments: unknown }[];
}

/** The request's `tools` in a mode: the task's tools, called directly, or by programs only. */
export function requestTools(file: TaskFile, task: EvalTask, mode: EvalMode): Record<string, unknown>[] {
  const names = task.tools ?? [...file.tools.keys()];
  const tools: Record<string, unknown>[] = names.map((name) => {
    const tool = file.tools.get(name)!;
    return {
      type: 'function',
      name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      parameters: tool.parameters,
      ...(tool.strict === undefined ? {} : { strict: tool.strict }),
      ...(tool.outputSchema === undefined ? {} : { output_schema: tool.outputSchema }),
      allowed_callers: mode === 'ptc' ? ['programmatic'] : ['direct'],
    };
  });
  if (mode === 'ptc') tools.push({ type: 'programmatic_tool_calling' });
  return tools;
}

/**
 * Runs one task in one mode, as a client loop does: each response's calls are run with the
 * module's implementations, their outputs sent back, until a response asks for none.
 */
export async function runTask(file: TaskFile, task: EvalTask, mode: EvalMode, client: ResponsesClient): Promise<RunResult> {
  const tools = requestTools(file, task, mode);
  const base = {
    model: file.model,
    ...(file.instructions === undefined ? {} : { instructions: file.instructions }),
    tools,
    metadata: { ptc_eval_mode: mode, ptc_eval_task: task.name },
  };
  const tally: Tally = {
    inputTokens: 0,
    outputTokens: 0,
    totalTokens: 0,
    modelTurns: 0,
    requests: 0,
    programCalls: 0,
    directCalls: 0,
    toolErrors: 0,
    contextBytes: 0,
    approvals: 0,
    programs: 0,
    calls: [],
  };
  const retriesBefore = client.retries;
  const started = performance.now();
  let answer = '';
  let failure: string | undefined;
  try {
    let response = await client.create({ ...base, input: task.prompt });
    for (;;) {
      count(response, tally);
      answer = answerOf(response) ?? answer;
      const calls = response.output.filter((item) => item.type === FUNCTION_CALL.type);
      if (calls.length === 0) break;
      if (tally.requests >= MAX_REQUESTS_PER_RUN) throw new EvalRequestError(`the model was still calling tools after ${MAX_REQUESTS_PER_RUN} requests`);
      const outputs = await Promise.all(calls.map((call) => runCall(call, file.tools, tally)));
      response = await client.create({ ...base, previous_response_id: response.id, input: outputs });
    }
  } catch (error) {
    if (!(error instanceof EvalRequestError)) throw error;
    failure = error.message;
  }
  const wallMs = performance.now() - started;
  const verdict = failure === undefined ? await judge(file, task, mode, answer, tally.calls) : { correct: false, reason: failure };
  const path = [tally.programs > 0 ? 'program' : '', tally.directCalls > 0 ? 'direct' : ''].filter(Boolean).join('+') || 'none';
  return {
    task: task.name,
    mode,
    ...verdict,
    failed: failure !== undefined,
    answer,
    path,
    pathAsIntended: mode === 'ptc' ? path === 'program' : path === 'direct',
    inputTokens: tally.inputTokens,
    outputTokens: tally.outputTokens,
    totalTokens: tally.totalTokens,
    modelTurns: tally.modelTurns,
    requests: tally.requests,
    toolCalls: tally.programCalls + tally.directCalls,
    programCalls: tally.programCalls,
    directCalls: tally.directCalls,
    toolErrors: tally.toolErrors,
    retries: client.retries - retriesBefore,
    contextBytes: tally.contextBytes,
    approvals: tally.approvals,
    wallMs,
  };
}

function byProgram(item: ResponseItem): boolean {
  return (item.caller as { type?: unknown } | null | undefined)?.type === 'program';
}

/** Adds a response's usage, turns, programs and the program results the model reads. */
function count(response: ResponseBody, tally: Tally): void {
  tally.requests += 1;
  tally.inputTokens += response.usage?.input_tokens ?? 0;
  tally.outputTokens += response.usage?.output_tokens ?? 0;
  tally.totalTokens += response.usage?.total_tokens ?? 0;
  const wrote = response.output.some(
    (item) => item.type === 'program' || (item.type === 'message' && item.role === 'assistant') || (item.type === FUNCTION_CALL.type && !byProgram(item)),
  );
  if (wrote) tally.modelTurns += 1;
  for (const item of response.output) {
    if (item.type === 'program') tally.programs += 1;
    if (item.type === 'program_output') tally.contextBytes += Buffer.byteLength(String(item.result ?? ''));
  }
}

/** The text of the response's last assistant message, if it has one. */
function answerOf(response: ResponseBody): string | undefined {
  const message = response.output.findLast((item) => item.type === 'message' && item.role === 'assistant');
  if (!message) return undefined;
  const { content } = message;
  if (typeof content === 'string') return content;
  const parts = Array.isArray(content) ? (content as { text?: unknown; refusal?: unknown }[]) : [];
  return parts.map((part) => (typeof part?.text === 'string' ? part.text : typeof part?.refusal === 'string' ? part.refusal : '')).join('');
}

/** Runs one call with the module's implementation; a throw, or an unknown tool, is an error output. */
async function runCall(call: ResponseItem, tools: ReadonlyMap<string, EvalTool>, tally: Tally): Promise<Record<string, unknown>> {
  const name = String(call.name);
  const fromProgram = byProgram(call);
  if (fromProgram) tally.programCalls += 1;
  else tally.directCalls += 1;
  let args: unknown;
  try {
    args = JSON.parse(String(call.arguments));
  } catch {
    args = call.arguments;
  }
  tally.calls.push({ name, arguments: args });
  const tool = tools.get(name);
  let output: string;
  if (!tool) {
    tally.toolErrors += 1;
    output = JSON.stringify({ error: `unknown tool ${name}` });
  } else {
    if (tool.approval) tally.approvals += 1;
    try {
      const value = await settled(() => tool.run((args ?? {}) as Record<string, unknown>), `tools.${name}.run`, TOOL_TIMEOUT_MS);
      // A function or a symbol has no JSON: null, as for undefined.
      output = typeof value === 'string' ? value : (JSON.stringify(value ?? null) ?? 'null');
    } catch (error) {
      tally.toolErrors += 1;
      output = JSON.stringify({ error: messageOf(error) });
    }
  }
  // What a program receives stays in the program; what a direct call returns, the model reads.
  if (!fromProgram) tally.contextBytes += Buffer.byteLength(output);
  return { type: FUNCTION_OUTPUT.type, call_id: call.call_id, output, ...(call.caller ? { caller: call.caller } : {}) };
}

async function judge(file: TaskFile, task: EvalTask, mode: EvalMode, answer: string, calls: Tally['calls']): Promise<{ correct: boolean; reason?: string }> {
  if (task.expect !== undefined && !textMatches(task.expect, answer))
    return { correct: false, reason: `the answer does not match ${task.expect}: ${excerpt(answer)}` };
  if (task.check !== undefined) {
    let verdict: boolean | string;
    try {
      verdict = await settled(() => file.checks.get(task.check!)!(answer, { mode, calls }), `check ${task.check}`, TOOL_TIMEOUT_MS);
    } catch (error) {
      return { correct: false, reason: `check ${task.check} threw: ${messageOf(error)}` };
    }
    if (verdict !== true) return { correct: false, reason: `${typeof verdict === 'string' ? verdict : `check ${task.check} said no`}: ${excerpt(answer)}` };
  }
  return { correct: true };
}

/** The answer's start, quoted on one line, for a reason a person reads in a terminal. */
function excerpt(answer: string): string {
  return answer === '' ? 'the answer was empty' : `the answer was "${oneLine(answer)}"`;
}
