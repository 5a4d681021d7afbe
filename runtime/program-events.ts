import { createHash, type Hash } from 'node:crypto';
import type { ProgramErrorCode } from '../schemas/error-codes.ts';

/** A call the program made that the host must answer: `seq` is its creation order. */
export interface ToolCallRequest {
  readonly seq: number;
  readonly tool: string;
  readonly argumentsJson: string;
}

/** A call an earlier run of the program made, with the output it got: what a replay is fed. */
export interface RecordedCall {
  readonly tool: string;
  readonly argumentsJson: string;
  readonly output: string;
  /** Set when the call failed (an MCP tool's error, a denied approval): the program's call rejects with an Error of this message, and `output` is ignored. */
  readonly error?: string;
}

/** The answer to one call, delivered back into the program. */
export interface ToolCallOutput {
  readonly seq: number;
  readonly output: string;
  /** As RecordedCall.error. */
  readonly error?: string;
}

/** What a call's answer contributes to a program's received-output digest: an output and an error never look alike. */
export function answerDigestPart(answer: { readonly output: string; readonly error?: string | undefined }): string {
  return answer.error === undefined ? `o${answer.output.length}:${answer.output}` : `e${answer.error.length}:${answer.error}`;
}

export interface ProgramStats {
  /** CPU the program's isolate used so far, in milliseconds. */
  readonly cpuTimeMs: number;
  /** Execution steps so far: the start and each resume. */
  readonly steps: number;
  /** Tool calls the program has made so far. */
  readonly calls: number;
}

export interface ProgramFailure {
  readonly code: ProgramErrorCode;
  readonly message: string;
  /** For `runtime_error`: the host-side fault, for logs only; never sent to clients. */
  readonly cause?: unknown;
}

/** What one execution step ended with. */
export type ProgramEvent =
  | { readonly type: 'paused'; readonly calls: readonly ToolCallRequest[]; readonly stats: ProgramStats }
  | { readonly type: 'completed'; readonly result: string; readonly stats: ProgramStats }
  | { readonly type: 'incomplete'; readonly error: ProgramFailure; readonly stats: ProgramStats };

/** The JSON `program_output.result` of an incomplete program. */
export function failureResult(error: ProgramFailure): string {
  return JSON.stringify({ error: { code: error.code, message: error.message } });
}

/**
 * The digest of a program's received answers, in order (what a warm resume checks the earlier
 * answers of a resume against): the same for the same answers, different for any other.
 */
export function answersDigest(answers: readonly { readonly output: string; readonly error?: string | undefined }[]): string {
  return hashOutputs(createHash('sha256'), answers).digest('base64');
}

/** Adds answers, length-prefixed so that no two sequences hash alike, to a running digest. */
export function hashOutputs(hash: Hash, answers: readonly { readonly output: string; readonly error?: string | undefined }[]): Hash {
  // One update of the joined text: a thousand small updates cost more than the hashing.
  return hash.update(answers.map(answerDigestPart).join(''), 'utf8');
}
