import { ApiError } from '../../platform/api-error.ts';

/**
 * A request refused before its body was read (its charset, one body too many arriving): the
 * error handler answers it once the client has sent the rest, read and dropped, as it answers a
 * body too large (oversized-body.ts). Answered at once, with the connection closed under a client
 * still sending, the client would often meet a reset (EPIPE) rather than the answer. A client
 * waiting for a 100 Continue (expect-continue.ts) has sent no body: it is answered at once.
 */
class UnreadBodyRefusal extends ApiError {}

/** The ApiError of a request refused before its body was read: answered once the body is in. */
export function unreadBodyRefusal(...args: ConstructorParameters<typeof ApiError>): ApiError {
  return new UnreadBodyRefusal(...args);
}

/** Whether a request's error refused its body before reading it. */
export function isUnreadBodyRefusal(error: unknown): boolean {
  return error instanceof UnreadBodyRefusal;
}
