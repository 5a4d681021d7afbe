import { createHash, type Hash } from 'node:crypto';
import { hashOutputs, type RecordedCall } from './program-events.ts';

/**
 * answersDigest of the answered part of a program's record, kept from one warm resume to the
 * next so that each hashes only the answers added since. A record grows with every pause: hashed
 * whole at each, a program of 1,000 calls in batches of 50 cost 44 µs a step on average here.
 *
 * It is kept for one record array, which a caller resuming again with the same array only
 * appends to (see ProgramEngine.resume): a different array (a request that rebuilt the record from
 * its items), or one that got shorter, is hashed from its start. The array is held weakly: the
 * caller's record is not kept alive by a program that is never resumed again.
 */
export class RecordDigest {
  #record: WeakRef<readonly RecordedCall[]> | undefined;
  #hashed = 0;
  /**
   * Made at the first digest asked for, not with the program: most programs are never resumed
   * warm, and making a SHA-256 hash costs more than a light program's answers (see ReceivedDigest).
   */
  #hash: Hash | undefined;

  /** answersDigest(record.slice(0, answered)). */
  of(record: readonly RecordedCall[], answered: number): string {
    let hash = this.#hash;
    if (hash === undefined || this.#record?.deref() !== record || answered < this.#hashed) {
      this.#record = new WeakRef(record);
      this.#hashed = 0;
      hash = this.#hash = createHash('sha256');
    }
    if (answered > this.#hashed) hashOutputs(hash, record.slice(this.#hashed, answered));
    this.#hashed = answered;
    return hash.copy().digest('base64');
  }
}
