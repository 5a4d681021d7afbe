import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { API_ERRORS, type ApiErrorDefinition } from '../../../schemas/error-codes.ts';
import { ApiError } from '../../platform/api-error.ts';
import { newId } from '../../platform/ids.ts';
import type { JournalRecorder } from '../journal/journal-hooks.ts';
import type { JournalDetails } from '../../engine/journal-details.ts';
import { StoreUnavailableError } from '../../platform/stores/response-store.ts';
import { SchemaThreadBusyError } from '../../../runtime/index.ts';
import { bodyWithheld } from './expect-continue.ts';
import { discardOversizedBody } from './oversized-body.ts';
import { isUnreadBodyRefusal } from './unread-body.ts';
import { noteCutOff, requestTimeoutError, wasCutOff } from './request-timeout.ts';

/**
 * What a route or Fastify threw, as the ApiError the client is answered with; undefined for a
 * fault of ours, which is logged and answered 500 server_error.
 */
export function apiErrorFor(error: FastifyError | Error, bodyLimitBytes: number): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (error instanceof StoreUnavailableError)
    return new ApiError('store_unavailable', `The response store is unavailable: ${error.message}. Retry later.`, null, { 'retry-after': '1' });
  if (error instanceof SchemaThreadBusyError)
    return new ApiError('server_busy', `The server is busy: ${error.message}. Retry shortly.`, null, { 'retry-after': '1' });
  const code = 'code' in error ? error.code : undefined;
  const statusCode = 'statusCode' in error ? error.statusCode : undefined;
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('request_too_large', `The request body exceeds the limit of ${bodyLimitBytes} bytes (PTC_BODY_LIMIT_BYTES).`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type', 'The request body must be JSON with the header Content-Type: application/json.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('invalid_json', 'The request body is empty; send a JSON object.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('invalid_json', 'The request body does not match its Content-Length.');
  }
  if (statusCode === 400 && (error instanceof SyntaxError || /JSON|__proto__|constructor/i.test(error.message))) {
    return new ApiError('invalid_json', `We could not parse the JSON body of your request: ${error.message}`);
  }
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    return new ApiError('invalid_value', error.message);
  }
  return undefined;
}

/** Fastify's refusal of a body over its limit, by its Content-Length or by its count passing the limit. */
function isBodyTooLarge(error: FastifyError | Error): boolean {
  return 'code' in error && error.code === 'FST_ERR_CTP_BODY_TOO_LARGE';
}

/** The ApiError a request is answered with for what it threw; a fault of ours is logged, and answered 500 server_error. */
export function answerableError(
  error: FastifyError | Error,
  bodyLimitBytes: number,
  request: { readonly id: string; readonly log: FastifyBaseLogger },
): ApiError {
  const apiError = apiErrorFor(error, bodyLimitBytes);
  if (apiError) return apiError;
  request.log.error({ err: error }, 'unexpected error');
  return new ApiError('server_error', `The server had an error while processing your request (request id ${request.id}).`);
}

/** What the journal keeps of an error answer: its envelope, and the client-loop mistake it names. */
export function errorJournal(apiError: ApiError): JournalDetails {
  const envelope = apiError.toEnvelope();
  return {
    error: envelope.error as { code: string; type: string; message: string; param: string | null },
    ...((API_ERRORS[apiError.code] as ApiErrorDefinition).clientLoop ? { client_loop: { rejected: apiError.code, tolerated: [] } } : {}),
  };
}

/**
 * Answers every error a request meets after routing, and every unrouted request, in OpenAI's
 * envelope, and notes the error (and a client-loop violation) in the request's journal entry.
 */
export function registerErrorHandlers(
  app: FastifyInstance,
  options: { readonly bodyLimitBytes: number; readonly journal: Pick<JournalRecorder, 'note' | 'recordAnsweredOnSocket'> },
): void {
  app.setErrorHandler((error: FastifyError | Error, request, reply) => {
    const apiError = answerableError(error, options.bodyLimitBytes, request);
    options.journal.note(request, errorJournal(apiError));
    // Already answered 408 on its socket (answerClientError), which is closed: only journaled.
    if (wasCutOff(request.raw)) {
      reply.hijack();
      options.journal.recordAnsweredOnSocket(request, apiError.status, reply.elapsedTime);
      return;
    }
    const answer = () => reply.status(apiError.status).headers(apiError.headers).send(apiError.toEnvelope());
    if (!isBodyTooLarge(error) && !isUnreadBodyRefusal(error)) return answer();
    // A client waiting for a 100 Continue it was not sent (expect-continue.ts) has not sent the
    // body, and may never: answered at once, and the connection closed, the body that may still
    // come read by no one.
    if (bodyWithheld(request.raw)) {
      reply.header('connection', 'close');
      return answer();
    }
    // A body left unread (too large, refused before it was read) is answered only once the client
    // has sent it (oversized-body.ts): before, the client may meet a reset connection rather than
    // the answer.
    return discardOversizedBody(request.raw, options.bodyLimitBytes).then((outcome) => {
      // Fastify asks to close the connection of a body it left unread; read to its end, the
      // connection can serve the next request (a draining server still closes it, in onSend).
      if (outcome === 'read') reply.removeHeader('connection');
      else reply.header('connection', 'close');
      return answer();
    });
  });

  app.setNotFoundHandler((request) => {
    throw unknownUrl(request);
  });
}

/** A path no route serves (or a method it does not take). */
export function unknownUrl(request: { readonly method: string; readonly url: string }): ApiError {
  return new ApiError('unknown_url', `Invalid URL (${request.method} ${request.url.split('?')[0]}).`);
}

/**
 * Fastify's `frameworkErrors`: the router's own refusals (a malformed URL, an absurd path
 * segment), which never reach the error handler, in the envelope too.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const apiError =
    error.code === 'FST_ERR_BAD_URL' ? new ApiError('invalid_value', `The URL ${request.url} is not valid (malformed percent-encoding).`) : unknownUrl(request);
  if (request.headers.upgrade !== undefined) {
    // An upgrade request's socket has left the HTTP server (the WebSocket plugin took it) and
    // these refusals come before the plugin's hooks, which would close it: close it here, or
    // the client would wait on it for ever.
    reply.header('connection', 'close');
    reply.raw.once('finish', () => request.raw.socket?.destroy());
  }
  void reply.status(apiError.status).header('x-request-id', request.id).send(apiError.toEnvelope());
}

/** What Node's HTTP parser (or its request timer) refused, as an API error. */
function clientErrorAnswer(error: Error): ApiError {
  switch ((error as NodeJS.ErrnoException).code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError('request_too_large', 'The request headers are too large.', null, {}, 431);
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return requestTimeoutError();
    default:
      return new ApiError('invalid_json', `The HTTP request is malformed: ${error.message}.`);
  }
}

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser refuses never reaches Fastify,
 * so it is answered on the socket, in the envelope, and the connection closed.
 */
export function answerClientError(error: Error, socket: Socket): void {
  // A response under way (a request past PTC_REQUEST_TIMEOUT_MS whose route answered without
  // reading its body): an answer written now would land inside it. Closing is the answer, as
  // Node's own handler does.
  const responding = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (!socket.writable || responding?.headersSent) {
    socket.destroy();
    return;
  }
  const apiError = clientErrorAnswer(error);
  // A request Fastify has (its head came whole, its body did not) keeps its id, and is journaled 408.
  const requestId = (apiError.code === 'request_timeout' ? noteCutOff(socket) : undefined) ?? newId('req');
  const json = JSON.stringify(apiError.toEnvelope());
  socket.end(
    `HTTP/1.1 ${apiError.status} ${STATUS_CODES[apiError.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(json)}\r\nx-request-id: ${requestId}\r\nConnection: close\r\n\r\n${json}`,
  );
}
