import type { JournalEntry } from '../../engine/journal-details.ts';

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
