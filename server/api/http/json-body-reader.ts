import { errorCodes, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import type { BodyBounds, RouteBounds } from '../../../schemas/body-bounds.ts';
import { parse as parseContentType } from 'content-type';
import type { ArrivingBodies, ArrivingBody } from './arriving-bodies.ts';
import { askForBody, bodyWithheld } from './expect-continue.ts';
import { type BodyInThread, OFF_LOOP_JSON_BYTES, openBodyInThread, parseOnLoop } from './json-body.ts';
import { unreadBodyRefusal } from './unread-body.ts';
import { requestTimeoutError, wasCutOff } from './request-timeout.ts';

/**
 * Reads a JSON request body in place of Fastify's reader, which gathers every body whole on the
 * server's loop: here the first OFF_LOOP_JSON_BYTES are gathered, and past them the chunks go to
 * the JSON thread as they arrive (json-body.ts), so a large body is never whole on the loop. The
 * refusals are Fastify's own (the error handler answers them): a body over the route's limit, by
 * its Content-Length or as it arrives (FST_ERR_CTP_BODY_TOO_LARGE, which the handler answers once
 * the client has sent it, oversized-body.ts), one shorter or longer than its Content-Length, an
 * empty one (but on a DELETE or GET, where it is no body); and a charset other than UTF-8, which
 * JSON bodies are (RFC 8259), is a 415. A client waiting for `100 Continue` (expect-continue.ts) is
 * sent it once none of the refusals by the head came: only then is the body read.
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The bounds of schemas/body-bounds.ts that depend on the route (a Responses `input`'s items). */
    bodyBounds?: RouteBounds;
  }
}

/** Replaces Fastify's JSON parser; `maxValues` is PTC_MAX_BODY_VALUES, `arriving` the bodies being received, bounded together. */
export function parseJsonBodies(app: FastifyInstance, maxValues: number, arriving: ArrivingBodies): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', (request: FastifyRequest, payload: Readable) => {
    // Fastify reads the body of a request to a URL no route serves too, before its 404: a client
    // waiting for 100 Continue (expect-continue.ts) is answered the 404 without being asked for it.
    if (request.is404 && bodyWithheld(request.raw)) return Promise.resolve(undefined);
    const charset = charsetOf(request.headers['content-type']);
    if (charset !== undefined && !UTF8_CHARSETS.has(charset.toLowerCase())) {
      return Promise.reject(unreadBodyRefusal('unsupported_media_type', `The request body must be JSON in UTF-8; its Content-Type names charset=${charset}.`));
    }
    const bounds: BodyBounds = { values: maxValues, ...request.routeOptions.config.bodyBounds };
    // A body-less request that names JSON anyway (curl's habit on DELETE) is read as having none.
    const emptyAllowed = request.method === 'DELETE' || request.method === 'GET';
    return readJsonBody(payload, Number(request.headers['content-length']), request.routeOptions.bodyLimit, bounds, emptyAllowed, arriving, {
      reading: () => askForBody(request.raw),
      cutOff: () => wasCutOff(request.raw),
    });
  });
}

/** The charsets a JSON body may name: UTF-8, which JSON is (RFC 8259), and ASCII, a part of it. */
const UTF8_CHARSETS = new Set(['utf-8', 'utf8', 'us-ascii']);

/** The `charset` parameter of a Content-Type, unquoted (undefined: none named, or a header too malformed to read one from). */
function charsetOf(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  try {
    return parseContentType(contentType).parameters['charset'];
  } catch {
    return undefined;
  }
}

/**
 * `declared`: the Content-Length (NaN for a chunked body); `emptyAllowed`: an empty body is no
 * body rather than a 400; `request.reading`: called once the body is to be read, after the
 * refusals by the head; `request.cutOff`: whether the request was answered 408 on its socket,
 * past PTC_REQUEST_TIMEOUT_MS (request-timeout.ts).
 */
function readJsonBody(
  payload: Readable,
  declared: number,
  limit: number,
  bounds: BodyBounds,
  emptyAllowed: boolean,
  arriving: ArrivingBodies,
  request: { readonly reading: () => void; readonly cutOff: () => boolean },
): Promise<unknown> {
  if (declared > limit) return Promise.reject(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
  let body: ArrivingBody;
  try {
    body = arriving.begin(declared);
  } catch (error) {
    return Promise.reject(error);
  }
  request.reading();
  return new Promise((resolve, reject) => {
    let received = 0;
    let gathered: Buffer[] = [];
    let inThread: BodyInThread | undefined;
    const stop = (): void => {
      body.end();
      payload.off('data', onData);
      payload.off('end', onEnd);
      payload.off('error', onError);
      payload.off('close', onClose);
    };
    const fail = (error: Error): void => {
      stop();
      inThread?.drop();
      reject(error);
    };
    const onData = (data: Buffer | string): void => {
      const chunk = typeof data === 'string' ? Buffer.from(data) : data;
      received += chunk.length;
      if (received > limit) return fail(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
      try {
        body.received(chunk.length);
      } catch (busy) {
        return fail(busy as Error);
      }
      if (inThread) return inThread.write(chunk);
      gathered.push(chunk);
      if (received < OFF_LOOP_JSON_BYTES) return;
      inThread = openBodyInThread();
      for (const early of gathered) inThread.write(early);
      gathered = [];
    };
    const onEnd = (): void => {
      stop();
      if (!Number.isNaN(declared) && received !== declared) return fail(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
      if (received === 0) return emptyAllowed ? resolve(undefined) : fail(new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY());
      if (inThread) {
        inThread.end(bounds).then(resolve, reject);
        return;
      }
      try {
        resolve(parseOnLoop(Buffer.concat(gathered, received), bounds));
      } catch (error) {
        reject(error as Error);
      }
    };
    // The client went away or sent a malformed body: a 400 (as Fastify's reader answers).
    const onError = (error: Error & { statusCode?: number }): void => {
      if (request.cutOff()) return fail(requestTimeoutError());
      if (!(typeof error.statusCode === 'number' && error.statusCode >= 400)) error.statusCode = 400;
      fail(error);
    };
    // Closed before its end with no error: its connection was closed under it (a request past
    // PTC_REQUEST_TIMEOUT_MS), and what it sent is let go.
    const onClose = (): void =>
      fail(request.cutOff() ? requestTimeoutError() : Object.assign(new Error('The connection closed before the request body ended'), { statusCode: 400 }));
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onError);
    payload.on('close', onClose);
    payload.resume();
  });
}
