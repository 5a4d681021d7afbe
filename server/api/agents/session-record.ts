import type { Caller } from '../../../schemas/items.ts';
import type { InputContent, SessionObject, TokenUsage, TurnObject } from '../../../schemas/agents.ts';
import type { Usage } from '../../../schemas/usage.ts';
import { TOOL_KINDS } from '../../engine/conversation/tool-kinds.ts';
import { FIXED_LIMITS } from '../../../schemas/fixed-limits.ts';

/** A call the active turn waits on: what the client sees, and what the program's output needs. */
export interface PendingCall {
  readonly call_id: string;
  readonly name: string;
  readonly arguments: string;
  readonly turn_id: string;
  /** The session item that shows the call, and its place in the turn's output. */
  readonly item_id: string;
  readonly output_index: number;
  /** The Responses item's `caller` (a program's call), copied onto its output. */
  readonly caller?: Caller | null;
}

/** An answered call's output, as the next Responses request of the turn sends it. */
export interface AnsweredCall {
  readonly type: typeof TOOL_KINDS.function.output.type;
  readonly call_id: string;
  readonly output: string | InputContent[];
  readonly caller?: Caller | null;
}

/** A user message steering the active turn, as the turn's next request carries it (with its session item's id). */
export interface SteeringInput {
  readonly type: 'message';
  readonly id: string;
  readonly role: 'user';
  readonly content: InputContent[];
}

/**
 * Everything the emulator keeps of an agent session, as one record of the store: the session
 * object, its turns, and where its conversation stands in the Responses engine
 * (`last_response_id`, the calls its active turn waits on, the outputs gathered so far).
 */
export interface SessionRecord {
  session: SessionObject;
  turns: TurnObject[];
  /** The stored response the next one continues (`previous_response_id`), null before the first. */
  last_response_id: string | null;
  /**
   * The last response of the last turn that completed: a turn after a cancelled or failed one
   * continues from it, since the calls its response left unanswered can never be answered now.
   */
  settled_response_id: string | null;
  active_turn_id: string | null;
  /**
   * Who makes the active turn's response while the session is `in_progress`: a process, and
   * until when its lease holds (renewed each step). Another process takes a turn whose lease ran
   * out for lost, and fails it; so does the same process for one it no longer runs.
   */
  runner: { instance: string; until: number } | null;
  pending: PendingCall[];
  answered: AnsweredCall[];
  /**
   * User messages posted into the active turn (steering it) that its next step has not read yet,
   * as that step's request carries them, oldest first. Absent in records of earlier versions.
   */
  steering?: SteeringInput[];
  /** The next `output_index` of the active turn. */
  next_output_index: number;
  /** The `Idempotency-Key`s of the latest event posts applied, newest last (MAX_IDEMPOTENCY_KEYS). */
  idempotency_keys: string[];
}

/**
 * Event posts per session whose `Idempotency-Key` is remembered: the SDK resends a post with
 * the same key when an answer is lost (a 5xx, a timeout), and the events must not apply twice.
 */
export const MAX_IDEMPOTENCY_KEYS = FIXED_LIMITS.agentIdempotencyKeys.value;

/** The empty usage a turn or a session starts with. */
export function noUsage(): TokenUsage {
  return { input_tokens: 0, input_tokens_details: { cached_tokens: 0 }, output_tokens: 0, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 0 };
}

/** `total` plus a response's usage, in the Agents API's shape. */
export function addUsage(total: TokenUsage | null, usage: Usage | undefined): TokenUsage {
  const sum = total ?? noUsage();
  if (!usage) return sum;
  return {
    input_tokens: sum.input_tokens + usage.input_tokens,
    input_tokens_details: { cached_tokens: sum.input_tokens_details.cached_tokens + usage.input_tokens_details.cached_tokens },
    output_tokens: sum.output_tokens + usage.output_tokens,
    output_tokens_details: { reasoning_tokens: sum.output_tokens_details.reasoning_tokens + usage.output_tokens_details.reasoning_tokens },
    total_tokens: sum.total_tokens + usage.total_tokens,
  };
}

export function activeTurn(record: SessionRecord): TurnObject | undefined {
  return record.active_turn_id === null ? undefined : record.turns.find((turn) => turn.id === record.active_turn_id);
}

/** The session object as it is now: its required actions are the calls its turn waits on. */
export function sessionNow(record: SessionRecord): SessionObject {
  record.session.required_actions = record.pending.map((call) => ({
    type: TOOL_KINDS.function.call.type,
    call_id: call.call_id,
    name: call.name,
    arguments: call.arguments,
    turn_id: call.turn_id,
  }));
  return structuredClone(record.session);
}
