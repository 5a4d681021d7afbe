import { randomInt } from 'node:crypto';
import {
  checkAgainstSchema,
  FingerprintTooLargeError,
  sealFingerprint,
  sealTool,
  sha256Hex,
  toolId,
  ToolSchemaError,
  type ProgramEvent,
  type ProgramLimits,
  type ResumePath,
  type SealingKeys,
} from '../../../runtime/index.ts';
import type { ConversationItem, EmittedProgramOutput, McpListToolsItem, OutputItem } from '../../../schemas/items.ts';
import type { Knobs } from '../../../schemas/knobs.ts';
import type { CreateResponseRequest } from '../../../schemas/request.ts';
import type { Tool } from '../../../schemas/tools.ts';
import type { ClientChecks } from '../../platform/config.ts';
import { newCallId, newId } from '../../platform/ids.ts';
import type { DirectCallDecision, ModelContext, ModelDecision, ModelUsage } from '../stand-ins/model-decision.ts';
import type { ModelStandIn } from '../stand-ins/stand-in.ts';
import { callInput, emittedCall, waitsOnClient } from './call-items.ts';
import { readConversation, type ConversationState, type StoredParam } from './client-loop.ts';
import { APPLY_PATCH_PROGRAM_TOOL, SHELL_PROGRAM_TOOL } from './local-tools.ts';
import { listMcpServers } from './mcp-listing.ts';
import { resumePrograms, sealedByUs, startProgram, type ProgramServices, type StepRecorder } from './program-steps.ts';
import { isClientKind, TOOL_KINDS } from './tool-kinds.ts';
import { checkToolSchemas, readToolSet, withMcpListings, type SchemaBounds, type ToolSet } from './tool-set.ts';
import { clientSearch, serverSearch } from './tool-search.ts';

const NOTHING_TO_ANSWER = 'ptc-emulator: the conversation ends with an assistant message and has no new user message, program output or tool output to answer.';

export interface TurnServices extends ProgramServices {
  readonly standIn: ModelStandIn;
  /** The key that seals new fingerprints and call ids first, then older keys still accepted. */
  readonly sealingKeys: SealingKeys;
  readonly limits: ProgramLimits;
  readonly schemaBounds: SchemaBounds;
}

export interface TurnInput {
  readonly request: CreateResponseRequest;
  /** Stored history followed by this request's input, every item with an id. */
  readonly history: readonly ConversationItem[];
  /** Where this request's own input starts in `history` (errors name items as `input[i]`). */
  readonly inputStart: number;
  /** What brought the items before it: errors name that parameter. */
  readonly storedParam: StoredParam;
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
  /** What a real model (a model backend) spent on this turn's decisions, summed, when one decided. */
  readonly modelUsage?: ModelUsage;
  /** The stand-ins that decided this turn, in order (`fallback` when none of the chain did); empty when none was asked. */
  readonly standIns: readonly string[];
  /** Why no program or call ran although the user's turn asked for a decision: no stand-in made one. */
  readonly nothingRan?: string;
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
export async function prepareTurn(input: TurnInput, services: Pick<TurnServices, 'schemaBounds'>): Promise<PreparedTurn> {
  const state = readConversation(input.history, input.clientChecks, input.inputStart, input.storedParam);
  // MCP servers listed earlier in the conversation bring their tools.
  const toolSet = withMcpListings(readToolSet(input.request.tools, state.loadedTools), state.mcpListings);
  await checkToolSchemas(toolSet, services.schemaBounds);
  return { input, toolSet, state, context: modelContext(input, state, toolSet) };
}

/**
 * One model turn: resume the programs the client answered, or, when none is waiting, let the
 * stand-in model decide what to emit. Returns the response's output items.
 */
export async function runTurn(turn: PreparedTurn, knobs: Knobs, services: TurnServices): Promise<TurnResult> {
  const { input, state } = turn;
  // One line for all of them: their notes are bounded (MAX_TOLERATED_NOTES), a flood is counted.
  if (state.tolerated.length > 0) services.log.warn({ clientLoop: state.tolerated }, 'lenient client-loop checks let mistakes through');
  const trace: ProgramTrace[] = [];
  const record: StepRecorder = (programCallId, event, path) => {
    const failure = event.type === 'incomplete' ? event.error : undefined;
    trace.push({ program: programCallId, path, outcome: event.type, stats: event.stats, ...(failure ? { code: failure.code } : {}) });
    services.log.info({ ...trace.at(-1), ...(failure?.cause ? { err: failure.cause } : {}) }, 'program step');
    return event;
  };
  // Every decision of the turn goes through here, so that a real model's tokens are counted,
  // and who decided (or why nothing ran) is known.
  const spent: ModelUsage[] = [];
  const decidedBy: string[] = [];
  let nothingRan: string | undefined;
  const standIn: Decides = {
    decide: async (modelContext) => {
      const decided = await services.standIn.decide(modelContext);
      if (decided.decision.usage) spent.push(decided.decision.usage);
      if (!decidedBy.includes(decided.by)) decidedBy.push(decided.by);
      nothingRan ??= decided.nothingRan;
      return decided.decision;
    },
  };
  const result = (output: OutputItem[]): TurnResult => ({
    output,
    trace,
    tolerated: state.tolerated,
    standIns: decidedBy,
    ...(nothingRan === undefined ? {} : { nothingRan }),
    ...(spent.length > 0 ? { modelUsage: sumUsage(spent) } : {}),
  });

  const output: OutputItem[] = [];
  let ended: { code: string; output: EmittedProgramOutput } | undefined;
  // A program the client closed frees its paused isolate, if the item is one we sealed: a forged
  // program item with another conversation's call_id leaves that program as it was.
  for (const thread of state.programs)
    if (thread.closedBy && sealedByUs(thread.program, services.sealingKeys)) services.runtime.dispose(thread.program.call_id);
  const open = state.programs.filter((thread) => !thread.closedBy);
  const resumed = await resumePrograms(
    open,
    { history: input.history, inputStart: input.inputStart, storedParam: input.storedParam, state, toolSet: turn.toolSet },
    services,
    record,
  );
  for (const [index, items] of resumed.entries()) {
    output.push(...items);
    const programOutput = items.find((item): item is EmittedProgramOutput => item.type === 'program_output');
    if (programOutput) ended = { code: open[index]!.program.code, output: programOutput };
  }
  // The program waits on the client: its calls or an approval.
  if (output.some((item) => waitsOnClient(item))) return result(output);
  const context: ModelContext = {
    ...turn.context,
    ...(knobs.seed === undefined ? {} : { seed: knobs.seed }),
    ...(knobs.explore === undefined ? {} : { explore: knobs.explore }),
  };
  // The knob `final_message: next` holds back the message that would follow a program ending in this response.
  const afterProgram = async (program: ModelContext['program']): Promise<OutputItem[]> =>
    knobs.final_message === 'next' ? [] : finalMessage({ ...context, phase: 'after_program', program }, standIn);
  if (ended) {
    output.push(...(await afterProgram({ code: ended.code, status: ended.output.status, result: ended.output.result })));
    return result(output);
  }

  const { tail } = state;
  if (tail.kind === 'answered') return result([messageItem(NOTHING_TO_ANSWER)]);
  if (tail.kind === 'after_program') {
    return result(
      await finalMessage({ ...context, phase: 'after_program', program: { code: tail.code, status: tail.output.status, result: tail.output.result } }, standIn),
    );
  }
  if (tail.kind === 'after_calls') {
    const callOutputs = tail.calls.map((direct) => {
      const { tool, input: callArguments } = callInput(direct.call);
      return { name: tool, arguments: callArguments, output: direct.output ?? '' };
    });
    // As a model after its calls' outputs: answer, or call tools again, or write a program.
    return result(await modelTurn('after_calls', turn.toolSet, state.mcpListings, callOutputs));
  }

  // The model's turn: after the user's message, or after a tool search the client ran.
  output.push(...(await modelTurn(tail.kind === 'after_search' ? 'after_search' : 'user_turn', turn.toolSet, state.mcpListings)));
  return result(output);

  /**
   * The stand-in decides what to emit: a message, direct calls, a program, or first a tool
   * search (run here, then the stand-in decides again with the loaded tools, or handed to the
   * client). MCP servers the conversation has not listed yet are listed first.
   */
  async function modelTurn(
    phase: ActingPhase,
    known: ToolSet,
    listed: ReadonlyMap<string, McpListToolsItem>,
    callOutputs?: ModelContext['callOutputs'],
  ): Promise<OutputItem[]> {
    const items: OutputItem[] = [];
    const listings = await listMcpServers(known, listed, services);
    items.push(...listings);
    const allListed = new Map([...listed, ...listings.map((item) => [item.server_label, item] as const)]);
    const toolSet = listings.length === 0 ? known : withMcpListings(known, allListed);

    const decision = await standIn.decide({ ...context, phase, tools: toolSet.summaries, ...(callOutputs ? { callOutputs } : {}) });
    const refusal = await whyNot(decision, input.request, toolSet, phase, services.schemaBounds);
    if (refusal) return [...items, messageItem(refusal)];
    items.push(...reasoningItems(decision));
    switch (decision.type) {
      case 'message':
        items.push(messageItem(decision.text));
        break;
      case 'function_calls':
        items.push(...decision.calls.map((call) => directCall(call, toolSet)));
        break;
      case 'tool_search': {
        if (toolSet.toolSearch?.execution === 'client') {
          items.push(clientSearch(decision.query));
          break;
        }
        const [call, found] = serverSearch(toolSet, decision.query);
        items.push(call, found);
        // What it found are deferred tools of this request: they keep their places there.
        const loaded = readToolSet(input.request.tools, [...state.loadedTools, ...(found.tools as Tool[]).map((tool) => ({ tool, param: 'tools' }))]);
        await checkToolSchemas(loaded, services.schemaBounds);
        items.push(...(await modelTurn('after_search', withMcpListings(loaded, allListed), allListed)));
        break;
      }
      case 'program': {
        const programCallId = newCallId();
        const seed = randomInt(2 ** 32);
        const clock = Date.now();
        const tools = toolSet.programTools;
        const limits = tightened(services.limits, decision.limits);
        let fingerprint: string;
        try {
          fingerprint = sealFingerprint(
            { programCallId, codeSha256: sha256Hex(decision.code), seed, clock, limits, tools: tools.map(sealTool) },
            services.sealingKeys[0],
          );
        } catch (error) {
          if (!(error instanceof FingerprintTooLargeError)) throw error;
          // A program that could never be resumed is not started.
          items.push(messageItem(`ptc-emulator: the stand-in wanted to run a program, but ${error.message}: give programs fewer tools.`));
          break;
        }
        items.push({ type: 'program', id: newId('cm'), call_id: programCallId, code: decision.code, fingerprint });
        const stepped = await startProgram(programCallId, { code: decision.code, tools, seed, clock, limits }, toolSet, services, record);
        items.push(...stepped);
        // The model's own calls beside the program's: the final message waits for their outputs too.
        const direct = (decision.calls ?? []).map((call) => directCall(call, toolSet));
        items.push(...direct);
        const programOutput = stepped.find((item): item is EmittedProgramOutput => item.type === 'program_output');
        if (programOutput && direct.length === 0)
          items.push(...(await afterProgram({ code: decision.code, status: programOutput.status, result: programOutput.result })));
        break;
      }
    }
    return items;
  }
}

function modelContext(input: TurnInput, state: ConversationState, toolSet: ToolSet): ModelContext {
  return {
    toolSearch: toolSet.toolSearch !== undefined && toolSet.deferred.length > 0,
    ...(input.request.tool_choice == null ? {} : { toolChoice: input.request.tool_choice }),
    phase: 'user_turn',
    model: input.request.model,
    lastUserText: state.lastUserText,
    turn: state.userTurns,
    instructions: input.request.instructions ?? null,
    metadata: input.request.metadata ?? {},
    tools: toolSet.summaries,
    history: input.history,
    programmaticToolCalling: toolSet.programmaticToolCalling,
    headers: input.headers,
  };
}

/** What a turn asks of the stand-in: a decision (who made it is noted by runTurn). */
interface Decides {
  decide(context: ModelContext): Promise<ModelDecision>;
}

/** The server's limits, each tightened where a decision asks for a smaller one (never loosened). */
function tightened(limits: ProgramLimits, asked: Partial<ProgramLimits> | undefined): ProgramLimits {
  if (!asked) return limits;
  const result = { ...limits };
  for (const [name, value] of Object.entries(asked) as [keyof ProgramLimits, number | undefined][]) {
    if (value !== undefined && Number.isSafeInteger(value) && value > 0 && value < result[name]) result[name] = value;
  }
  // isolated-vm's floor for a heap.
  result.memoryMb = Math.max(result.memoryMb, Math.min(8, limits.memoryMb));
  return result;
}

/** The phases in which the stand-in may act (call tools, search, run a program), not only answer. */
type ActingPhase = 'user_turn' | 'after_search' | 'after_calls';

function sumUsage(usages: readonly ModelUsage[]): ModelUsage {
  const sum = (field: keyof ModelUsage): number => usages.reduce((total, usage) => total + usage[field], 0);
  return {
    input_tokens: sum('input_tokens'),
    output_tokens: sum('output_tokens'),
    cached_tokens: sum('cached_tokens'),
    reasoning_tokens: sum('reasoning_tokens'),
  };
}

/** After a program: the stand-in's final message (never another program). */
async function finalMessage(context: ModelContext, standIn: Decides): Promise<OutputItem[]> {
  const decision = await standIn.decide(context);
  const text =
    decision.type === 'message' ? decision.text : `ptc-emulator: after a program the stand-in must answer with a message, but it chose ${decision.type}.`;
  return [...reasoningItems(decision), messageItem(text)];
}

/** A call the stand-in makes itself; `caller` says so when programs are enabled. */
function directCall(call: DirectCallDecision, toolSet: ToolSet): OutputItem {
  const found = toolSet.tools.get(toolId(call))?.kind ?? 'function';
  // whyNot has refused calls of tools the emulator runs.
  const kind = isClientKind(found) ? found : 'function';
  return emittedCall(kind, {
    id: newId(TOOL_KINDS[kind].call.idPrefix),
    callId: newCallId(),
    name: call.name,
    namespace: call.namespace,
    input: TOOL_KINDS[kind].input === 'text' ? (call.input ?? '') : JSON.stringify(call.arguments ?? {}),
    ...(toolSet.programmaticToolCalling ? { caller: { type: 'direct' as const } } : {}),
  });
}

/** Why the stand-in's decision cannot be carried out for this request, if it cannot. */
async function whyNot(
  decision: ModelDecision,
  request: CreateResponseRequest,
  toolSet: ToolSet,
  phase: ActingPhase,
  bounds: SchemaBounds,
): Promise<string | undefined> {
  if (decision.type === 'message') return undefined;
  if (decision.type === 'tool_search') {
    if (!toolSet.toolSearch) return 'ptc-emulator: the stand-in wanted to search for tools, but the request\'s tools have no {"type": "tool_search"} entry.';
    if (phase === 'after_search')
      return 'ptc-emulator: the stand-in wanted to search for tools again right after a search; it must use what the search loaded.';
    return undefined;
  }
  const what = decision.type === 'program' ? 'run a program' : 'call tools';
  if (request.tool_choice === 'none') return `ptc-emulator: the stand-in wanted to ${what}, but tool_choice is "none".`;
  if (decision.type === 'program' && !toolSet.programmaticToolCalling) {
    // The Agents API's harness turns an agent's `enabled: false` entry into no entry at all.
    return 'ptc-emulator: the stand-in wanted to run a program, but programs are off for this turn: the request\'s tools have no {"type": "programmatic_tool_calling"} entry (on the Agents API: the agent\'s programmatic_tool_calling entry has enabled: false).';
  }
  for (const call of decision.calls ?? []) {
    const id = toolId(call);
    const tool = toolSet.tools.get(id);
    if (!tool) return `ptc-emulator: the stand-in wanted to call '${id}', which is not a tool of this request.`;
    if (!tool.callers.includes('direct')) {
      return `ptc-emulator: the stand-in wanted to call '${id}' directly, but its allowed_callers is ["programmatic"]: only programs may call it.`;
    }
    if (!isClientKind(tool.kind)) {
      return `ptc-emulator: the stand-in wanted to call '${id}' directly; the emulator runs ${tool.kind} tools only for programs (docs/DEVIATIONS.md).`;
    }
    if (tool.kind === 'custom' && call.arguments !== undefined) {
      return `ptc-emulator: the stand-in gave arguments to the custom tool '${id}', which takes one string of input: give it input instead.`;
    }
    if (tool.kind !== 'custom' && call.input !== undefined) {
      return `ptc-emulator: the stand-in gave input to the ${tool.kind} tool '${id}', which takes an object of arguments: give it arguments instead.`;
    }
    const builtIn = tool.kind === 'shell' ? SHELL_PROGRAM_TOOL : tool.kind === 'apply_patch' ? APPLY_PATCH_PROGRAM_TOOL : undefined;
    const violation = builtIn?.parameters && (await checkAgainstSchema(builtIn.parameters, call.arguments ?? {}, 'arguments', bounds.compileTimeoutMs));
    if (violation) return `ptc-emulator: the stand-in's call of ${id} is not one the client can run: ${violation}.`;
    // A model keeps to a function's strict parameters: a scenario's arguments must too.
    const { definition } = tool;
    if (definition.type === 'function' && definition.parameters != null && definition.strict !== false) {
      let strictViolation: string | undefined;
      try {
        strictViolation = await checkAgainstSchema(definition.parameters, call.arguments ?? {}, 'arguments', bounds.compileTimeoutMs);
      } catch (error) {
        if (!(error instanceof ToolSchemaError)) throw error;
        return `ptc-emulator: the stand-in cannot call ${id}: its parameters are not a schema ajv can compile (${error.message}).`;
      }
      if (strictViolation) return `ptc-emulator: the stand-in's arguments for ${id} do not match its strict parameters: ${strictViolation}.`;
    }
  }
  return undefined;
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
