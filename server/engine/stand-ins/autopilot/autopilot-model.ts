import { createHash } from 'node:crypto';
import type { ConversationItem } from '../../../../schemas/items.ts';
import { ApiError } from '../../../platform/api-error.ts';
import { callInput, isToolCall, isToolOutput, outputForProgram } from '../../conversation/call-items.ts';
import { APPLY_PATCH_PROGRAM_TOOL, CODE_INTERPRETER_PROGRAM_TOOL, SHELL_PROGRAM_TOOL } from '../../conversation/local-tools.ts';
import type { ToolSummary } from '../../conversation/tool-set.ts';
import { OffLoopDeadlineError, OffLoopJobs, OffLoopQueueFullError } from '../../../platform/off-loop-jobs.ts';
import type { DirectCallDecision, ModelContext, ModelDecision, ModelFunction } from '../model-decision.ts';
import type { CallPlan, PlannableTool, PlannedCall, PlanRequest } from './call-plan.ts';
import { MAX_ARGUMENT_CHARS } from './sample-arguments.ts';
import { writeProgram, type ProgramCall } from './program-writer.ts';
import { callsSentence, programSentence } from './result-sentence.ts';
import { readMessage } from './message-text.ts';
import { topicWords } from './tool-choice.ts';
import { FIXED_LIMITS } from '../../../../schemas/fixed-limits.ts';

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
const PLAN_DEADLINE_MS = FIXED_LIMITS.autopilotPlanMs.value;
/** Threads planning at once: a plan past its deadline holds up one, not every conversation. */
const PLAN_THREADS = FIXED_LIMITS.autopilotPlanThreads.value;
/** Plans waiting for the thread at most; past it, 429 server_busy. */
const MAX_QUEUED_PLANS = FIXED_LIMITS.autopilotQueuedPlans.value;

/** A call the model makes itself, and the arguments it takes from the output of another of its calls, a round later. */
export interface DirectPlanned {
  readonly call: DirectCallDecision;
  /** `property` ← `field` of the output of the direct call of `tool`. */
  readonly references: readonly { readonly property: string; readonly tool: string; readonly field: string }[];
}

export interface PlannedTurn {
  readonly programCalls: readonly ProgramCall[];
  /** The model's own calls that need no other call's output (the first round). */
  readonly direct: readonly DirectCallDecision[];
  /** Every call the model makes itself, with what it waits on. */
  readonly directPlanned: readonly DirectPlanned[];
  readonly choice: CallPlan['choice'];
  /** Tools whose arguments no candidate made valid (the first candidate is used). */
  readonly invalid: readonly string[];
  /** The planned calls' kinds, in the order of programCalls. */
  readonly programKinds: readonly string[];
}

/** The autopilot's planning, which the explorer builds on too: a message when nothing can be planned. */
export interface CallPlanner {
  plan(context: ModelContext, options?: { readonly programmatic?: boolean }): Promise<PlannedTurn | string>;
  close(): Promise<void>;
}

/** The parameters the built-in tools check their arguments against (their summaries carry none). */
const BUILT_IN_PARAMETERS: Readonly<Record<string, unknown>> = {
  shell: SHELL_PROGRAM_TOOL.parameters,
  hosted_shell: SHELL_PROGRAM_TOOL.parameters,
  apply_patch: APPLY_PATCH_PROGRAM_TOOL.parameters,
  code_interpreter: CODE_INTERPRETER_PROGRAM_TOOL.parameters,
};

/**
 * The tools the request's `tool_choice` leaves the model: the one it names (a function, a custom
 * tool, an MCP server's), or those of `allowed_tools`; all of them for `auto` and `required`.
 */
function toolsChosen(context: ModelContext): readonly ToolSummary[] {
  const choice = context.toolChoice;
  if (choice === undefined || typeof choice === 'string') return context.tools;
  const named = (tool: ToolSummary, entry: { type: string; name?: unknown; server_label?: unknown }): boolean => {
    if (entry.type === 'mcp')
      return (
        tool.type === 'mcp' &&
        tool.name.startsWith(`${String(entry.server_label)}.`) &&
        (entry.name === undefined || tool.name === `${String(entry.server_label)}.${String(entry.name)}`)
      );
    if (entry.type === 'function' || entry.type === 'custom') return tool.name === entry.name || tool.name.endsWith(`.${String(entry.name)}`);
    return tool.type === entry.type || (entry.type === 'shell' && tool.type === 'hosted_shell');
  };
  if (choice.type === 'programmatic_tool_calling') return context.tools;
  if (choice.type === 'allowed_tools') {
    const entries = (choice.tools as { type: string; name?: unknown; server_label?: unknown }[]).slice(0, 1_000);
    return context.tools.filter((tool) => entries.some((entry) => named(tool, entry)));
  }
  return context.tools.filter((tool) => named(tool, choice as { type: string; name?: unknown; server_label?: unknown }));
}

/** A seed of the request: its message, its tools' names and its turn, unless the `seed` knob gives one. */
function seedOf(context: ModelContext): number {
  if (context.seed !== undefined) return context.seed >>> 0;
  const digest = createHash('sha256')
    .update(`${context.turn}\n${context.lastUserText.slice(0, 65_536)}\n${context.tools.map((tool) => tool.name).join(',')}`)
    .digest();
  return digest.readUInt32BE(0);
}

function plannable(tool: ToolSummary): PlannableTool {
  const parameters = BUILT_IN_PARAMETERS[tool.type];
  return parameters === undefined ? tool : { ...tool, parameters };
}

/** What the comment atop a program says of why these tools. */
const CHOICE_WORDS: Readonly<Record<CallPlan['choice'], string>> = {
  named: 'the tools the message names',
  verb: 'the tools whose verb the message uses',
  group: 'the tools of the namespace or MCP server the message names',
  described: 'the tools whose descriptions the message matches',
  all: 'every tool (the message names none)',
  forced: 'the tools tool_choice names',
  none: 'no tool',
};

/** The model's direct call of a planned call. */
function directCall(call: PlannedCall, value: unknown): DirectCallDecision {
  const dot = call.tool.indexOf('.');
  const naming = dot === -1 ? { name: call.tool } : { namespace: call.tool.slice(0, dot), name: call.tool.slice(dot + 1) };
  return call.input !== undefined ? { ...naming, input: call.input } : { ...naming, arguments: value as Record<string, unknown> };
}

/** What came back since the user's last message: program outputs and the outputs of the model's direct calls, in order. */
function answersSinceUser(history: readonly ConversationItem[]): {
  programs: { status: 'completed' | 'incomplete'; result: string }[];
  calls: { name: string; output: string }[];
} {
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

/** The autopilot's planner: its thread, and the checks of the arguments it makes against each tool's parameters. */
export function createCallPlanner(): CallPlanner {
  const planner = new OffLoopJobs<PlanRequest, CallPlan>({
    entry: THREAD_ENTRY,
    name: 'the autopilot',
    deadlineMs: PLAN_DEADLINE_MS,
    maxQueued: MAX_QUEUED_PLANS,
    threads: PLAN_THREADS,
  });

  async function planned(request: PlanRequest): Promise<CallPlan | string> {
    try {
      return await planner.run(request);
    } catch (error) {
      if (error instanceof OffLoopQueueFullError)
        throw new ApiError('server_busy', `The server is busy: ${error.message}. Retry shortly.`, null, { 'retry-after': '1' });
      if (error instanceof OffLoopDeadlineError)
        return `ptc-emulator autopilot: working out the calls for this request ${error.message.replace(/^the autopilot /, '')} (its tools' schemas ask for values too costly to make), so nothing ran.`;
      throw error;
    }
  }

  async function plan(context: ModelContext, planOptions: { readonly programmatic?: boolean } = {}): Promise<PlannedTurn | string> {
    const visible = toolsChosen(context);
    const choice = context.toolChoice;
    const forced = typeof choice === 'object' && choice.type !== 'programmatic_tool_calling' && (choice.type !== 'allowed_tools' || choice.mode === 'required');
    const request: PlanRequest = {
      tools: visible.map(plannable),
      message: context.lastUserText,
      seed: seedOf(context),
      programmatic: planOptions.programmatic ?? context.programmaticToolCalling,
      forced,
    };
    const result = await planned(request);
    if (typeof result === 'string') return result;
    if (result.calls.length === 0) {
      return visible.length === 0
        ? 'ptc-emulator autopilot: the request has no tools, so there is nothing to call and no program ran. Give it tools (and {"type": "programmatic_tool_calling"} for programs), or steer the stand-in (docs/STAND-IN.md).'
        : "ptc-emulator autopilot: none of the request's tools can be called here (each is for programs, which the request does not enable, or is a kind the model does not call directly), so nothing ran.";
    }
    const programCalls: ProgramCall[] = [];
    const programKinds: string[] = [];
    const invalid: string[] = [];
    const directPlanned: DirectPlanned[] = [];
    // A reference is to the planned call's index: program calls keep their order, so each maps to its place among them.
    const programIndex = new Map<number, number>();
    const tooLarge = result.calls.filter((call) => call.candidates?.length === 0).map((call) => call.tool);
    if (tooLarge.length === result.calls.length) {
      return `ptc-emulator autopilot: every argument the parameters of ${tooLarge.join(', ')} ask for is over ${MAX_ARGUMENT_CHARS} characters of JSON, so nothing ran.`;
    }
    result.calls.forEach((call, index) => {
      if (call.candidates?.length === 0) return;
      const value = call.input ?? call.candidates![0]!.value;
      if (!call.valid) invalid.push(call.tool);
      if (call.via === 'direct') {
        directPlanned.push({
          call: directCall(call, value),
          references: call.references.map((reference) => ({ property: reference.property, tool: result.calls[reference.call]!.tool, field: reference.field })),
        });
        return;
      }
      programIndex.set(index, programCalls.length);
      programKinds.push(call.kind);
      programCalls.push({
        tool: call.tool,
        argument: value,
        // A reference to a call left out (its arguments too large) is dropped: the generated value stands.
        references: call.references
          .filter((reference) => programIndex.has(reference.call))
          .map((reference) => ({ ...reference, call: programIndex.get(reference.call)! })),
        outputFields: call.outputFields,
      });
    });
    const direct = directPlanned.filter((planned) => planned.references.length === 0).map((planned) => planned.call);
    return { programCalls, programKinds, direct, directPlanned, choice: result.choice, invalid };
  }

  return { plan, close: () => planner.close() };
}

/** The autopilot's model: on the user's turn the planned calls (a program, direct calls), after them a sentence of what came back. */
export function autopilotModel(planner: CallPlanner): ModelFunction {
  async function act(context: ModelContext): Promise<ModelDecision> {
    const words = readMessage(context.lastUserText).words;
    // Deferred tools the message may be about are loaded first, as a model searches before it acts.
    if (context.phase === 'user_turn' && context.toolSearch && !context.tools.some((tool) => topicWords(tool.name).some((word) => words.has(word)))) {
      const query = [...words].slice(0, 8).join(' ');
      if (query !== '') return { type: 'tool_search', query };
    }
    const planned = await planner.plan(context);
    if (typeof planned === 'string') return message(planned);
    const tools = [
      ...planned.programCalls.map((call) => call.tool),
      ...planned.direct.map((call) => (call.namespace ? `${call.namespace}.${call.name}` : call.name)),
    ];
    const reasoning = `Autopilot: ${CHOICE_WORDS[planned.choice]}: ${tools.join(', ')}.${planned.invalid.length > 0 ? ` No arguments valid against the parameters of ${planned.invalid.join(', ')} could be made.` : ''}`;
    if (planned.programCalls.length === 0) return { type: 'function_calls', calls: planned.direct, reasoning };
    const code = writeProgram(
      planned.programCalls,
      `ptc-emulator autopilot: ${CHOICE_WORDS[planned.choice]}, with arguments from the message and their parameters.`,
    );
    return { type: 'program', code, reasoning, ...(planned.direct.length > 0 ? { calls: planned.direct } : {}) };
  }

  return async (context) => {
    switch (context.phase) {
      case 'user_turn':
      case 'after_search':
        return act(context);
      case 'after_program':
        return message(afterProgramSentence(context));
      case 'after_calls': {
        const next = await nextRound(context);
        if (next) return next;
        const { programs, calls } = answersSinceUser(context.history);
        const stated = callsSentence(calls);
        return message(programs.length > 0 ? `${programs.map(programSentence).join(' ')} ${stated}` : stated);
      }
    }
  };

  /**
   * The model's next round of its own calls: those of the plan that wait on an output now back
   * (`customer_id` from `find_customer`'s), with it filled in. None left: undefined.
   */
  async function nextRound(context: ModelContext): Promise<ModelDecision | undefined> {
    const planned = await planner.plan(context);
    if (typeof planned === 'string') return undefined;
    const { calls } = answersSinceUser(context.history);
    const made = new Set(calls.map((call) => call.name));
    const outputs = new Map(calls.map((call) => [call.name, call.output]));
    const ready = planned.directPlanned.filter(
      (waiting) =>
        waiting.references.length > 0 && !made.has(qualifiedName(waiting.call)) && waiting.references.every((reference) => outputs.has(reference.tool)),
    );
    if (ready.length === 0) return undefined;
    return {
      type: 'function_calls',
      calls: ready.map(({ call, references }) => {
        const filled = { ...(call.arguments ?? {}) } as Record<string, unknown>;
        for (const reference of references) {
          const output = parsed(outputs.get(reference.tool)!);
          if (output !== null && typeof output === 'object' && reference.field in output)
            filled[reference.property] = (output as Record<string, unknown>)[reference.field];
        }
        return { ...call, arguments: filled };
      }),
      reasoning: `Autopilot: ${ready.map(({ call }) => qualifiedName(call)).join(', ')}, with what the calls before returned.`,
    };
  }
}

function qualifiedName(call: DirectCallDecision): string {
  return call.namespace ? `${call.namespace}.${call.name}` : call.name;
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The sentence after a program: its result, and the outputs of the model's own calls beside it. */
export function afterProgramSentence(context: ModelContext): string {
  const { calls } = answersSinceUser(context.history);
  const program = context.program ? programSentence(context.program) : 'The program ended.';
  return calls.length > 0 ? `${program} ${callsSentence(calls)}` : program;
}
