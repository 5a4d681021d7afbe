import type { Knobs } from '../schemas/knobs.ts';
import type { ProgramTrace, TurnResult } from './conversation/turn.ts';
import type { StreamReport } from './streaming/paced-events.ts';
import type { Divergence } from './cassettes/divergence.ts';

/** What the journal keeps of a replayed request (docs/JOURNAL.md). */
export interface CassetteJournal {
  /** The entries that decided its turns. */
  readonly entries: readonly string[];
  /** What its recorded programs did otherwise here (none: the replay matched). */
  readonly divergences: readonly Divergence[];
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

/**
 * The most recent requests, newest last, in this process's memory: `GET /v1/emulator/journal`
 * lists them and `DELETE` clears them between tests. A request with `store: false` leaves only
 * metadata here (ids, statuses, item types, traces), never content.
 */
export class RequestJournal {
  readonly #capacity: number;
  #entries: JournalEntry[] = [];
  readonly #listeners = new Set<(entry: JournalEntry) => void>();

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  record(entry: JournalEntry): void {
    if (this.#capacity === 0) return;
    this.#entries.push(entry);
    if (this.#entries.length > this.#capacity) this.#entries.splice(0, this.#entries.length - this.#capacity);
    for (const listener of this.#listeners) listener(entry);
  }

  /** Calls `listener` with each entry recorded from now on (the events route); returns the unsubscribe. */
  subscribe(listener: (entry: JournalEntry) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Newest first. */
  list(limit: number): JournalEntry[] {
    return this.#entries.slice(-limit).reverse();
  }

  clear(): number {
    const cleared = this.#entries.length;
    this.#entries = [];
    return cleared;
  }
}
