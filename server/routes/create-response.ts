import type { FastifyRequest } from 'fastify';
import type { ConversationItem } from '../../schemas/items.ts';
import type { Knobs } from '../../schemas/knobs.ts';
import { CreateResponseRequest } from '../../schemas/request.ts';
import { ApiError } from '../api-error.ts';
import type { ClientChecks } from '../config.ts';
import { inputItems } from '../conversation/history.ts';
import { finishResponse, prepareResponse, type RespondDeps, type Responded, type ResponseRequest } from '../conversation/respond.ts';
import { MCP_APPROVAL } from '../conversation/tool-kinds.ts';
import { newId } from '../ids.ts';
import { standInJournal, type JournalDetails } from '../journal.ts';
import { parseOrThrow, refuseTooManyInputItems } from '../request-validation.ts';
import { withoutSecrets } from '../response-object.ts';
import type { TurnPriority } from '../turn-gate.ts';

// What creating a response does whichever way the request came: a POST /v1/responses body, or a
// `response.create` event on a WebSocket (server/routes/responses-ws.ts). One path, so that the
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

/** A create request's body, checked: a 400 naming what is wrong, or the parsed request. */
export function createBodyOf(raw: unknown, maxInputItems: number): CreateResponseRequest {
  refuseTooManyInputItems(raw, maxInputItems);
  return parseOrThrow(CreateResponseRequest, raw);
}

/** Work under way (tool outputs to deliver, a stored conversation, a retry) goes before new conversations. */
export function turnPriority(body: CreateResponseRequest, retryCount: number): TurnPriority {
  const continues =
    typeof body.input !== 'string' && (body.input ?? []).some((item) => item.type.endsWith('_output') || item.type === MCP_APPROVAL.response.type);
  return continues || body.previous_response_id || body.conversation || retryCount > 0 ? 'in_progress' : 'new';
}

/** What a request's headers (an HTTP request's, or a WebSocket upgrade's) ask for. */
export interface RequestSettings {
  readonly headerKnobs: Knobs;
  readonly clientChecks: ClientChecks;
  /** Which attempt this is, from 0 (a simulated error's `error_times` counts them). */
  readonly retryCount: number;
}

/** What the conversation code needs of a request: its body, and its settings. */
export function responseRequest(request: FastifyRequest, body: CreateResponseRequest, settings: RequestSettings, log = request.log): ResponseRequest {
  return {
    id: newId('resp'),
    createdAt: Math.floor(Date.now() / 1000),
    body,
    newInput: inputItems(body.input),
    headers: flatHeaders(request.headers),
    headerKnobs: settings.headerKnobs,
    retryCount: settings.retryCount,
    clientChecks: settings.clientChecks,
    log,
  };
}

export interface RespondedInPlace extends Responded {
  /** The conversation the turn ran on: the history it continued, then the request's own input. */
  readonly context: readonly ConversationItem[];
}

/**
 * Runs a request's turn once the gate gives it a place (`place`, from `TurnGate.enter`), and
 * frees the place as soon as the Response is made: streaming it back does not hold one.
 * `abandoned` is asked when the place comes: true (the client left while it waited) skips the
 * turn, and undefined is returned.
 */
export async function respondInPlace(request: ResponseRequest, place: Promise<() => void>, deps: RespondDeps): Promise<RespondedInPlace>;
export async function respondInPlace(
  request: ResponseRequest,
  place: Promise<() => void>,
  deps: RespondDeps,
  abandoned: () => boolean,
): Promise<RespondedInPlace | undefined>;
export async function respondInPlace(
  request: ResponseRequest,
  place: Promise<() => void>,
  deps: RespondDeps,
  abandoned?: () => boolean,
): Promise<RespondedInPlace | undefined> {
  const release = await place;
  try {
    if (abandoned?.()) return undefined;
    const prepared = await prepareResponse(request, deps);
    return { ...(await finishResponse(prepared, deps)), context: prepared.turn.input.history };
  } finally {
    release();
  }
}

/** What the journal keeps of a request as it comes in. */
export function requestJournal(body: CreateResponseRequest, stream: boolean): JournalDetails {
  return { model: body.model, store: body.store !== false, stream, background: body.background === true };
}

/** The headers that tell a client who decided its turn (`x-ptc-stand-in`) and why nothing ran (`x-ptc-nothing-ran`). */
export function standInHeaders(finished: Pick<Responded, 'turn'>): Record<string, string> {
  const { standIns, nothingRan } = finished.turn;
  return {
    ...(standIns.length > 0 ? { 'x-ptc-stand-in': standIns.join(', ') } : {}),
    ...(nothingRan === undefined ? {} : { 'x-ptc-nothing-ran': nothingRan }),
  };
}

/** What the journal keeps of a finished response; content only for `store: true` (docs/JOURNAL.md). */
export function finishedJournal(body: CreateResponseRequest, finished: Responded): JournalDetails {
  const { response } = finished;
  return {
    response_id: response.id,
    response_status: response.status,
    output: response.output.map((item) => item.type),
    programs: finished.turn.trace,
    stand_in: standInJournal(finished.turn),
    knobs: finished.knobs,
    client_loop: { tolerated: finished.turn.tolerated },
    ...(body.store !== false ? { request: { ...body, ...(body.tools ? { tools: body.tools.map(withoutSecrets) } : {}) }, response } : {}),
  };
}
