import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { ApiError } from '../../platform/api-error.ts';
import { newId } from '../../platform/ids.ts';

/**
 * Requests Node's request timer cut off (PTC_REQUEST_TIMEOUT_MS). The 408 is written on the
 * socket itself (error-handler.ts, answerClientError), outside Fastify, which learns of it only as
 * the request's body ends unfinished: noted here, so that the 408 carries the request's own id and
 * its journal entry says 408, as for any other answer.
 */

const ids = new WeakMap<IncomingMessage, string>();
const cutOff = new WeakSet<IncomingMessage>();

/** Fastify's `genReqId`: a new request id, kept for the 408 its request may be answered. */
export function newRequestId(raw: IncomingMessage): string {
  const id = newId('req');
  ids.set(raw, id);
  return id;
}

export function requestTimeoutError(): ApiError {
  return new ApiError('request_timeout', 'The request was not received whole within PTC_REQUEST_TIMEOUT_MS: the connection is closed.');
}

/** The request of a socket Node's timer cut off (none when its head had not arrived whole), noted as cut off; its id. */
export function noteCutOff(socket: Socket): string | undefined {
  const request = (socket as Socket & { _httpMessage?: { req?: IncomingMessage } | null })._httpMessage?.req;
  if (request === undefined) return undefined;
  cutOff.add(request);
  return ids.get(request);
}

/** Whether a request was cut off by Node's timer and answered 408 on its socket. */
export function wasCutOff(raw: IncomingMessage): boolean {
  return cutOff.has(raw);
}
