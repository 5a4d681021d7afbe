import { isProgramErrorCode, type ProgramErrorCode } from '../schemas/error-codes.ts';

/**
 * The reply of each GuestOp of the program's context (runtime/guest-protocol.ts), and its check.
 *
 * Checked by hand rather than by a zod schema: one is parsed at every step of every program (a
 * program of 50 sequential calls has 51), right after its isolate was made or handed the step
 * back, with the host's caches cold, where zod's walk of the shape cost a light program several
 * per cent of its time in process (the peer bench's W1, in a loop of its `run` after 30 programs,
 * five rounds alternately: 0.512-0.533 ms a program with zod's discriminated union, 0.471-0.487
 * with this). The check is the same: exactly these keys, of these types, nothing else.
 */
export type GuestReply =
  // answers, start, deliver, warm: done.
  | { readonly state: 'done' }
  // report: the program awaits the calls it made since the last report (`inFlight` pending in all).
  | { readonly state: 'running'; readonly inFlight: number; readonly calls: readonly GuestCall[] }
  // report: the program ended.
  | { readonly state: 'settled'; readonly status: 'completed'; readonly result: string }
  | { readonly state: 'settled'; readonly status: 'failed'; readonly code: ProgramErrorCode; readonly message: string }
  // report: a replay stopped, undelivered, on a batch holding an answer the host withheld (too large).
  | { readonly state: 'withheld' }
  // report: a replay answered a recorded batch from the record; the program runs on.
  | { readonly state: 'replaying' }
  // report: a replay reached recorded calls not handed in yet, from call `from` on.
  | { readonly state: 'needs_answers'; readonly from: number }
  // report: delivering the next recorded batch would pass the resume limit.
  | { readonly state: 'resume_limit' }
  // Any op: it threw inside the prelude (or named no op the prelude knows).
  | { readonly state: 'fault' };

/** A call a `running` report names: its sequence number, its tool's id, its arguments as the program gave them. */
export interface GuestCall {
  readonly seq: number;
  readonly tool: string;
  readonly args: string;
}

/** The states whose reply holds `state` alone. */
const BARE_STATES: ReadonlySet<string> = new Set(['done', 'withheld', 'replaying', 'resume_limit', 'fault'] satisfies GuestReply['state'][]);

/** What JSON.parse gave, as an object with exactly `keys` own keys, or a TypeError naming what it is not. */
function objectOf(value: unknown, keys: number, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TypeError(`${what} is not an object`);
  // JSON.parse makes plain objects whose keys are all own and enumerable (`__proto__` included).
  if (Object.keys(value).length !== keys) throw new TypeError(`${what} has keys its shape does not have, or lacks some`);
  return value as Record<string, unknown>;
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function checkCall(value: unknown, index: number): GuestCall {
  const call = objectOf(value, 3, `call ${index}`);
  if (!isCount(call['seq']) || typeof call['tool'] !== 'string' || typeof call['args'] !== 'string') {
    throw new TypeError(`call ${index} is not a seq, a tool and its arguments as text`);
  }
  return call as unknown as GuestCall;
}

/** `value` (a reply as JSON.parse gave it) if it has a shape of GuestReply; a TypeError naming the first fault otherwise. */
export function checkGuestReply(value: unknown): GuestReply {
  const state = typeof value === 'object' && value !== null ? (value as { state?: unknown }).state : undefined;
  if (typeof state === 'string' && BARE_STATES.has(state)) {
    objectOf(value, 1, `a ${state} reply`);
    return value as GuestReply;
  }
  switch (state) {
    case 'running': {
      const reply = objectOf(value, 3, 'a running reply');
      if (!isCount(reply['inFlight'])) throw new TypeError('a running reply has no count of calls in flight');
      const calls = reply['calls'];
      if (!Array.isArray(calls)) throw new TypeError('a running reply has no calls');
      for (let i = 0; i < calls.length; i++) checkCall(calls[i], i);
      return reply as unknown as GuestReply;
    }
    case 'settled': {
      const status = (value as { status?: unknown }).status;
      if (status === 'completed') {
        const reply = objectOf(value, 3, 'a completed reply');
        if (typeof reply['result'] !== 'string') throw new TypeError('a completed reply has no result');
        return reply as unknown as GuestReply;
      }
      if (status === 'failed') {
        const reply = objectOf(value, 4, 'a failed reply');
        if (!isProgramErrorCode(reply['code'])) throw new TypeError('a failed reply has no code of a program error');
        if (typeof reply['message'] !== 'string') throw new TypeError('a failed reply has no message');
        return reply as unknown as GuestReply;
      }
      throw new TypeError('a settled reply is neither completed nor failed');
    }
    case 'needs_answers': {
      const reply = objectOf(value, 2, 'a needs_answers reply');
      if (!isCount(reply['from'])) throw new TypeError('a needs_answers reply names no call to start from');
      return reply as unknown as GuestReply;
    }
    default:
      throw new TypeError('a reply of no state the protocol has');
  }
}
