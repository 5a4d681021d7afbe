import type {
  Caller,
  ContentPart,
  ConversationItem,
  McpApprovalRequestItem,
  McpApprovalResponseItem,
  McpCallItem,
  McpListToolsItem,
  ProgramItem,
  ProgramOutputItem,
} from '../../../schemas/items.ts';
import { ApiError } from '../../platform/api-error.ts';
import type { ClientChecks } from '../../platform/config.ts';
import {
  contentText,
  describeCall,
  isServerCall,
  isToolCall,
  isToolOutput,
  outputForProgram,
  outputTypeOf,
  type ProgramCallItem,
  type ServerCallItem,
  type ToolCallItem,
  type ToolOutputItem,
} from './call-items.ts';
import type { LoadedTool } from './tool-set.ts';
import { MCP_APPROVAL, TOOL_KINDS } from './tool-kinds.ts';

/** A program in the conversation, with the calls it made and the outputs the client sent. */
export interface ProgramThread {
  readonly program: ProgramItem;
  readonly index: number;
  /** Every call it made, in order: calls the client answers and calls the emulator answered. */
  readonly calls: ProgramCallItem[];
  /** The client's output items, by call_id (a hosted shell's output too: its id seals what it carries). */
  readonly outputs: Map<string, ToolOutputItem>;
  /** The mcp_call that carried out an approved request, by the request's id. */
  readonly approved: Map<string, McpCallItem & { id: string }>;
  closedBy: ProgramOutputItem | undefined;
}

export interface DirectCall {
  readonly call: ToolCallItem;
  /** Where the call is in the conversation. */
  readonly index: number;
  output: string | undefined;
}

/** What the stand-in model should react to, read from the end of the conversation. */
export type ConversationTail =
  | { readonly kind: 'user_turn' }
  /** The last message is the assistant's and nothing new follows it. */
  | { readonly kind: 'answered' }
  | { readonly kind: 'after_program'; readonly output: ProgramOutputItem; readonly code: string }
  | { readonly kind: 'after_calls'; readonly calls: readonly DirectCall[] }
  /** A tool search loaded tools since the last message: the model goes on with them. */
  | { readonly kind: 'after_search' };

export interface ConversationState {
  readonly programs: readonly ProgramThread[];
  /** The user's answers to MCP approval requests, by the request's id. */
  readonly approvals: ReadonlyMap<string, McpApprovalResponseItem>;
  /** The latest tool listing of each MCP server, by server_label. */
  readonly mcpListings: ReadonlyMap<string, McpListToolsItem>;
  /** Tool definitions tool searches loaded into the conversation, in order, each with where it is. */
  readonly loadedTools: readonly LoadedTool[];
  readonly directCalls: readonly DirectCall[];
  readonly lastUserText: string;
  readonly userTurns: number;
  readonly tail: ConversationTail;
  /** Violations a lenient check let through, for the log. */
  readonly tolerated: readonly string[];
}

/**
 * The `param` naming an item of the conversation: `input[i]` when it is in this request's input
 * (which starts at `inputStart`), `previous_response_id` when it came from a stored response.
 */
/** Where the items before a request's own input came from: the parameter that brought them. */
export type StoredParam = 'previous_response_id' | 'conversation';

export function locateItem(index: number, inputStart: number, storedParam: StoredParam = 'previous_response_id'): string {
  if (index < 0) return 'input';
  return index < inputStart ? storedParam : `input[${index - inputStart}]`;
}

function messageText(content: string | readonly ContentPart[]): string {
  return typeof content === 'string' ? content : contentText(content.filter((part) => part.type === 'input_text' || part.type === 'output_text'));
}

/** How messages show a caller. */
export function callerLabel(caller: Caller | null | undefined): string {
  if (!caller) return 'no caller';
  return caller.type === 'program' ? `{type: "program", caller_id: "${caller.caller_id}"}` : '{type: "direct"}';
}

/** The same caller: the same program, or both not a program's (`{type: "direct"}`, or none). */
function sameCaller(a: Caller | null | undefined, b: Caller | null | undefined): boolean {
  const programOf = (caller: Caller | null | undefined) => (caller?.type === 'program' ? caller.caller_id : undefined);
  return programOf(a) === programOf(b);
}

/**
 * Reads the conversation a request continues (stored history plus its input) the way the
 * hosted service must: every call answered, every output answering a call, `caller` copied,
 * program items present and in order. In `strict` mode (the default) each mistake is a 400
 * naming it; `lenient` lets through what can be resolved unambiguously and records it.
 */
export function readConversation(
  items: readonly ConversationItem[],
  mode: ClientChecks,
  inputStart = 0,
  storedParam: StoredParam = 'previous_response_id',
): ConversationState {
  return new ConversationReader(items, mode, inputStart, storedParam).read();
}

/**
 * Reading a conversation, in named steps over one explicit state: each item read in order into
 * the programs, calls, outputs, approvals, listings and searches it adds to (#readItem and the
 * steps it dispatches to), then every call checked for its answer (#requireAnswers), then the
 * state as the turn reads it, its tail included (#state).
 */
class ConversationReader {
  readonly #items: readonly ConversationItem[];
  readonly #mode: ClientChecks;
  readonly #inputStart: number;
  readonly #storedParam: StoredParam;
  /** Where items not seen yet turn up later (built on first use: only mistakes ask). */
  readonly #later: ReturnType<typeof laterItems>;

  readonly #programs = new Map<string, ProgramThread>();
  readonly #calls = new Map<string, { call: ToolCallItem; index: number }>();
  readonly #directCalls: DirectCall[] = [];
  readonly #directByCall = new Map<ToolCallItem, DirectCall>();
  readonly #approvals = new Map<string, McpApprovalResponseItem>();
  readonly #mcpListings = new Map<string, McpListToolsItem>();
  readonly #loadedTools: LoadedTool[] = [];
  /** Tool searches with a call_id, by it: whether their tool_search_output has come, and where the call is. */
  readonly #searches = new Map<string, { index: number; execution: string | undefined; answered: boolean }>();
  /** The mcp_approval_request items seen so far, by id. */
  readonly #approvalRequests = new Map<string, McpApprovalRequestItem>();
  #lastUserText = '';
  #userTurns = 0;
  /** Mistakes a lenient check let through, noted up to MAX_TOLERATED_NOTES, then counted. */
  readonly #tolerated: string[] = [];
  #untold = 0;

  constructor(items: readonly ConversationItem[], mode: ClientChecks, inputStart: number, storedParam: StoredParam) {
    this.#items = items;
    this.#mode = mode;
    this.#inputStart = inputStart;
    this.#storedParam = storedParam;
    this.#later = laterItems(items);
  }

  read(): ConversationState {
    for (const [index, item] of this.#items.entries()) this.#readItem(item, index);
    this.#requireAnswers();
    return this.#state();
  }

  /** Where an item is, for messages and `param`: `input[i]` of this request, or a stored item. */
  #locate(index: number, field?: string): { where: string; param: string } {
    if (index < this.#inputStart)
      return { where: `stored item ${this.#items[index]?.id ?? index}`, param: locateItem(index, this.#inputStart, this.#storedParam) };
    const where = locateItem(index, this.#inputStart, this.#storedParam);
    return { where, param: field === undefined ? where : `${where}.${field}` };
  }

  /** When an item of the stored conversation comes again in the request's input: what the client did, and what to send instead. */
  #resentHint(first: number, again: number): string {
    return first < this.#inputStart && again >= this.#inputStart
      ? ` The stored conversation (${this.#storedParam}) holds it already: send only the items that are new since its last response.`
      : '';
  }

  /**
   * What to send when an item the conversation needs is missing: with nothing stored before the
   * input, every output item (or a reference to it); continuing a stored conversation, the
   * stored items are there already, so the item must come from another response.
   */
  #resendHint(): string {
    return this.#inputStart === 0
      ? 'Resend every output item of the response that made it, in order, the program item included (as the item, or as an item_reference when that response was stored), or continue from that response with previous_response_id.'
      : `The conversation ${this.#storedParam === 'conversation' ? 'named by conversation' : 'that previous_response_id continues'} does not hold it: continue from the response that made the call, or resend its program item.`;
  }

  /** A mistake: thrown, unless checks are lenient and it can be resolved, then noted. */
  #violation(error: ApiError, recoverable: boolean): void {
    if (this.#mode !== 'lenient' || !recoverable) throw error;
    // Each tolerated mistake is noted up to a bound; past it, only counted (a flood of them is
    // one request's doing, and the log and the journal keep a few).
    if (this.#tolerated.length < MAX_TOLERATED_NOTES) this.#tolerated.push(`${error.code}: ${error.message}`);
    else this.#untold += 1;
  }

  #readItem(item: ConversationItem, index: number): void {
    const { where, param } = this.#locate(index);
    switch (item.type) {
      case 'message':
        if (item.role === 'user') {
          this.#lastUserText = messageText(item.content);
          this.#userTurns += 1;
        }
        break;
      case 'program': {
        if (this.#programs.has(item.call_id)) {
          throw new ApiError(
            'program_item_altered',
            `${where}: program ${item.call_id} appears twice in the conversation.${this.#resentHint(this.#programs.get(item.call_id)!.index, index)}`,
            param,
          );
        }
        this.#programs.set(item.call_id, { program: item, index, calls: [], outputs: new Map(), approved: new Map(), closedBy: undefined });
        break;
      }
      case 'program_output': {
        const thread = this.#programs.get(item.call_id);
        if (!thread && this.#later.program(index, item.call_id)) {
          throw new ApiError(
            'items_out_of_order',
            `${where}: program_output for ${item.call_id} comes before its program item. Keep items in the order the responses returned them.`,
            param,
          );
        }
        if (!thread) {
          throw new ApiError(
            'program_item_missing',
            `${where}: program_output for ${item.call_id}, but the conversation has no program item with that call_id. Resend the program item from the response that created it.`,
            this.#locate(index, 'call_id').param,
          );
        }
        if (thread.closedBy) {
          // A program ends once: lenient checks keep the first program_output, as for any duplicate output.
          this.#violation(
            new ApiError('tool_output_duplicate', `${where}: a second program_output for program ${item.call_id}; a program ends once.`, param),
            true,
          );
          break;
        }
        thread.closedBy = item;
        break;
      }
      case MCP_APPROVAL.response.type: {
        if (this.#approvals.has(item.approval_request_id)) {
          // Lenient checks keep the first answer, as for any duplicate output.
          this.#violation(
            new ApiError(
              'tool_output_duplicate',
              `${where}: a second mcp_approval_response for ${item.approval_request_id}; each request takes exactly one.`,
              param,
            ),
            true,
          );
          break;
        }
        const request = this.#approvalRequests.get(item.approval_request_id);
        if (!request) {
          if (this.#later.approvalRequest(index, item.approval_request_id)) {
            throw new ApiError(
              'items_out_of_order',
              `${where}: the mcp_approval_response for ${item.approval_request_id} comes before its mcp_approval_request. Keep items in the order the responses returned them.`,
              param,
            );
          }
          this.#violation(
            new ApiError(
              'tool_output_unknown_call',
              `${where}: an mcp_approval_response for ${item.approval_request_id}, but the conversation has no mcp_approval_request with that id.`,
              this.#locate(index, 'approval_request_id').param,
            ),
            true,
          );
          break;
        }
        // `caller` is optional on the answer (the SDK's type has none); copied, it must be the request's.
        if (item.caller != null && !sameCaller(item.caller, request.caller)) {
          this.#violation(
            new ApiError(
              'caller_mismatch',
              `${where}: the mcp_approval_response for ${item.approval_request_id} has caller ${callerLabel(item.caller)}, but its mcp_approval_request has ${request.caller ? `caller ${callerLabel(request.caller)}` : 'no caller'}. Copy caller unchanged, or leave it out.`,
              this.#locate(index, 'caller').param,
            ),
            true,
          );
        }
        this.#approvals.set(item.approval_request_id, item);
        break;
      }
      case 'mcp_list_tools':
        this.#mcpListings.set(item.server_label, item);
        break;
      case 'tool_search_call':
        if (item.call_id) {
          if (this.#searches.has(item.call_id))
            throw new ApiError('program_item_altered', `${where}: tool_search_call ${item.call_id} appears twice in the conversation.`, param);
          this.#searches.set(item.call_id, { index, execution: item.execution, answered: false });
        }
        break;
      case 'tool_search_output':
        // A search's output answers its call (one run by the emulator may have no call_id to match).
        if (item.call_id && !this.#readSearchOutput(item.call_id, index)) break;
        this.#loadedTools.push(
          ...item.tools.map((tool, inner) => ({
            tool,
            param: index < this.#inputStart ? 'previous_response_id' : `${this.#locate(index).param}.tools[${inner}]`,
          })),
        );
        break;
      default:
        if (isToolCall(item)) this.#readCall(item, index);
        else if (isToolOutput(item)) this.#readOutput(item, index);
        else if (isServerCall(item)) this.#readServerCall(item, index);
        break;
    }
  }

  /** Whether a tool_search_output with this call_id answers a search, and so loads its tools. */
  #readSearchOutput(callId: string, index: number): boolean {
    const { where, param } = this.#locate(index);
    const search = this.#searches.get(callId);
    if (!search) {
      if (this.#later.toolSearchCall(index, callId)) {
        throw new ApiError(
          'items_out_of_order',
          `${where}: the tool_search_output for ${callId} comes before its tool_search_call. Keep items in the order the responses returned them.`,
          param,
        );
      }
      this.#violation(
        new ApiError(
          'tool_output_unknown_call',
          `${where}: a tool_search_output for ${callId}, but the conversation has no tool_search_call with that call_id.`,
          this.#locate(index, 'call_id').param,
        ),
        true,
      );
      // Tolerated (lenient checks): its tools load all the same.
      return true;
    }
    if (search.answered) {
      this.#violation(
        new ApiError('tool_output_duplicate', `${where}: a second tool_search_output for ${callId}; each search takes exactly one.`, param),
        true,
      );
      return false;
    }
    search.answered = true;
    return true;
  }

  /** A call the emulator answered: one of a program's calls (a direct one needs nothing from the client). */
  #readServerCall(item: ServerCallItem, index: number): void {
    if (item.type === MCP_APPROVAL.request.type) this.#approvalRequests.set(item.id, item);
    if (item.caller?.type !== 'program') return;
    const thread = this.#programThreadOf(item, item.caller.caller_id, index);
    if (item.type === TOOL_KINDS.mcp.call.type && item.approval_request_id) thread.approved.set(item.approval_request_id, item);
    else thread.calls.push(item);
  }

  #readCall(item: ToolCallItem, index: number): void {
    const { where, param } = this.#locate(index);
    const what = describeCall(item);
    if (this.#calls.has(item.call_id)) {
      throw new ApiError(
        'program_item_altered',
        `${where}: ${what} appears twice in the conversation.${this.#resentHint(this.#calls.get(item.call_id)!.index, index)}`,
        param,
      );
    }
    this.#calls.set(item.call_id, { call: item, index });
    if (item.caller?.type !== 'program') {
      const direct: DirectCall = { call: item, index, output: undefined };
      this.#directCalls.push(direct);
      this.#directByCall.set(item, direct);
      return;
    }
    this.#programThreadOf(item, item.caller.caller_id, index).calls.push(item);
  }

  /** The program that made a call, which must come earlier in the conversation and still be running. */
  #programThreadOf(item: ProgramCallItem, callerId: string, index: number): ProgramThread {
    const { where, param } = this.#locate(index);
    const what = describeCall(item);
    const thread = this.#programs.get(callerId);
    if (!thread && this.#later.program(index, callerId)) {
      throw new ApiError(
        'items_out_of_order',
        `${where}: ${what} comes before the program item ${callerId} that made it. Keep items in the order the responses returned them.`,
        param,
      );
    }
    if (!thread) {
      throw new ApiError(
        'program_item_missing',
        `${where}: ${what} was made by program ${callerId}, but that program item is missing from the conversation. ${this.#resendHint()}`,
        this.#locate(index, 'caller.caller_id').param,
      );
    }
    if (thread.closedBy) {
      this.#violation(
        new ApiError('items_out_of_order', `${where}: ${what} comes after the program_output of its program ${thread.program.call_id}.`, param),
        true,
      );
    }
    return thread;
  }

  #readOutput(item: ToolOutputItem, index: number): void {
    const { where, param } = this.#locate(index);
    // An output without call_id was bound to its call by name before (output-binding.ts).
    const callId = item.call_id;
    if (!callId) throw new ApiError('missing_required_parameter', `${where}: a ${item.type} without call_id.`, this.#locate(index, 'call_id').param);
    const found = this.#calls.get(callId);
    if (!found) {
      const laterCall = this.#later.toolCall(index, callId);
      if (laterCall) {
        throw new ApiError(
          'items_out_of_order',
          `${where}: the output for ${callId} comes before its ${laterCall.type}. Keep items in the order the responses returned them.`,
          param,
        );
      }
      this.#violation(
        new ApiError(
          'tool_output_unknown_call',
          `No tool call found for function call output with call_id ${callId} (${where}).`,
          this.#locate(index, 'call_id').param,
        ),
        true,
      );
      return;
    }
    const { call } = found;
    if (outputTypeOf(call) !== item.type) {
      throw new ApiError(
        'tool_output_unknown_call',
        `${where}: a ${item.type} answers ${describeCall(call)}, which is a ${call.type}: answer it with a ${outputTypeOf(call)}.`,
        this.#locate(index, 'type').param,
      );
    }
    const thread = call.caller?.type === 'program' ? this.#programs.get(call.caller.caller_id) : undefined;
    const direct = thread ? undefined : this.#directByCall.get(call);
    const alreadyAnswered = thread ? thread.outputs.has(call.call_id) : direct?.output !== undefined;
    if (alreadyAnswered) {
      this.#violation(
        new ApiError('tool_output_duplicate', `${where}: a second ${item.type} for call_id ${call.call_id}; each call takes exactly one output.`, param),
        true,
      );
      return;
    }
    if (call.caller?.type === 'program') {
      if (!item.caller) {
        this.#violation(
          new ApiError(
            'caller_missing',
            `${where}: the ${item.type} for ${call.call_id} must copy caller ${callerLabel(call.caller)} from its ${describeCall(call).replace(/ \S+$/, '')}, so the output reaches the program that made it.`,
            this.#locate(index, 'caller').param,
          ),
          true,
        );
      } else if (item.caller.type !== 'program' || item.caller.caller_id !== call.caller.caller_id) {
        this.#violation(
          new ApiError(
            'caller_mismatch',
            `${where}: the ${item.type} for ${call.call_id} has caller ${callerLabel(item.caller)}, but its call has caller ${callerLabel(call.caller)}. Copy caller unchanged.`,
            this.#locate(index, 'caller').param,
          ),
          true,
        );
      }
    } else if (item.caller?.type === 'program') {
      this.#violation(
        new ApiError(
          'caller_mismatch',
          `${where}: the ${item.type} for ${call.call_id} has caller ${callerLabel(item.caller)}, but its call was made directly by the model.`,
          this.#locate(index, 'caller').param,
        ),
        true,
      );
    }
    if (thread) thread.outputs.set(call.call_id, item);
    else if (direct) direct.output = outputForProgram(item);
  }

  /** Every call of a program still running, and every direct call, needs its output; every approval request of a running program, the user's answer. */
  #requireAnswers(): void {
    for (const thread of this.#programs.values()) {
      if (thread.closedBy) continue;
      for (const call of thread.calls) {
        if ('call_id' in call && !thread.outputs.has(call.call_id)) throw this.#missingOutput(call, `No tool output found for ${describeCall(call)}.`);
        if (call.type === MCP_APPROVAL.request.type && !thread.approved.has(call.id) && !this.#approvals.has(call.id)) {
          throw this.#missingOutput(
            call,
            `No mcp_approval_response found for mcp_approval_request ${call.id}: approve or deny it to resume the program that made it.`,
          );
        }
      }
    }
    for (const [callId, search] of this.#searches) {
      if (search.execution === 'client' && !search.answered) {
        throw new ApiError(
          'tool_output_missing',
          `No tool_search_output found for the client-executed tool_search_call ${callId}.`,
          this.#locate(search.index).param,
        );
      }
    }
    const unansweredDirect = this.#directCalls.find((direct) => direct.output === undefined);
    if (unansweredDirect) throw this.#missingOutput(unansweredDirect.call, `No tool output found for ${describeCall(unansweredDirect.call)}.`);
  }

  #missingOutput(call: ProgramCallItem, message: string): ApiError {
    const index = this.#items.indexOf(call as ConversationItem);
    return new ApiError('tool_output_missing', message, index >= 0 ? this.#locate(index).param : 'input');
  }

  #state(): ConversationState {
    return {
      programs: [...this.#programs.values()],
      approvals: this.#approvals,
      mcpListings: this.#mcpListings,
      loadedTools: this.#loadedTools,
      directCalls: this.#directCalls,
      lastUserText: this.#lastUserText,
      userTurns: this.#userTurns,
      tail: readTail(this.#items, this.#programs, this.#directCalls),
      tolerated: this.#untold === 0 ? this.#tolerated : [...this.#tolerated, `… and ${this.#untold} more mistakes let through`],
    };
  }
}

/** Mistakes a lenient check notes one by one, for the log and the journal; the rest are counted. */
export const MAX_TOLERATED_NOTES = 20;

/**
 * Where an item that has not been seen yet turns up later in the conversation: the first item of
 * each kind by its id, indexed in one pass (built on first use, since only mistakes ask), so that
 * telling "out of order" from "unknown" costs a lookup rather than a scan per item.
 */
function laterItems(items: readonly ConversationItem[]) {
  let first:
    | { programs: Map<string, number>; toolCalls: Map<string, number>; approvalRequests: Map<string, number>; toolSearchCalls: Map<string, number> }
    | undefined;
  const index = () => {
    if (first) return first;
    first = { programs: new Map(), toolCalls: new Map(), approvalRequests: new Map(), toolSearchCalls: new Map() };
    const note = (map: Map<string, number>, key: string, at: number): void => {
      if (!map.has(key)) map.set(key, at);
    };
    for (const [at, item] of items.entries()) {
      if (item.type === 'program') note(first.programs, item.call_id, at);
      else if (item.type === MCP_APPROVAL.request.type) note(first.approvalRequests, item.id, at);
      else if (item.type === 'tool_search_call' && item.call_id) note(first.toolSearchCalls, item.call_id, at);
      else if (isToolCall(item)) note(first.toolCalls, item.call_id, at);
    }
    return first;
  };
  // An item not seen by `at` whose first occurrence exists comes after `at`.
  const after = (map: Map<string, number>, at: number, key: string): number | undefined => {
    const found = map.get(key);
    return found !== undefined && found > at ? found : undefined;
  };
  return {
    program: (at: number, callId: string) => after(index().programs, at, callId) !== undefined,
    approvalRequest: (at: number, id: string) => after(index().approvalRequests, at, id) !== undefined,
    toolSearchCall: (at: number, callId: string) => after(index().toolSearchCalls, at, callId) !== undefined,
    toolCall: (at: number, callId: string): ToolCallItem | undefined => {
      const found = after(index().toolCalls, at, callId);
      return found === undefined ? undefined : (items[found] as ToolCallItem);
    },
  };
}

/** What the model has to react to: the newest program_output or direct call outputs after the last message. */
function readTail(items: readonly ConversationItem[], programs: ReadonlyMap<string, ProgramThread>, directCalls: readonly DirectCall[]): ConversationTail {
  const lastMessage = items.findLastIndex((item) => item.type === 'message');
  for (let index = items.length - 1; index > lastMessage; index--) {
    const item = items[index]!;
    if (item.type === 'program_output') {
      return { kind: 'after_program', output: item, code: programs.get(item.call_id)?.program.code ?? '' };
    }
    if (isToolOutput(item) && item.caller?.type !== 'program') {
      const answered = directCalls.filter((direct) => direct.index > lastMessage);
      return { kind: 'after_calls', calls: answered };
    }
    if (item.type === 'tool_search_output') return { kind: 'after_search' };
  }
  const last = items[lastMessage];
  return last?.type === 'message' && last.role === 'assistant' ? { kind: 'answered' } : { kind: 'user_turn' };
}
