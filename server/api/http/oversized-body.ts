import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { FIXED_LIMITS } from '../../../schemas/fixed-limits.ts';

/**
 * A body over PTC_BODY_LIMIT_BYTES is answered 413 once the client has sent it, its bytes read
 * and dropped as they come. Fastify refuses such a body as soon as it sees it (its Content-Length,
 * or its count passing the limit) and asks for the connection to be closed: Node then closes the
 * socket right after the answer with the client's bytes still arriving, the kernel resets the
 * connection, and the client, still writing, meets EPIPE or ECONNRESET rather than the status.
 * Read to its end, the connection stays open for the next request. Reading is bounded in bytes
 * and in time, so that a client sending without end cannot hold a socket. A client that sent
 * `Expect: 100-continue` and was not sent the 100 is answered at once instead, with its connection
 * closed (expect-continue.ts): nothing here would ask it for its body.
 */

/** `read`: the body was read to its end; `cut`: a bound was reached first; `gone`: the client went away. */
export type DiscardOutcome = 'read' | 'cut' | 'gone';

export interface DiscardBounds {
  /** Bytes past the body limit read and dropped at most. */
  readonly maxBytes: number;
  /** Time spent reading them at most. */
  readonly maxMs: number;
}

export const OVERSIZED_BODY_BOUNDS: DiscardBounds = {
  maxBytes: FIXED_LIMITS.oversizedBodyDiscardBytes.value,
  maxMs: FIXED_LIMITS.oversizedBodyDiscardMs.value,
};

/**
 * Reads what is left of a request whose body was refused unread (over `bodyLimitBytes`, or one
 * too many arriving, arriving-bodies.ts), dropping it. A body that declares more than the bounds
 * allow is not read at all.
 */
export function discardOversizedBody(request: IncomingMessage, bodyLimitBytes: number, bounds: DiscardBounds = OVERSIZED_BODY_BOUNDS): Promise<DiscardOutcome> {
  // Node's parser has checked the header: a number, or absent (a chunked body) and so NaN.
  const declared = Number(request.headers['content-length']);
  if (declared - bodyLimitBytes > bounds.maxBytes) return Promise.resolve('cut');
  return discardBody(request, bounds);
}

/**
 * Reads a stream to its end without keeping a byte: each chunk only counted, which costs the
 * loop no more than reading it did.
 */
export function discardBody(body: Readable, bounds: DiscardBounds): Promise<DiscardOutcome> {
  if (body.readableEnded) return Promise.resolve('read');
  if (body.destroyed) return Promise.resolve('gone');
  return new Promise((resolve) => {
    let bytes = 0;
    const settle = (outcome: DiscardOutcome): void => {
      clearTimeout(deadline);
      body.off('data', count);
      body.off('end', ended);
      body.off('error', gone);
      body.off('close', gone);
      resolve(outcome);
    };
    const count = (chunk: Buffer | string): void => {
      bytes += chunk.length;
      if (bytes > bounds.maxBytes) settle('cut');
    };
    const ended = (): void => settle('read');
    const gone = (): void => settle('gone');
    const deadline = setTimeout(() => settle('cut'), bounds.maxMs);
    body.on('data', count);
    body.on('end', ended);
    body.on('error', gone);
    body.on('close', gone);
    body.resume();
  });
}
