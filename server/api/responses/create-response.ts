import type { FastifyRequest } from 'fastify';
import { CreateResponseRequest } from '../../../schemas/request.ts';
import { ApiError } from '../../platform/api-error.ts';
import type { ClientChecks } from '../../platform/config.ts';
import { newResponseRequest, type RequestSettings as EngineRequestSettings, type Responded, type ResponseRequest } from '../../engine/conversation/respond.ts';
import { parseOrThrow } from '../../platform/request-validation.ts';

// What creating a response does whichever way the request came: a POST /v1/responses body, or a
// `response.create` event on a WebSocket (server/api/responses/responses-socket.ts). One path, so that the
// two transports cannot drift apart in what they accept, run or journal.

export const CLIENT_CHECKS_HEADER = 'x-ptc-client-checks';

/** The client-loop checks a request asks for in its header, or the server's. */
export function clientChecksFor(header: string | string[] | undefined, fallback: ClientChecks): ClientChecks {
  if (header === undefined) return fallback;
  if (header === 'strict' || header === 'lenient') return header;
  throw new ApiError(
    'invalid_value',
    `Invalid value for header '${CLIENT_CHECKS_HEADER}': ${JSON.stringify(header)}. Supported values are: 'strict', 'lenient'.`,
    CLIENT_CHECKS_HEADER,
  );
}

function flatHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : value]));
}

/**
 * A create request's body, checked: a 400 naming what is wrong, or the parsed request. Its
 * size (input items, strings, values) was bounded as it was parsed (schemas/body-bounds.ts).
 */
export function createBodyOf(raw: unknown): CreateResponseRequest {
  return parseOrThrow(CreateResponseRequest, raw);
}

/** What a request's headers (an HTTP request's, or a WebSocket upgrade's) ask for. */
export type RequestSettings = Omit<EngineRequestSettings, 'headers' | 'log'>;

/** What the engine needs of an HTTP request or a WebSocket upgrade: its body, its settings, its headers. */
export function responseRequest(request: FastifyRequest, body: CreateResponseRequest, settings: RequestSettings, log = request.log): ResponseRequest {
  return newResponseRequest(body, { ...settings, headers: flatHeaders(request.headers), log });
}

/** The headers that tell a client who decided its turn (`x-ptc-stand-in`) and why nothing ran (`x-ptc-nothing-ran`). */
export function standInHeaders(finished: Pick<Responded, 'turn'>): Record<string, string> {
  const { standIns, nothingRan } = finished.turn;
  return {
    ...(standIns.length > 0 ? { 'x-ptc-stand-in': standIns.join(', ') } : {}),
    ...(nothingRan === undefined ? {} : { 'x-ptc-nothing-ran': nothingRan }),
  };
}
