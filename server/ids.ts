import { createHash, randomBytes } from 'node:crypto';

/** `resp_…`, `msg_…`: a prefix and 48 random hex digits, like the hosted API's ids. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}

/** The item id of a program's function call, derived from its (sealed) call_id. */
export function functionCallItemId(callId: string): string {
  return `fc_${createHash('sha256').update(callId).digest('hex').slice(0, 48)}`;
}

/** The id of a program's `program_output` item, derived like its calls' ids. */
export function programOutputId(programCallId: string): string {
  return `prog_out_${createHash('sha256').update(`${programCallId}\u0000output`).digest('hex').slice(0, 48)}`;
}

/** `call_…` with 24 random hex digits: the call_id of a program or of a direct call. */
export function newCallId(): string {
  return `call_${randomBytes(12).toString('hex')}`;
}
