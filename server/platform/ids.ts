import { createHash, randomBytes } from 'node:crypto';

// Random bytes drawn in blocks: one syscall per 170 ids rather than one each (a resent
// conversation gives ids to hundreds of items per request).
const POOL_BYTES = 24 * 170;
let pool = Buffer.alloc(0);
let poolOffset = 0;

function randomHex(bytes: number): string {
  if (poolOffset + bytes > pool.length) {
    pool = randomBytes(POOL_BYTES);
    poolOffset = 0;
  }
  poolOffset += bytes;
  return pool.toString('hex', poolOffset - bytes, poolOffset);
}

/** `resp_…`, `msg_…`: a prefix and 48 random hex digits, like the hosted API's ids. */
export function newId(prefix: string): string {
  return `${prefix}_${randomHex(24)}`;
}

/** The item id of a program's call (`fc_…`, `ctc_…`), derived from its (sealed) call_id. */
export function callItemId(callId: string, prefix: string): string {
  return `${prefix}_${createHash('sha256').update(callId).digest('hex').slice(0, 48)}`;
}

/**
 * The id of a program's `program_output` item, derived from the program and what it ended with:
 * a live and a replayed run give the same item the same id, and two branches of one program
 * that ended differently (outputs answered otherwise) give different ids, so an id names one
 * item wherever it is stored (an `item_reference` reads it back).
 */
export function programOutputId(programCallId: string, status: string, result: string): string {
  return `cmo_${createHash('sha256').update(`${programCallId}\u0000output\u0000${status}\u0000${result}`).digest('hex').slice(0, 48)}`;
}

/** `call_…` with 24 random hex digits: the call_id of a program or of a direct call. */
export function newCallId(): string {
  return `call_${randomHex(12)}`;
}

let sortableCounter = 0;

/**
 * `agent_…`, `sess_…`: like newId, but ids made later sort after those made before (the
 * milliseconds, then a counter, then random digits). A list paged `after` an id can then go on
 * from where that id was when it has been deleted since (the SDK's list-and-delete loop).
 */
export function newSortableId(prefix: string): string {
  sortableCounter = (sortableCounter + 1) % 0x10000;
  return `${prefix}_${Date.now().toString(16).padStart(12, '0')}${sortableCounter.toString(16).padStart(4, '0')}${randomHex(16)}`;
}
