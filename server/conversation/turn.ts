import { randomInt } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { callIdMatches, FingerprintError, openFingerprint, sealCallId, sealFingerprint, sha256Hex, type SealingKeys } from '../../runtime/fingerprint.ts';
import type { ProgramLimits } from '../../runtime/limits.ts';
import { failureResult, type ProgramEvent, type RecordedCall } from '../../runtime/program-events.ts';
import { ProgramBusyError, type ProgramEngine, type ResumePath } from '../../runtime/program-runtime.ts';
import { sealTool, takesText, toolId, unsealTools, type ProgramTool } from '../../runtime/program-tool.ts';
import type { ConversationItem, EmittedProgramOutput, OutputItem } from '../../schemas/items.ts';
import { compileToolSchema } from '../../runtime/tool-schemas.ts';
import type { Knobs } from '../../schemas/knobs.ts';
import type { CreateResponseRequest } from '../../schemas/request.ts';
import { ApiError } from '../api-error.ts';
import type { ClientChecks } from '../config.ts';
import { callItemId, newCallId, newId, programOutputId } from '../ids.ts';
import type { DirectCallDecision, ModelContext, ModelDecision } from '../model/model-decision.ts';
import type { ModelStandIn } from '../model/stand-in.ts';
import { locateItem, readConversation, type ConversationState, type ProgramThread } from './client-loop.ts';
import { CALL_ITEM_PREFIX, callInput, describeCall, emittedCall, type EmittedToolCall } from './call-items.ts';
import { APPLY_PATCH_PROGRAM_TOOL, SHELL_PROGRAM_TOOL } from './local-tools.ts';
import { readToolSet, type ToolSet } from './tool-set.ts';

const NOTHING_TO_ANSWER =
  'ptc-emulator: the conversation ends with an assistant message and has no new user message, program output or tool output to answer.';

export interface TurnServices {
  readonly runtime: ProgramEngine;
  /** A paused program can no longer be resumed this long after it started. */
  readonly programExpiryMs: number;
  readonly standIn: ModelStandIn;
  /** The key that seals new fingerprints and call ids first, then older keys still accepted. */
  readonly sealingKeys: SealingKeys;
  readonly limits: ProgramLimits;
  readonly log: FastifyBaseLogger;
}

export interface TurnInput {
  readonly request: CreateResponseRequest;
  /** Stored history followed by this request's input, every item with an id. */
  readonly history: readonly ConversationItem[];
  /** Where this request's own input starts in `history` (errors name items as `input[i]`). */
  readonly inputStart: number;
  readonly clientChecks: ClientChecks;
  readonly headers: Readonly<Record<string, string | undefined>>;
}

/** What a turn did to each program it touched, for the log and the request journal. */
export interface ProgramTrace {
  readonly program: string;
  readonly path: 'start' | ResumePath;
  readonly outcome: ProgramEvent['type'];
  readonly stats: ProgramEvent['stats'];
  readonly code?: string;
}

export interface TurnResult {
  readonly output: OutputItem[];
  readonly trace: readonly ProgramTrace[];
  /** Client-loop mistakes a lenient check let through. */
  readonly tolerated: readonly string[];
}

/** A turn whose conversation has been read and checked: what the stand-in will see. */
export interface PreparedTurn {
  readonly input: TurnInput;
  readonly toolSet: ToolSet;
  readonly state: ConversationState;
  /** The stand-in's context for a user turn (phases after a program or calls refine it). */
  readonly context: ModelContext;
}

/** Reads and checks the request's tools and conversation; every client-loop mistake is thrown here. */
export function prepareTurn(input: TurnInput): PreparedTurn {
  const toolSet = readToolSet(input.request.tools);
  const state = readConversation(input.history, input.clientChecks, input.inputStart);
  return { input, toolSet, state, context: modelContext(input, state, toolSet) };
}

/**
 * One model turn: resume the programs the client answered, or, when none is waiting, let the
 * stand-in model decide what to emit. Returns the response's output items.
 */
export async function runTurn(turn: PreparedTurn, knobs: Knobs, services: TurnServices): Promise<TurnResult> {
  const { input, state, context } = turn;
  for (const note of state.tolerated) services.log.warn({ clientLoop: note }, 'lenient client-loop check let a mistake through');
  const trace: ProgramTrace[] = [];
  const step = (programCallId: string, event: ProgramEvent, path: ProgramTrace['path']): ProgramEvent => {
    const failure = event.type === 'incomplete' ? event.error : undefined;
    trace.push({ program: programCallId, path, outcome: event.type, stats: event.stats, ...(failure ? { code: failure.code } : {}) });
    services.log.info({ ...trace.at(-1), ...(failure?.cause ? { err: failure.cause } : {}) }, 'program step');
    return event;
  };
  const result = (output: OutputItem[]): TurnResult => ({ output, trace, tolerated: state.tolerated });
  // The knob `final_message: next` holds back the message that would follow a program ending in this response.
  const afterProgram = async (program: ModelContext['program']): Promise<OutputItem[]> =>
    knobs.final_message === 'next' ? [] : finalMessage({ ...context, phase: 'after_program', program }, services);

  const output: OutputItem[] = [];
  let ended: { code: string; output: EmittedProgramOutput } | undefined;
  for (const thread of state.programs) {
    if (thread.closedBy) {
      services.runtime.dispose(thread.program.call_id);
      continue;
    }
    const { event, path, tools } = await resumeThread(thread, input, turn.toolSet, services);
    const items = eventItems(thread.program.call_id, tools, step(thread.program.call_id, event, path), services);
    output.push(...items);
    const programOutput = items.find((item): item is EmittedProgramOutput => item.type === 'program_output');
    if (programOutput) ended = { code: thread.program.code, output: programOutput };
  }
  if (output.some((item) => item.type !== 'program_output')) return result(output);
  if (ended) {
    output.push(...(await afterProgram({ code: ended.code, status: ended.output.status, result: ended.output.result })));
    return result(output);
  }

  const { tail } = state;
  if (tail.kind === 'answered') return result([messageItem(NOTHING_TO_ANSWER)]);
  if (tail.kind === 'after_program') {
    return result(await finalMessage({ ...context, phase: 'after_program', program: { code: tail.code, status: tail.output.status, result: tail.output.result } }, services));
  }
  if (tail.kind === 'after_calls') {
    const callOutputs = tail.calls.map((direct) => {
      const { tool, input } = callInput(direct.call);
      return { name: tool, arguments: input, output: direct.output ?? '' };
    });
    return result(await finalMessage({ ...context, phase: 'after_calls', callOutputs }, services));
  }

  const decision = await services.standIn.decide(context);
  const refusal = whyNot(decision, input.request, turn.toolSet);
  if (refusal) return result([messageItem(refusal)]);
  output.push(...reasoningItems(decision));
  if (decision.type === 'message') {
    output.push(messageItem(decision.text));
  } else if (decision.type === 'function_calls') {
    output.push(...decision.calls.map((call) => directCall(call, turn.toolSet)));
  } else {
    const programCallId = newCallId();
    const seed = randomInt(2 ** 32);
    const clock = Date.now();
    const tools = turn.toolSet.programTools;
    const fingerprint = sealFingerprint(
      { programCallId, codeSha256: sha256Hex(decision.code), seed, clock, limits: services.limits, tools: tools.map(sealTool) },
      services.sealingKeys[0],
    );
    output.push({ type: 'program', id: newId('prog'), call_id: programCallId, code: decision.code, fingerprint });
    const event = await services.runtime.start(programCallId, { code: decision.code, tools, seed, clock, limits: services.limits });
    const items = eventItems(programCallId, tools, step(programCallId, event, 'start'), services);
    output.push(...items);
    const programOutput = items.find((item): item is EmittedProgramOutput => item.type === 'program_output');
    if (programOutput) output.push(...(await afterProgram({ code: decision.code, status: programOutput.status, result: programOutput.result })));
  }
  return result(output);
}

function modelContext(input: TurnInput, state: ConversationState, toolSet: ToolSet): ModelContext {
  return {
    phase: 'user_turn',
    model: input.request.model,
    lastUserText: state.lastUserText,
    turn: state.userTurns,
    instructions: input.request.instructions ?? null,
    metadata: input.request.metadata ?? {},
    tools: toolSet.summaries,
    programmaticToolCalling: toolSet.programmaticToolCalling,
    headers: input.headers,
  };
}

/** After a program or direct calls: the stand-in's final message (never another program). */
async function finalMessage(context: ModelContext, services: TurnServices): Promise<OutputItem[]> {
  const decision = await services.standIn.decide(context);
  const text =
    decision.type === 'message'
      ? decision.text
      : `ptc-emulator: after ${context.phase === 'after_program' ? 'a program' : 'direct calls'} the stand-in must answer with a message, but it chose ${decision.type}.`;
  return [...reasoningItems(decision), messageItem(text)];
}

/** A call the stand-in makes itself; `caller` says so when programs are enabled. */
function directCall(call: DirectCallDecision, toolSet: ToolSet): OutputItem {
  const kind = toolSet.tools.get(toolId(call))?.kind ?? 'function';
  return emittedCall(kind, {
    id: newId(CALL_ITEM_PREFIX[kind]),
    callId: newCallId(),
    name: call.name,
    namespace: call.namespace,
    input: kind === 'custom' ? (call.input ?? '') : JSON.stringify(call.arguments ?? {}),
    ...(toolSet.programmaticToolCalling ? { caller: { type: 'direct' as const } } : {}),
  });
}

/** Why the stand-in's decision cannot be carried out for this request, if it cannot. */
function whyNot(decision: ModelDecision, request: CreateResponseRequest, toolSet: ToolSet): string | undefined {
  if (decision.type === 'message') return undefined;
  const what = decision.type === 'program' ? 'run a program' : 'call tools';
  if (request.tool_choice === 'none') return `ptc-emulator: the stand-in wanted to ${what}, but tool_choice is "none".`;
  if (decision.type === 'program') {
    if (!toolSet.programmaticToolCalling) {
      return 'ptc-emulator: the stand-in wanted to run a program, but the request\'s tools have no {"type": "programmatic_tool_calling"} entry, so programs are disabled.';
    }
    return undefined;
  }
  for (const call of decision.calls) {
    const id = toolId(call);
    const tool = toolSet.tools.get(id);
    if (!tool) return `ptc-emulator: the stand-in wanted to call '${id}', which is not a function or custom tool of this request.`;
    if (!tool.callers.includes('direct')) {
      return `ptc-emulator: the stand-in wanted to call '${id}' directly, but its allowed_callers is ["programmatic"]: only programs may call it.`;
    }
    if (tool.kind === 'custom' && call.arguments !== undefined) {
      return `ptc-emulator: the stand-in gave arguments to the custom tool '${id}', which takes one string of input: give it input instead.`;
    }
    if (tool.kind !== 'custom' && call.input !== undefined) {
      return `ptc-emulator: the stand-in gave input to the ${tool.kind} tool '${id}', which takes an object of arguments: give it arguments instead.`;
    }
    const builtIn = tool.kind === 'shell' ? SHELL_PROGRAM_TOOL : tool.kind === 'apply_patch' ? APPLY_PATCH_PROGRAM_TOOL : undefined;
    const violation = builtIn?.parameters && compileToolSchema(builtIn.parameters).check(call.arguments ?? {}, 'arguments');
    if (violation) return `ptc-emulator: the stand-in's call of ${id} is not one the client can run: ${violation}.`;
  }
  return undefined;
}

/**
 * Resumes an open program from its history: the fingerprint gives what the program is (code,
 * seed, clock, limits, tools) and each call's sealed id proves the program made that call at
 * that position. The runtime then continues the paused isolate, or replays the program.
 */
async function resumeThread(
  thread: ProgramThread,
  input: TurnInput,
  toolSet: ToolSet,
  services: TurnServices,
): Promise<{ event: ProgramEvent; path: ResumePath; tools: readonly ProgramTool[] }> {
  const { program } = thread;
  const programParam = locateItem(input.history.indexOf(program as ConversationItem), input.inputStart);
  let claims;
  try {
    claims = openFingerprint(program.fingerprint, services.sealingKeys);
  } catch (error) {
    if (!(error instanceof FingerprintError)) throw error;
    throw new ApiError('fingerprint_invalid', `The fingerprint of program ${program.call_id} is invalid: ${error.message}.`, `${programParam}.fingerprint`);
  }
  if (claims.programCallId !== program.call_id || claims.codeSha256 !== sha256Hex(program.code)) {
    throw new ApiError(
      'fingerprint_mismatch',
      `Program ${program.call_id} no longer matches its fingerprint: its ${claims.programCallId !== program.call_id ? 'call_id' : 'code'} was changed. Resend program items unchanged.`,
      programParam,
    );
  }
  // Expiry counts from the start sealed in the fingerprint: a stateless resume carries no pause time.
  if (Date.now() - claims.clock > services.programExpiryMs) {
    return {
      event: {
        type: 'incomplete',
        error: { code: 'program_expired', message: `Program ${program.call_id} started more than ${services.programExpiryMs} ms ago and can no longer be resumed` },
        stats: { cpuTimeMs: 0, steps: 0, calls: thread.calls.length },
      },
      path: 'replay',
      tools: [],
    };
  }
  // Schemas are sealed by hash: they come from this request's tools, which must define them as before.
  const tools = unsealTools(claims.tools, toolSet.programTools);
  if ('changed' in tools) {
    throw new ApiError(
      'tool_definitions_changed',
      `Program ${program.call_id} started with tools.${tools.changed} as the tools of its request defined it; this request defines its parameters or output_schema differently, or not at all. Resend the same tools to resume the program.`,
      'tools',
    );
  }
  const recorded: RecordedCall[] = thread.calls.map((call, seq) => {
    const { tool, input: argumentsJson, text } = callInput(call);
    if (!callIdMatches(call.call_id, { programCallId: program.call_id, seq, tool, argumentsJson, text }, services.sealingKeys)) {
      throw new ApiError(
        'program_item_altered',
        `The ${describeCall(call)} is not call ${seq} of program ${program.call_id} as the program made it: its name, namespace, ${text ? 'input' : 'arguments'} or call_id were changed, or the program's calls were dropped, reordered or forged. Resend call items unchanged and in order.`,
        locateItem(input.history.indexOf(call as ConversationItem), input.inputStart),
      );
    }
    return { tool, argumentsJson, output: thread.outputs.get(call.call_id) ?? '' };
  });
  const spec = { code: program.code, tools, seed: claims.seed, clock: claims.clock, limits: claims.limits };
  try {
    return { ...(await services.runtime.resume(program.call_id, spec, recorded)), tools };
  } catch (error) {
    if (error instanceof ProgramBusyError) {
      throw new ApiError('program_busy', `Program ${program.call_id} is being resumed by another request; retry once it answers.`);
    }
    throw error;
  }
}

/** The items a program step adds to the response: its calls, or its program_output. */
function eventItems(programCallId: string, tools: readonly ProgramTool[], event: ProgramEvent, services: TurnServices): (EmittedToolCall | EmittedProgramOutput)[] {
  if (event.type === 'paused') {
    return event.calls.map((call) => {
      const tool = tools.find((candidate) => toolId(candidate) === call.tool);
      if (!tool) throw new Error(`program ${programCallId} called tools.${call.tool}, which it was not given`);
      const kind = tool.kind ?? 'function';
      const callId = sealCallId(services.sealingKeys[0], { programCallId, seq: call.seq, tool: call.tool, argumentsJson: call.argumentsJson, text: takesText(tool) });
      return emittedCall(kind, {
        id: callItemId(callId, CALL_ITEM_PREFIX[kind]),
        callId,
        name: tool.name,
        namespace: tool.namespace,
        input: call.argumentsJson,
        caller: { type: 'program', caller_id: programCallId },
      });
    });
  }
  return [
    {
      type: 'program_output',
      id: programOutputId(programCallId),
      call_id: programCallId,
      result: event.type === 'completed' ? event.result : failureResult(event.error),
      status: event.type === 'completed' ? 'completed' : 'incomplete',
    },
  ];
}

function reasoningItems(decision: ModelDecision): OutputItem[] {
  if (decision.reasoning === undefined) return [];
  return [{ type: 'reasoning', id: newId('rs'), summary: [{ type: 'summary_text', text: decision.reasoning }] }];
}

function messageItem(text: string): OutputItem {
  return {
    type: 'message',
    id: newId('msg'),
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
  };
}
