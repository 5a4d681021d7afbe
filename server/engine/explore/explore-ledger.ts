import type { ConversationItem, OutputItem } from '../../../schemas/items.ts';
import type { ResponseObject } from '../../../schemas/response.ts';
import { ApiError } from '../../platform/api-error.ts';
import type { ResponseRequest, TurnObserver } from '../conversation/respond.ts';
import { waitsOnClient } from '../conversation/call-items.ts';
import type { Explorer } from '../stand-ins/explorer/explorer-model.ts';
import { FIXED_LIMITS } from '../../../schemas/fixed-limits.ts';

/**
 * What became of each explored conversation, as the responses and refusals of its requests say
 * (a TurnObserver): its shape and seed, how its requests came (streamed or not, stored or not),
 * how its program ended, whether the final message was delivered, and the first client-loop
 * refusal of a request that continued it. A refusal is tied to a conversation by what the
 * request carries: a program's `call_id`, the `call_id` or `caller` of one of its calls, or a
 * `previous_response_id` of one of its responses. Kept in this process's memory, the newest
 * MAX_EXPLORED conversations.
 */

export const MAX_EXPLORED = FIXED_LIMITS.exploredConversations.value;

export interface ExploredConversation {
  /** The program's `call_id`. */
  readonly program: string;
  readonly shape: string;
  readonly seed: number;
  readonly startedAt: string;
  /** How its requests came: `stream`/`no stream`, `store`/`no store`. */
  readonly transports: Set<string>;
  requests: number;
  programStatus?: 'completed' | 'incomplete';
  /** The program error code when it ended incomplete. */
  programError?: string;
  /** The message after the program was delivered. */
  finalMessage: boolean;
  /** The first refusal of a request that continued it. */
  refused?: { readonly status: number; readonly code: string; readonly message: string; readonly param: string | null };
  /** What its last response left the client to do: the calls and approvals to answer, or the request for the message. */
  waitingOn: string[];
}

/** The outcome a conversation came to. */
export type ExploreOutcome = 'completed' | 'refused' | 'abandoned';

export function outcomeOf(conversation: ExploredConversation): ExploreOutcome {
  if (conversation.finalMessage) return 'completed';
  return conversation.refused ? 'refused' : 'abandoned';
}

function programResult(item: OutputItem | ConversationItem): { status: 'completed' | 'incomplete'; error?: string } | undefined {
  if (item.type !== 'program_output') return undefined;
  if (item.status === 'completed') return { status: 'completed' };
  try {
    const code = (JSON.parse(item.result) as { error?: { code?: unknown } }).error?.code;
    return { status: 'incomplete', ...(typeof code === 'string' ? { error: code } : {}) };
  } catch {
    return { status: 'incomplete' };
  }
}

/** An item the client was left to answer, as the report names it: `function_call get_inventory`. */
function describeWait(item: OutputItem): string {
  const named = item as { name?: unknown; namespace?: unknown; server_label?: unknown };
  const name =
    typeof named.name === 'string'
      ? `${typeof named.namespace === 'string' ? `${named.namespace}.` : typeof named.server_label === 'string' ? `${named.server_label}.` : ''}${named.name}`
      : '';
  return name === '' ? item.type : `${item.type} ${name}`;
}

/** The program a call item belongs to, when a program made it. */
function callerOf(item: OutputItem | ConversationItem): string | undefined {
  const caller = (item as { caller?: { type?: string; caller_id?: string } | null }).caller;
  return caller?.type === 'program' ? caller.caller_id : undefined;
}

/** The ids an item names that may tie it to a conversation: its call_id, its caller, the request it answers. */
function idsOf(item: unknown): string[] {
  if (item === null || typeof item !== 'object') return [];
  const fields = item as { call_id?: unknown; caller?: { caller_id?: unknown } | null; approval_request_id?: unknown; id?: unknown };
  return [fields.call_id, fields.caller?.caller_id, fields.approval_request_id, fields.id].filter((value): value is string => typeof value === 'string');
}

export class ExploreLedger implements TurnObserver {
  readonly #explorer: Pick<Explorer, 'explored'>;
  readonly #conversations = new Map<string, ExploredConversation>();
  /** Every id that leads to a conversation: its program's call_id, its calls' call_ids and ids, its responses' ids. */
  readonly #index = new Map<string, string>();
  readonly #indexed = new Map<string, string[]>();

  /** `explorer` says which programs it wrote: only those are explored conversations. */
  constructor(explorer: Pick<Explorer, 'explored'>) {
    this.#explorer = explorer;
  }

  finished(request: ResponseRequest, history: readonly ConversationItem[], response: ResponseObject): void {
    const output = response.output as OutputItem[];
    for (const item of output) {
      if (item.type !== 'program') continue;
      const explored = this.#explorer.explored(item.code);
      if (explored)
        this.#add({
          program: item.call_id,
          ...explored,
          startedAt: new Date().toISOString(),
          transports: new Set(),
          requests: 0,
          finalMessage: false,
          waitingOn: [],
        });
    }
    const touched = new Set<string>();
    for (const item of [...history, ...output]) {
      for (const id of [...idsOf(item), callerOf(item)]) {
        const program = id === undefined ? undefined : this.#index.get(id);
        if (program !== undefined) touched.add(program);
      }
    }
    for (const program of touched) {
      const conversation = this.#conversations.get(program)!;
      conversation.requests += 1;
      conversation.transports.add(request.body.stream ? 'stream' : 'no stream');
      conversation.transports.add(request.body.store === false ? 'no store' : 'store');
      this.#note(program, response.id);
      for (const item of output) {
        if (callerOf(item) === program) for (const id of idsOf(item)) this.#note(program, id);
      }
      conversation.waitingOn = output.filter((item) => waitsOnClient(item)).map(describeWait);
      const endedHere = output.find((item) => item.type === 'program_output' && item.call_id === program);
      const endedBefore = history.findLastIndex((item) => item.type === 'program_output' && item.call_id === program);
      const ended = endedHere ? programResult(endedHere) : endedBefore === -1 ? undefined : programResult(history[endedBefore]!);
      if (ended) {
        conversation.programStatus = ended.status;
        if (ended.error !== undefined) conversation.programError = ended.error;
        // Its message: in the response that ended it, or in the one that answered right after
        // its program_output (no user message since: a later turn's message is that turn's).
        const answersIt = endedHere !== undefined || !history.slice(endedBefore + 1).some((item) => item.type === 'message' && item.role === 'user');
        if (answersIt && output.some((item) => item.type === 'message')) conversation.finalMessage = true;
        else if (!conversation.finalMessage && conversation.waitingOn.length === 0)
          conversation.waitingOn = ['a request for the message after the program_output'];
      }
    }
  }

  refused(request: ResponseRequest, error: unknown): void {
    // A client's mistake: not a 429, nor an error a knob injected on purpose.
    if (!(error instanceof ApiError) || error.status < 400 || error.status >= 500 || error.status === 429 || error.code === 'simulated_error') return;
    const ids = [request.body.previous_response_id, ...request.newInput.flatMap(idsOf)].filter((id): id is string => typeof id === 'string');
    const programs = new Set(ids.map((id) => this.#index.get(id)).filter((program): program is string => program !== undefined));
    for (const program of programs) {
      const conversation = this.#conversations.get(program)!;
      conversation.requests += 1;
      if (!conversation.finalMessage && !conversation.refused)
        conversation.refused = { status: error.status, code: error.code, message: error.message, param: error.param };
    }
  }

  /** Every conversation explored, oldest first. */
  conversations(): ExploredConversation[] {
    return [...this.#conversations.values()];
  }

  clear(): number {
    const cleared = this.#conversations.size;
    this.#conversations.clear();
    this.#index.clear();
    this.#indexed.clear();
    return cleared;
  }

  #add(conversation: ExploredConversation): void {
    if (this.#conversations.size >= MAX_EXPLORED) {
      const [oldest] = this.#conversations.keys();
      this.#conversations.delete(oldest!);
      for (const id of this.#indexed.get(oldest!) ?? []) this.#index.delete(id);
      this.#indexed.delete(oldest!);
    }
    this.#conversations.set(conversation.program, conversation);
    this.#note(conversation.program, conversation.program);
  }

  #note(program: string, id: string): void {
    if (this.#index.get(id) === program) return;
    this.#index.set(id, program);
    const ids = this.#indexed.get(program) ?? [];
    ids.push(id);
    this.#indexed.set(program, ids);
  }
}
