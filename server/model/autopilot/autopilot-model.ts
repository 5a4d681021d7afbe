import { createHash } from 'node:crypto';
import { checkAgainstSchema, ToolSchemaError } from '../../../runtime/index.ts';
import type { ConversationItem } from '../../../schemas/items.ts';
import { ApiError } from '../../api-error.ts';
import { callInput, isToolCall, isToolOutput, outputForProgram } from '../../conversation/call-items.ts';
import { APPLY_PATCH_PROGRAM_TOOL, CODE_INTERPRETER_PROGRAM_TOOL, SHELL_PROGRAM_TOOL } from '../../conversation/local-tools.ts';
import type { ToolSummary } from '../../conversation/tool-set.ts';
import { OffLoopDeadlineError, OffLoopJobs, OffLoopQueueFullError } from '../../off-loop-jobs.ts';
import type { DirectCallDecision, ModelContext, ModelDecision, ModelFunction } from '../model-decision.ts';
import type { CallPlan, PlannableTool, PlannedCall, PlanRequest } from './call-plan.ts';
import { writeProgram, type ProgramCall } from './program-writer.ts';
import { callsSentence, programSentence } from './result-sentence.ts';
import { readMessage } from './message-text.ts';
import { topicWords } from './tool-choice.ts';

/**
 * The autopilot: the stand-in that decides when nothing else did, as a model that uses PTC
 * would. On the user's turn it calls the tools the message is about (call-plan.ts) with
 * arguments valid against their `parameters`, in a program it writes when programs are enabled
 * (program-writer.ts) and directly for tools only the model may call; once the program or the
 * calls are done, it states what came back in a sentence (result-sentence.ts). It knows no
 * tool by name: it reads what the request says of its tools. The same request gives the same
 * program: every choice is drawn from a seed made of the request (or the `seed` knob).
 */

const FROM_SOURCES = import.meta.url.endsWith('.ts');
const THREAD_ENTRY = new URL(FROM_SOURCES ? './autopilot-thread.ts' : './autopilot-thread.js', import.meta.url);

/** Far beyond an honest plan (a few milliseconds); past it the request gets a message saying so. */
const PLAN_DEADLINE_MS = 2_000;
/** Threads planning at once: a plan past its deadline holds up one, not every conversation. */
const PLAN_THREADS = 2;
/** Plans waiting for the thread at most; past it, 429 server_busy. */
const MAX_QUEUED_PLANS = 64;

export interface AutopilotOptions {
  /** How long checking arguments against a schema may take (PTC_SCHEMA_COMPILE_TIMEOUT_MS). */
  readonly compileTimeoutMs: number;
}

export interface Autopilot {
  readonly model: ModelFunction;
  close(): Promise<void>;
}

/** The parameters the built-in tools check their arguments against (their summaries carry none). */
const BUILT_IN_PARAMETERS: Readonly<Record<string, unknown>> = {
  shell: SHELL_PROGRAM_TOOL.parameters,
  hosted_shell: SHELL_PROGRAM_TOOL.parameters,
  apply_patch: APPLY_PATCH_PROGRAM_TOOL.parameters,
  code_interpreter: CODE_INTERPRETER_PROGRAM_TOOL.parameters,
};

/** A seed of the request: its message, its tools' names and its turn, unless the `seed` knob gives one. */
function seedOf(context: ModelContext): number {
  if (context.seed !== undefined) return context.seed >>> 0;
  const digest = createHash('sha256').update(`${context.turn}\n${context.lastUserText.slice(0, 65_536)}\n${context.tools.map((tool) => tool.name).join(',')}`).digest();
  return digest.readUInt32BE(0);
}

function plannable(tool: ToolSummary): PlannableTool {
  const parameters = BUILT_IN_PARAMETERS[tool.type];
  return parameters === undefined ? tool : { ...tool, parameters };
}

/** The first candidate the tool's parameters accept; the first of all when none is (the program then meets the refusal). */
async function chosenArguments(call: PlannedCall, tool: ToolSummary | undefined, compileTimeoutMs: number): Promise<{ value: unknown; valid: boolean }> {
  const candidates = call.candidates ?? [];
  const schema = BUILT_IN_PARAMETERS[call.kind] ?? tool?.parameters;
  if (schema === undefined || schema === null || typeof schema !== 'object') return { value: candidates[0]?.value ?? {}, valid: true };
  for (const candidate of candidates) {
    try {
      if ((await checkAgainstSchema(schema as Record<string, unknown>, candidate.value, 'arguments', compileTimeoutMs)) === undefined) return { value: candidate.value, valid: true };
    } catch (error) {
      if (error instanceof ToolSchemaError) break;
      throw error;
    }
  }
  return { value: candidates[0]?.value ?? {}, valid: false };
}

/** What the comment atop a program says of why these tools. */
const CHOICE_WORDS: Readonly<Record<CallPlan['choice'], string>> = {
  named: 'the tools the message names',
  described: 'the tools whose descriptions the message matches',
  all: 'every tool (the message names none)',
  none: 'no tool',
};

/** The model's direct call of a planned call. */
function directCall(call: PlannedCall, value: unknown): DirectCallDecision {
  const dot = call.tool.indexOf('.');
  const naming = dot === -1 ? { name: call.tool } : { namespace: call.tool.slice(0, dot), name: call.tool.slice(dot + 1) };
  return call.input !== undefined ? { ...naming, input: call.input } : { ...naming, arguments: value as Record<string, unknown> };
}

/** What came back since the user's last message: program outputs and the outputs of the model's direct calls, in order. */
function answersSinceUser(history: readonly ConversationItem[]): { programs: { status: 'completed' | 'incomplete'; result: string }[]; calls: { name: string; output: string }[] } {
  const lastUser = history.findLastIndex((item) => item.type === 'message' && item.role === 'user');
  const names = new Map<string, string>();
  const programs: { status: 'completed' | 'incomplete'; result: string }[] = [];
  const calls: { name: string; output: string }[] = [];
  for (const item of history.slice(lastUser + 1)) {
    if (item.type === 'program_output') programs.push({ status: item.status, result: item.result });
    else if (isToolCall(item) && item.caller?.type !== 'program') names.set(item.call_id, callInput(item).tool);
    else if (isToolOutput(item) && item.call_id && names.has(item.call_id)) calls.push({ name: names.get(item.call_id)!, output: outputForProgram(item) });
  }
  return { programs, calls };
}

function message(text: string): ModelDecision {
  return { type: 'message', text };
}

export function createAutopilot(options: AutopilotOptions): Autopilot {
  const planner = new OffLoopJobs<PlanRequest, CallPlan>({ entry: THREAD_ENTRY, name: 'the autopilot', deadlineMs: PLAN_DEADLINE_MS, maxQueued: MAX_QUEUED_PLANS, threads: PLAN_THREADS });

  async function plan(request: PlanRequest): Promise<CallPlan | string> {
    try {
      return await planner.run(request);
    } catch (error) {
      if (error instanceof OffLoopQueueFullError) throw new ApiError('server_busy', `The server is busy: ${error.message}. Retry shortly.`, null, { 'retry-after': '1' });
      if (error instanceof OffLoopDeadlineError) return `ptc-emulator autopilot: working out the calls for this request ${error.message.replace(/^the autopilot /, '')} (its tools' schemas ask for values too costly to make), so nothing ran.`;
      throw error;
    }
  }

  async function act(context: ModelContext): Promise<ModelDecision> {
    const visible = context.tools;
    const words = readMessage(context.lastUserText).words;
    // Deferred tools the message may be about are loaded first, as a model searches before it acts.
    if (context.phase === 'user_turn' && context.toolSearch && !visible.some((tool) => topicWords(tool.name).some((word) => words.has(word)))) {
      const query = [...words].slice(0, 8).join(' ');
      if (query !== '') return { type: 'tool_search', query };
    }
    const request: PlanRequest = { tools: visible.map(plannable), message: context.lastUserText, seed: seedOf(context), programmatic: context.programmaticToolCalling };
    const planned = await plan(request);
    if (typeof planned === 'string') return message(planned);
    if (planned.calls.length === 0) {
      return message(
        visible.length === 0
          ? 'ptc-emulator autopilot: the request has no tools, so there is nothing to call and no program ran. Give it tools (and {"type": "programmatic_tool_calling"} for programs), or steer the stand-in (docs/STAND-IN.md).'
          : 'ptc-emulator autopilot: none of the request\'s tools can be called here (each is for programs, which the request does not enable, or is a kind the model does not call directly), so nothing ran.',
      );
    }
    const byName = new Map(visible.map((tool) => [tool.name, tool]));
    const chosen = await Promise.all(planned.calls.map((call) => (call.input !== undefined ? { value: call.input, valid: true } : chosenArguments(call, byName.get(call.tool), options.compileTimeoutMs))));
    const programCalls: ProgramCall[] = [];
    const invalid: string[] = [];
    const direct: DirectCallDecision[] = [];
    // A reference is to the planned call's index: program calls keep their order, so each maps to its place among them.
    const programIndex = new Map<number, number>();
    planned.calls.forEach((call, index) => {
      const { value, valid } = chosen[index]!;
      if (!valid) invalid.push(call.tool);
      if (call.via === 'direct') {
        direct.push(directCall(call, value));
        return;
      }
      programIndex.set(index, programCalls.length);
      programCalls.push({
        tool: call.tool,
        argument: value,
        references: call.references.map((reference) => ({ ...reference, call: programIndex.get(reference.call)! })),
        outputFields: call.outputFields,
      });
    });
    const reasoning = `Autopilot: ${CHOICE_WORDS[planned.choice]}: ${planned.calls.map((call) => call.tool).join(', ')}.${invalid.length > 0 ? ` No arguments valid against the parameters of ${invalid.join(', ')} could be made.` : ''}`;
    if (programCalls.length === 0) return { type: 'function_calls', calls: direct, reasoning };
    const code = writeProgram(programCalls, `ptc-emulator autopilot: ${CHOICE_WORDS[planned.choice]}, with arguments from the message and their parameters.`);
    return { type: 'program', code, reasoning, ...(direct.length > 0 ? { calls: direct } : {}) };
  }

  const model: ModelFunction = async (context) => {
    switch (context.phase) {
      case 'user_turn':
      case 'after_search':
        return act(context);
      case 'after_program': {
        const { calls } = answersSinceUser(context.history);
        const program = context.program ? programSentence(context.program) : 'The program ended.';
        return message(calls.length > 0 ? `${program} ${callsSentence(calls)}` : program);
      }
      case 'after_calls': {
        const { programs } = answersSinceUser(context.history);
        const calls = callsSentence(context.callOutputs ?? []);
        return message(programs.length > 0 ? `${programs.map(programSentence).join(' ')} ${calls}` : calls);
      }
    }
  };

  return { model, close: () => planner.close() };
}
