import type { FastifyBaseLogger } from 'fastify';
import {
  failureResult,
  FingerprintError,
  openFingerprint,
  ProgramBusyError,
  sha256Hex,
  takesText,
  toolId,
  unsealTools,
  type FingerprintClaims,
  type ProgramEngine,
  type ProgramEvent,
  type ProgramSpec,
  type ProgramTool,
  type RecordedCall,
  type ResumePath,
  type SealingKeys,
} from '../../../runtime/index.ts';
import type { ConversationItem, EmittedProgramOutput, McpApprovalRequestItem, McpCallItem, OutputItem, ProgramItem } from '../../../schemas/items.ts';
import { ApiError } from '../../platform/api-error.ts';
import { callItemId, programOutputId } from '../../platform/ids.ts';
import { callInput, describeCall, emittedCall, isServerCall, outputForProgram, sealedIdOf, type ProgramCallItem, type ServerCallItem } from './call-items.ts';
import { callerLabel, locateItem, type ConversationState, type ProgramThread, type StoredParam } from './client-loop.ts';
import { programBusy, type ProgramClaims } from './program-claims.ts';
import { sealCall, sealedBatchEndOf, sealMatches, type CallAnswer, type SealedCall } from './call-seals.ts';
import { answerServerCall, codeInterpreterAnswer, mcpCallAnswer, runMcpCall, type ServerCallServices } from './server-calls.ts';
import { isClientKind, kindOfProgramTool, MCP_APPROVAL, TOOL_KINDS } from './tool-kinds.ts';
import type { ToolSet } from './tool-set.ts';

const { code_interpreter: CODE_INTERPRETER, mcp: MCP } = TOOL_KINDS;

/**
 * A program's steps within one response: each batch of calls it makes is answered by the
 * emulator where it owns the tool (the hosted shell, code_interpreter, MCP), and the program runs
 * on, until it waits on the client (its calls, or an approval) or ends.
 */

export interface ProgramServices extends ServerCallServices {
  readonly runtime: ProgramEngine;
  /** The programs this process is resuming: one request at a time each. */
  readonly claims: ProgramClaims;
  /** A paused program can no longer be resumed this long after it started. */
  readonly programExpiryMs: number;
  readonly log: FastifyBaseLogger;
}

/** Records a step's outcome for the trace and the log, and returns the event. */
export type StepRecorder = (programCallId: string, event: ProgramEvent, path: 'start' | ResumePath) => ProgramEvent;

/** A program being run in this response: what it is, and every call it has had answered. */
interface ProgramRun {
  readonly programCallId: string;
  readonly spec: ProgramSpec;
  readonly recorded: RecordedCall[];
}

function programOutputItem(programCallId: string, event: Exclude<ProgramEvent, { type: 'paused' }>): EmittedProgramOutput {
  const result = event.type === 'completed' ? event.result : failureResult(event.error);
  const status = event.type === 'completed' ? 'completed' : 'incomplete';
  return { type: 'program_output', id: programOutputId(programCallId, status, result), call_id: programCallId, result, status };
}

function toolOf(tools: readonly ProgramTool[], id: string, programCallId: string): ProgramTool {
  const tool = tools.find((candidate) => toolId(candidate) === id);
  if (!tool) throw new Error(`program ${programCallId} called tools.${id}, which it was not given`);
  return tool;
}

/** The seqs that can end the batch of call `seq`: up to the last call made, within the in-flight limit. */
function batchEnds(seq: number, calls: number, maxCallsInFlight: number): number[] {
  const last = Math.min(calls, seq + maxCallsInFlight) - 1;
  return Array.from({ length: Math.max(0, last - seq + 1) }, (_, offset) => seq + offset);
}

function recordedCall(tool: string, argumentsJson: string, answer: CallAnswer): RecordedCall {
  return answer.error === undefined ? { tool, argumentsJson, output: answer.output } : { tool, argumentsJson, output: '', error: answer.error };
}

/**
 * Runs a program from a step's event until it needs the client or ends, answering the calls the
 * emulator owns and resuming it with their answers. Returns the items for the response.
 */
async function advance(run: ProgramRun, first: ProgramEvent, toolSet: ToolSet, services: ProgramServices, record: StepRecorder): Promise<OutputItem[]> {
  const items: OutputItem[] = [];
  let event = first;
  for (;;) {
    if (event.type !== 'paused') {
      items.push(programOutputItem(run.programCallId, event));
      return items;
    }
    // A cancelled request starts no more calls, and runs the program no further.
    services.signal?.throwIfAborted();
    const answers: (CallAnswer | undefined)[] = [];
    const batchEnd = event.calls[event.calls.length - 1]!.seq;
    const answered = await Promise.all(
      event.calls.map(async (call) => {
        const tool = toolOf(run.spec.tools, call.tool, run.programCallId);
        const kind = kindOfProgramTool(tool);
        if (kind === undefined) throw new TypeError(`program ${run.programCallId} was given tools.${call.tool} with a tag of no known kind`);
        if (isClientKind(kind)) {
          const callId = sealCall(
            services.sealingKeys,
            { programCallId: run.programCallId, seq: call.seq, tool: call.tool, input: call.argumentsJson, text: takesText(tool) },
            TOOL_KINDS[kind].sealedPrefix,
          );
          const item = emittedCall(kind, {
            id: callItemId(callId, TOOL_KINDS[kind].call.idPrefix),
            callId,
            name: tool.name,
            namespace: tool.namespace,
            input: call.argumentsJson,
            caller: { type: 'program', caller_id: run.programCallId },
          });
          return { items: [item] as OutputItem[] };
        }
        return answerServerCall(call, tool, run.programCallId, toolSet, services, batchEnd);
      }),
    );
    for (const result of answered) {
      items.push(...result.items);
      answers.push(result.answer);
    }
    // The program runs on only when every call of the batch has its answer.
    if (answers.some((answer) => answer === undefined)) return items;
    services.signal?.throwIfAborted();
    event.calls.forEach((call, index) => run.recorded.push(recordedCall(call.tool, call.argumentsJson, answers[index]!)));
    const resumed = await resumeEngine(run, services);
    event = record(run.programCallId, resumed.event, resumed.path);
  }
}

async function resumeEngine(run: ProgramRun, services: ProgramServices): Promise<{ event: ProgramEvent; path: ResumePath }> {
  try {
    return await services.runtime.resume(run.programCallId, run.spec, run.recorded);
  } catch (error) {
    if (error instanceof ProgramBusyError) throw programBusy(run.programCallId);
    throw error;
  }
}

/** Starts a program and runs it as far as it goes without the client. */
export async function startProgram(
  programCallId: string,
  spec: ProgramSpec,
  toolSet: ToolSet,
  services: ProgramServices,
  record: StepRecorder,
): Promise<OutputItem[]> {
  const event = record(programCallId, await services.runtime.start(programCallId, spec), 'start');
  return advance({ programCallId, spec, recorded: [] }, event, toolSet, services, record);
}

export interface ResumeInput {
  readonly history: readonly ConversationItem[];
  readonly inputStart: number;
  readonly storedParam: StoredParam;
  readonly state: ConversationState;
  readonly toolSet: ToolSet;
}

/** An open program checked and claimed by this request, ready to go on. */
interface PreparedResume {
  readonly thread: ProgramThread;
  readonly tools: readonly ProgramTool[];
  readonly claims: FingerprintClaims;
  /** The answer of every call, but those approved in this request (they run first). */
  readonly recorded: RecordedCall[];
  readonly approvedNow: readonly { seq: number; tool: string; argumentsJson: string; requestId: string }[];
  /** Gives the program back (ProgramClaims). */
  readonly release: () => void;
}

/**
 * Resumes every open program of the conversation. Each is checked and claimed before any of
 * them runs anything (an approved MCP call included): an altered item of one program, or
 * another request resuming one of them, fails the request having run nothing. Each program then
 * gets the answers of its calls (approved MCP calls run now), and the runtime continues the
 * paused isolate or replays it, as far as it goes without the client. Returns each program's
 * items, in order.
 */
export async function resumePrograms(
  threads: readonly ProgramThread[],
  input: ResumeInput,
  services: ProgramServices,
  record: StepRecorder,
): Promise<OutputItem[][]> {
  const prepared: (PreparedResume | OutputItem[])[] = [];
  // One budget for the whole request, however many programs it resumes.
  const placement: PlacementBudget = { left: PLACEMENT_BUDGET };
  try {
    for (const thread of threads) prepared.push(prepareResume(thread, input, services, record, placement));
    const results: OutputItem[][] = [];
    for (const program of prepared) results.push(Array.isArray(program) ? program : await runResume(program, input, services, record));
    return results;
  } finally {
    for (const program of prepared) if (!Array.isArray(program)) program.release();
  }
}

/**
 * Whether a program item is one this server (or one sharing its keys) sealed, unchanged: only
 * such an item may touch the state kept for its program. A forged item carrying another
 * conversation's call_id must not.
 */
export function sealedByUs(program: ProgramItem, sealingKeys: SealingKeys): boolean {
  try {
    const claims = openFingerprint(program.fingerprint, sealingKeys);
    return claims.programCallId === program.call_id && claims.codeSha256 === sha256Hex(program.code);
  } catch (error) {
    if (error instanceof FingerprintError) return false;
    throw error;
  }
}

/**
 * Checks an open program against its history and claims it: the fingerprint gives what the
 * program is (code, seed, clock, limits, tools) and each call's sealed id proves the program
 * made that call at that position. An expired program gets its program_output instead.
 */
function prepareResume(
  thread: ProgramThread,
  input: ResumeInput,
  services: ProgramServices,
  record: StepRecorder,
  placement: PlacementBudget,
): PreparedResume | OutputItem[] {
  const { program } = thread;
  const programParam = locateItem(input.history.indexOf(program as ConversationItem), input.inputStart, input.storedParam);
  let claims;
  try {
    claims = openFingerprint(program.fingerprint, services.sealingKeys);
  } catch (error) {
    if (!(error instanceof FingerprintError)) throw error;
    throw new ApiError('fingerprint_invalid', `The fingerprint of program ${program.call_id} is invalid: ${error.message}.`, `${programParam}.fingerprint`);
  }
  // The kinds are the server's own, sealed as the tools' tags: one this server does not know is not its seal's.
  const untagged = claims.tools.find((tool) => kindOfProgramTool(tool) === undefined);
  if (untagged) {
    throw new ApiError(
      'fingerprint_invalid',
      `The fingerprint of program ${program.call_id} is invalid: it seals tools.${toolId(untagged)} with ${untagged.tag === undefined ? 'no tag' : `the tag ${JSON.stringify(untagged.tag)}`} and ${untagged.input ?? 'json'} input, which is no tool kind of this server.`,
      `${programParam}.fingerprint`,
    );
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
    const expired: ProgramEvent & { type: 'incomplete' } = {
      type: 'incomplete',
      error: {
        code: 'program_expired',
        message: `Program ${program.call_id} started more than ${services.programExpiryMs} ms ago and can no longer be resumed`,
      },
      stats: { cpuTimeMs: 0, steps: 0, calls: thread.calls.length },
    };
    record(program.call_id, expired, 'replay');
    return [programOutputItem(program.call_id, expired)];
  }
  // Schemas are sealed by hash: they come from this request's tools, which must define them as before.
  const tools = unsealTools(claims.tools, input.toolSet.programTools);
  if ('changed' in tools) {
    throw new ApiError(
      'tool_definitions_changed',
      `Program ${program.call_id} started with tools.${tools.changed} as the tools of its request defined it; this request defines its parameters or output_schema differently, or not at all. Resend the same tools to resume the program.`,
      'tools',
    );
  }

  const recorded: RecordedCall[] = [];
  const approvedNow: { seq: number; tool: string; argumentsJson: string; requestId: string }[] = [];
  for (const [seq, call] of thread.calls.entries()) {
    const { tool, input: argumentsJson, text } = callInput(call);
    const sealed = sealedIdOf(call);
    const identity: SealedCall = { programCallId: program.call_id, seq, tool, input: argumentsJson, text };
    if (call.type === MCP.call.type) requireMcpOutput(call, input);
    // An item the emulator answered itself carries its answer, which its id seals too.
    const carried = call.type === CODE_INTERPRETER.call.type ? codeInterpreterAnswer(call) : call.type === MCP.call.type ? mcpCallAnswer(call) : undefined;
    // An approval request's id also seals the last seq of its batch: found by trying each call
    // left that its batch can hold (no batch is larger than the program's in-flight limit).
    const batchEnd =
      call.type === MCP_APPROVAL.request.type
        ? (sealedBatchEndOf(sealed.id, services.sealingKeys, identity, sealed.prefix, batchEnds(seq, thread.calls.length, claims.limits.maxCallsInFlight)) ??
          -1)
        : undefined;
    if (
      batchEnd === -1 ||
      (batchEnd === undefined &&
        !sealMatches(sealed.id, services.sealingKeys, carried === undefined ? identity : { ...identity, answer: carried }, sealed.prefix))
    ) {
      // This program's call at this place may have come back under another caller, which pushed
      // this one here; or this one is another program's, resent under this program's caller.
      const moved =
        resentUnderOtherCaller(thread, seq, input, services.sealingKeys, claims.limits.maxCallsInFlight, 'any', placement) ??
        calledByAnother(call, thread, input, services.sealingKeys, claims.limits.maxCallsInFlight, placement);
      if (moved) throw moved;
      throw new ApiError(
        'program_item_altered',
        `The ${describeCall(call)} is not call ${seq} of program ${program.call_id} as the program made it: its name, namespace, ${text ? 'input' : 'arguments'}${carried ? ', answer' : ''} or id were changed, or the program's calls were dropped, reordered or forged. Resend call items unchanged and in order.`,
        locateItem(input.history.indexOf(call as ConversationItem), input.inputStart, input.storedParam),
      );
    }
    let answer: CallAnswer;
    switch (call.type) {
      case CODE_INTERPRETER.call.type:
      case MCP.call.type:
        answer = carried!;
        break;
      case MCP_APPROVAL.request.type: {
        const done = thread.approved.get(call.id);
        const decision = input.state.approvals.get(call.id);
        if (done) {
          requireMcpOutput(done, input);
          answer = mcpCallAnswer(done);
          checkApprovedCall(done, call, { ...identity, answer }, input, services);
        } else if (decision?.approve) {
          // The program made calls after this request's batch: it was resumed past it, so the
          // approved call ran then. Its mcp_call must be resent; the call never runs again.
          if (batchEnd! < thread.calls.length - 1) {
            throw new ApiError(
              'program_item_altered',
              `The mcp_call that ran after ${describeCall(call)} was approved is missing from the conversation; resend every output item in order.`,
              locateItem(input.history.indexOf(decision as ConversationItem), input.inputStart, input.storedParam),
            );
          }
          approvedNow.push({ seq, tool, argumentsJson, requestId: call.id });
          continue;
        } else {
          answer = { error: `The user denied the call of tools.${tool}${decision?.reason ? `: ${decision.reason}` : ''}` };
        }
        break;
      }
      default: {
        const output = thread.outputs.get(call.call_id);
        answer = { output: output ? outputForProgram(output) : '' };
        if (kindOfProgramTool(toolOf(tools, tool, program.call_id)) === 'hosted_shell')
          checkHostedShellOutput(call.call_id, thread, { ...identity, answer }, input, services);
      }
    }
    recorded[seq] = recordedCall(tool, argumentsJson, answer);
  }
  // The call the program waits on after these may be in the conversation without its caller (or
  // with `direct`): left out of its thread, it would be made again (an MCP call run twice).
  const moved = resentUnderOtherCaller(thread, thread.calls.length, input, services.sealingKeys, claims.limits.maxCallsInFlight, 'none', placement);
  if (moved) throw moved;
  // Taken once everything is checked, before anything runs: a second request resuming this
  // program meanwhile gets program_busy having run nothing.
  const release = services.claims.claim(program.call_id);
  return { thread, tools, claims, recorded, approvedNow, release };
}

/** Runs the calls approved in this request, then continues the program with every answer. */
async function runResume(prepared: PreparedResume, input: ResumeInput, services: ProgramServices, record: StepRecorder): Promise<OutputItem[]> {
  const { thread, tools, claims, recorded, approvedNow } = prepared;
  const { program } = thread;
  const items: OutputItem[] = [];
  // Approved in this request: the calls run now, all at once, and their mcp_call items join the response in order.
  const caller = { type: 'program', caller_id: program.call_id } as const;
  const ran = await Promise.all(
    approvedNow.map(({ seq, tool, argumentsJson, requestId }) =>
      runMcpCall(
        { seq, tool, argumentsJson },
        toolOf(tools, tool, program.call_id),
        { programCallId: program.call_id, toolSet: input.toolSet, services },
        caller,
        requestId,
      ),
    ),
  );
  approvedNow.forEach(({ seq, tool, argumentsJson }, index) => {
    items.push(...ran[index]!.items);
    recorded[seq] = recordedCall(tool, argumentsJson, ran[index]!.answer!);
  });
  // A cancelled request does not run the program on with what it got.
  services.signal?.throwIfAborted();
  const run: ProgramRun = {
    programCallId: program.call_id,
    spec: { code: program.code, tools, seed: claims.seed, clock: claims.clock, limits: claims.limits },
    recorded,
  };
  const resumed = await resumeEngine(run, services);
  items.push(...(await advance(run, record(program.call_id, resumed.event, resumed.path), input.toolSet, services, record)));
  return items;
}

/**
 * An mcp_call's output is optional in the SDK's input type (the Agents SDK leaves it out). The
 * output of a call a stored response made has been put back (withStoredMcpOutputs); without one,
 * a replay has no answer to give the program, and the error says it is the output that is missing.
 */
function requireMcpOutput(call: McpCallItem & { id: string }, input: ResumeInput): void {
  if (call.output != null || call.error) return;
  const at = locateItem(input.history.indexOf(call as ConversationItem), input.inputStart, input.storedParam);
  throw new ApiError(
    'missing_required_parameter',
    `${at}: ${describeCall(call)} was resent without its output, which its program needs to resume, and no stored response holds it (the response that made the call was created with store: false, or deleted). Resend the mcp_call with the output its response gave it.`,
    at.startsWith('input') ? `${at}.output` : at,
  );
}

/**
 * What one request may spend looking for the program a resent call belongs to, in units of one
 * MAC or one KiB of a call's arguments and answer canonicalised and hashed. Each try costs the
 * call's size (an mcp_call's or code_interpreter_call's id seals its answer) and a MAC per
 * position; an mcp_approval_request's id also seals the end of its batch, up to
 * maxCallsInFlight MACs per position. Without a bound, trying every item of a long conversation,
 * or one large item at every position of a forged program, held the server's loop for seconds
 * (5,000 items × 128 ends ≈ 2 s; 200 KB of arguments × 2,400 positions 7.6 s). Past the budget
 * an item is not placed: it is refused as altered (the error names no caller), or, for the call
 * a program waits on, asked again. 8,000 units take ~40 ms here.
 */
const PLACEMENT_BUDGET = 8_000;

/** What is left of PLACEMENT_BUDGET for one request. */
interface PlacementBudget {
  left: number;
}

const KIB = 1024;

/**
 * Whether a call the emulator answered is sealed as call `seq` of a program (an approval
 * request's id seals its batch's end too); false, without trying, when the budget cannot pay.
 */
function sealedAt(call: ServerCallItem, programCallId: string, seq: number, keys: SealingKeys, maxCallsInFlight: number, budget: PlacementBudget): boolean {
  if (budget.left <= 0) return false;
  const { tool, input: argumentsJson, text } = callInput(call);
  const identity: SealedCall = { programCallId, seq, tool, input: argumentsJson, text };
  const sealed = sealedIdOf(call);
  if (call.type === MCP_APPROVAL.request.type) {
    const ends = batchEnds(seq, seq + maxCallsInFlight, maxCallsInFlight);
    const cost = ends.length + Math.ceil(argumentsJson.length / KIB);
    if (budget.left < cost) return false;
    budget.left -= cost;
    return sealedBatchEndOf(sealed.id, keys, identity, sealed.prefix, ends) !== undefined;
  }
  const answer = call.type === CODE_INTERPRETER.call.type ? codeInterpreterAnswer(call) : mcpCallAnswer(call);
  const cost = 1 + Math.ceil((argumentsJson.length + (answer?.output ?? answer?.error ?? '').length) / KIB);
  if (budget.left < cost) return false;
  budget.left -= cost;
  return sealMatches(sealed.id, keys, { ...identity, answer }, sealed.prefix);
}

/** The 400 for a call of program `programCallId` resent with another caller, naming that caller. */
function wrongCaller(item: ServerCallItem, seq: number, programCallId: string, input: ResumeInput): ApiError {
  const at = locateItem(input.history.indexOf(item as ConversationItem), input.inputStart, input.storedParam);
  return new ApiError(
    item.caller ? 'caller_mismatch' : 'caller_missing',
    `${at}: the ${describeCall(item)} is call ${seq} of program ${programCallId}, but it was resent with ${item.caller ? `caller ${callerLabel(item.caller)}` : 'no caller'}. Resend it with the caller its response gave it, {type: "program", caller_id: "${programCallId}"}.`,
    at.startsWith('input') ? `${at}.caller` : at,
  );
}

/**
 * A call the emulator answered that is call `seq` of this thread's program, resent with another
 * `caller`: the 400 naming it, or undefined when no item of the conversation is. Its id seals the
 * program that made it, whatever caller it carries. `none` tries only the items no program
 * claims (no caller, or `direct`): cheap enough for every resume; `any` tries every other item
 * too, when the thread is already known to be wrong.
 */
function resentUnderOtherCaller(
  thread: ProgramThread,
  seq: number,
  input: ResumeInput,
  keys: SealingKeys,
  maxCallsInFlight: number,
  among: 'none' | 'any',
  budget: PlacementBudget,
): ApiError | undefined {
  const programCallId = thread.program.call_id;
  for (const item of input.history) {
    if (budget.left <= 0) break;
    if (!isServerCall(item) || (item.caller?.type === 'program' && (among === 'none' || item.caller.caller_id === programCallId))) continue;
    if (sealedAt(item, programCallId, seq, keys, maxCallsInFlight, budget)) return wrongCaller(item, seq, programCallId, input);
  }
  return undefined;
}

/** A call the emulator answered, resent in this thread, that another program of the conversation made: the 400 naming its caller. */
function calledByAnother(
  call: ProgramCallItem,
  thread: ProgramThread,
  input: ResumeInput,
  keys: SealingKeys,
  maxCallsInFlight: number,
  budget: PlacementBudget,
): ApiError | undefined {
  const item = call as ConversationItem;
  if (!isServerCall(item)) return undefined;
  for (const other of input.state.programs) {
    if (other === thread) continue;
    for (let seq = 0; seq <= other.calls.length && budget.left > 0; seq++)
      if (sealedAt(item, other.program.call_id, seq, keys, maxCallsInFlight, budget)) return wrongCaller(item, seq, other.program.call_id, input);
  }
  return undefined;
}

/**
 * An mcp_call that ran after an approval is the answer the program gets, so it must be the one
 * the emulator made: its id seals the request's call and the answer it carries, and it names the
 * same tool and arguments as the request.
 */
function checkApprovedCall(
  done: McpCallItem & { id: string },
  request: McpApprovalRequestItem,
  sealed: SealedCall,
  input: ResumeInput,
  services: ProgramServices,
): void {
  const same =
    done.server_label === request.server_label &&
    done.name === request.name &&
    done.arguments === request.arguments &&
    sealMatches(done.id, services.sealingKeys, sealed, MCP.sealedPrefix);
  if (!same) {
    throw new ApiError(
      'program_item_altered',
      `The mcp_call for approval request ${request.id} is not the call the emulator made after the approval: its id, server_label, name, arguments or answer were changed. Resend call items unchanged.`,
      locateItem(input.history.indexOf(done as ConversationItem), input.inputStart, input.storedParam),
    );
  }
}

/** A hosted shell's output is the emulator's: its id seals the call and what it carries. */
function checkHostedShellOutput(callId: string, thread: ProgramThread, sealed: SealedCall, input: ResumeInput, services: ProgramServices): void {
  const item = thread.outputs.get(callId);
  if (item && !sealMatches(item.id, services.sealingKeys, sealed, TOOL_KINDS.hosted_shell.output.idPrefix)) {
    throw new ApiError(
      'program_item_altered',
      `The shell_call_output for ${callId} is not the one the emulator made for the hosted shell: its output was changed, or it was sent without the id the response gave it (that id seals the output). Resend it unchanged, id included.`,
      locateItem(input.history.indexOf(item as ConversationItem), input.inputStart, input.storedParam),
    );
  }
}
