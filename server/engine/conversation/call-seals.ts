import { callIdMatches, canonicalJson, sealCallId, sealedBatchEnd, sha256Hex, type CallIdentity, type SealingKeys } from '../../../runtime/index.ts';

/**
 * The ids that seal a program's calls (see sealCallId): what identifies a call is built here
 * once, for the calls the emulator emits (sealed with the newest key) and for the calls a
 * client resends (checked with every key), so that sealing and checking cannot drift apart.
 */

/**
 * What a call that the emulator answers gives the program: an output, or an error its promise
 * rejects with. `detail` is what the item says of the error besides its message (an mcp_call's
 * structured error): sealed with it, so that a resent item cannot change it either.
 */
export type CallAnswer =
  | { readonly output: string; readonly error?: undefined }
  | { readonly output?: undefined; readonly error: string; readonly detail?: unknown };

/** What an item's id seals of the answer it carries (CallIdentity.answer). */
export function answerDigest(answer: CallAnswer): string {
  if (answer.error === undefined) return sha256Hex(canonicalJson({ output: answer.output }));
  // Without detail, as items sealed before errors were structured were.
  return sha256Hex(canonicalJson(answer.detail === undefined ? { error: answer.error } : { error: answer.error, detail: answer.detail }));
}

/** A program's call as its id seals it. */
export interface SealedCall {
  readonly programCallId: string;
  readonly seq: number;
  /** The tool's id: `name`, `namespace.name`, `shell`. */
  readonly tool: string;
  /** A call's JSON arguments, or with `text`, a custom tool call's input as it is. */
  readonly input: string;
  readonly text?: boolean;
  /** The answer its item carries, for the items that carry one (an mcp_call, a code_interpreter_call, a hosted shell's output). */
  readonly answer?: CallAnswer;
  /** The last seq of its batch, for the ids that say which batch they belong to (an MCP approval request). */
  readonly batchEnd?: number;
}

function identityOf(call: SealedCall): CallIdentity {
  return {
    programCallId: call.programCallId,
    seq: call.seq,
    tool: call.tool,
    argumentsJson: call.input,
    ...(call.text ? { text: true } : {}),
    ...(call.answer === undefined ? {} : { answer: answerDigest(call.answer) }),
    ...(call.batchEnd === undefined ? {} : { batchEnd: call.batchEnd }),
  };
}

/** The id of a call the emulator makes now: `prefix_` (its kind's sealed prefix) and a MAC under the newest key. */
export function sealCall(keys: SealingKeys, call: SealedCall, prefix: string): string {
  return sealCallId(keys[0], identityOf(call), prefix);
}

/** Whether a resent id is the one some key seals for this call. */
export function sealMatches(id: string, keys: SealingKeys, call: SealedCall, prefix: string): boolean {
  return callIdMatches(id, identityOf(call), keys, prefix);
}

/** The batch end, of those that can be, that the resent id of this call seals; undefined when none. */
export function sealedBatchEndOf(
  id: string,
  keys: SealingKeys,
  call: Omit<SealedCall, 'batchEnd'>,
  prefix: string,
  ends: readonly number[],
): number | undefined {
  return sealedBatchEnd(id, identityOf(call), keys, prefix, ends);
}
