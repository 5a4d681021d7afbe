/**
 * What the journal records of a request, as the engine and the front doors report it: the
 * entry's shape and the details of a response made (server/api/journal/journal.ts keeps the entries).
 */
import type { Knobs } from '../../schemas/knobs.ts';
import type { CreateResponseRequest } from '../../schemas/request.ts';
import type { Responded } from './conversation/respond.ts';
import { withoutSecrets } from './response-object.ts';
import type { ProgramTrace, TurnResult } from './conversation/turn.ts';
import type { Divergence } from './stand-ins/cassettes/divergence.ts';

/** What the journal keeps of a replayed request (docs/JOURNAL.md). */
export interface CassetteJournal {
  /** The entries that decided its turns. */
  readonly entries: readonly string[];
  /** What its recorded programs did otherwise here (none: the replay matched). */
  readonly divergences: readonly Divergence[];
}

/** What a streamed reply did: events sent, the pause before each, and whether a knob cut it. */
export interface StreamReport {
  readonly events_sent: number;
  /** The pause before each event sent, in ms (latency plus seeded jitter). */
  readonly pauses_ms: readonly number[];
  /** True when the `stream_cut_after` knob ended the stream without its terminal event. */
  readonly cut: boolean;
}

/** What the journal keeps of one webhook delivery attempt (docs/WEBHOOKS.md). */
export interface WebhookJournal {
  readonly event_id: string;
  readonly event_type: string;
  /** The event's `data` (the response's or session's id, …). */
  readonly data: Readonly<Record<string, unknown>>;
  /** The `webhook-id` header, the same on every attempt of one delivery. */
  readonly webhook_id: string;
  readonly endpoint_id: string;
  readonly attempt: number;
  readonly outcome: 'delivered' | 'retrying' | 'failed' | 'dropped';
  readonly retry_in_ms?: number;
  readonly error?: string;
}

/** One request as the journal keeps it: what came in, what went out, and what programs did. */
export interface JournalEntry {
  readonly request_id: string;
  readonly at: string;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly duration_ms: number;
  readonly response_id?: string;
  readonly response_status?: string;
  readonly model?: string;
  readonly store?: boolean;
  readonly stream?: boolean;
  readonly background?: boolean;
  /** Output item types, in order. */
  readonly output?: readonly string[];
  readonly programs?: readonly ProgramTrace[];
  /** Who decided the turn (docs/STAND-IN.md), and why nothing ran when no stand-in did. */
  readonly stand_in?: { readonly decided_by: readonly string[]; readonly nothing_ran?: string };
  readonly knobs?: Knobs;
  /** For a streamed reply: events sent, the pause before each, and whether a knob cut it. */
  readonly stream_report?: StreamReport;
  /** Client-loop mistakes: the one that failed the request, or those a lenient check let through. */
  readonly client_loop?: { readonly rejected?: string; readonly tolerated: readonly string[] };
  readonly error?: { readonly code: string; readonly type: string; readonly message: string; readonly param: string | null };
  /** Replay mode: the cassette entries that decided the turn, and divergences of recorded programs (docs/CASSETTES.md). */
  readonly cassette?: CassetteJournal;
  /** A webhook delivery attempt (`method: "WEBHOOK"`): the event, the endpoint, and how the attempt went. */
  readonly webhook?: WebhookJournal;
  /** The request body and the Response, kept only for `store: true` requests. */
  readonly request?: unknown;
  readonly response?: unknown;
}

/** Who decided a turn, for the journal; and why nothing ran, when nothing did. */
export function standInJournal(turn: Pick<TurnResult, 'standIns' | 'nothingRan'>): NonNullable<JournalEntry['stand_in']> {
  return { decided_by: turn.standIns, ...(turn.nothingRan === undefined ? {} : { nothing_ran: turn.nothingRan }) };
}

/** What a route adds to the entry of the request it serves. */
export type JournalDetails = Partial<Omit<JournalEntry, 'request_id' | 'at' | 'method' | 'path' | 'status' | 'duration_ms'>>;

/** What the journal keeps of a request as it comes in. */
export function requestJournal(body: CreateResponseRequest, stream: boolean): JournalDetails {
  return { model: body.model, store: body.store !== false, stream, background: body.background === true };
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
