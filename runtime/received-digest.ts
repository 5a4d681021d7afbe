import { createHash, type Hash } from 'node:crypto';
import { answerDigestPart } from './program-events.ts';

/** Answers are hashed once this much of them waits (UTF-16 units): one update per part, not per batch. */
const PART_LENGTH = 64 * 1024;

/**
 * The running digest of the answers a program has received, in order: the same as
 * answersDigest over all of them. Answers are hashed in parts of about PART_LENGTH, and the hash
 * is made only once there is a part to hash or a digest is asked for: most programs receive a
 * few small answers and are never asked (runProgram never asks), and making a SHA-256 hash costs
 * more than hashing them (20 µs of a light program's step, cold). What waits is bounded.
 */
export class ReceivedDigest {
  #hash: Hash | undefined;
  #waiting: string[] = [];
  #waitingLength = 0;

  add(answers: readonly { readonly output: string; readonly error?: string | undefined }[]): void {
    for (const answer of answers) {
      const part = answerDigestPart(answer);
      this.#waiting.push(part);
      this.#waitingLength += part.length;
    }
    if (this.#waitingLength >= PART_LENGTH) this.#flush();
  }

  /** The digest so far (base64), as answersDigest gives it. */
  digest(): string {
    return this.#flush().copy().digest('base64');
  }

  #flush(): Hash {
    this.#hash ??= createHash('sha256');
    if (this.#waiting.length > 0) {
      // Each part starts with its prefix (`o` or `e`), never half a surrogate pair: hashing the
      // parts' text in pieces gives the digest of the whole.
      this.#hash.update(this.#waiting.join(''), 'utf8');
      this.#waiting = [];
      this.#waitingLength = 0;
    }
    return this.#hash;
  }
}
