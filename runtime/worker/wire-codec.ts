import type { ProgramEvent, RecordedCall, ToolCallOutput, ToolCallRequest } from '../program-events.ts';
import type { RecordDigest } from '../record-digest.ts';
import type { HostMessage, WireEvent } from './protocol.ts';

/**
 * How a step's calls and answers cross the channel: side by side in arrays of strings, not an
 * object each. Structured clone writes a string as its bytes, but an object as a tag and a key
 * per field: a batch of 50 calls and 50 answers took 60 µs a round trip as objects (JSON) here,
 * 35 µs so.
 */

/** A step's event as the worker sends it; a host-side fault's cause becomes text for the log. */
export function eventToWire(event: ProgramEvent): WireEvent {
  if (event.type === 'paused') {
    const { calls, stats } = event;
    return {
      type: 'paused',
      seqs: calls.map((call) => call.seq),
      tools: calls.map((call) => call.tool),
      argumentsJson: calls.map((call) => call.argumentsJson),
      stats,
    };
  }
  if (event.type === 'completed') return event;
  const { cause, ...error } = event.error;
  return { ...event, error: cause === undefined ? error : { ...error, cause: cause instanceof Error ? (cause.stack ?? cause.message) : String(cause) } };
}

/** The event of a step as the server reads it. */
export function eventFromWire(event: WireEvent): ProgramEvent {
  if (event.type !== 'paused') return event;
  const { seqs, tools, argumentsJson, stats } = event;
  const calls: ToolCallRequest[] = seqs.map((seq, index) => ({ seq, tool: tools[index]!, argumentsJson: argumentsJson[index]! }));
  return { type: 'paused', calls, stats };
}

/** The answers of a record's last batch (its entries from `answered` on), as a `continue` carries them. */
export function answersToWire(recorded: readonly RecordedCall[], answered: number): { answers: string[]; failed: number[] } {
  const answers: string[] = [];
  const failed: number[] = [];
  for (let seq = answered; seq < recorded.length; seq++) {
    const { output, error } = recorded[seq]!;
    if (error !== undefined) failed.push(answers.length);
    answers.push(error ?? output);
  }
  return { answers, failed };
}

/**
 * The warm resume of a program paused after `recorded.length` calls on a batch of `pending`, as a
 * `continue` carries it (before the channel adds its version and id): the batch's answers, and
 * the digest of the answers before it (`digest`, kept for the program from one resume to the next).
 */
export function continueMessage(
  programId: string,
  recorded: readonly RecordedCall[],
  pending: number,
  digest: RecordDigest,
): Omit<Extract<HostMessage, { kind: 'continue' }>, 'v' | 'id'> {
  const answered = recorded.length - pending;
  return { kind: 'continue', programId, calls: recorded.length, answeredDigest: digest.of(recorded, answered), ...answersToWire(recorded, answered) };
}

/** The outputs a `continue` delivers to a program that made `calls` calls, its last batch answered by `answers`. */
export function answersFromWire(calls: number, answers: readonly string[], failed: readonly number[]): ToolCallOutput[] {
  const first = calls - answers.length;
  const outputs: ToolCallOutput[] = answers.map((output, index) => ({ seq: first + index, output }));
  // A failed call's output is ignored: empty, as a recorded failure's is.
  for (const index of failed) outputs[index] = { seq: first + index, output: '', error: answers[index]! };
  return outputs;
}
