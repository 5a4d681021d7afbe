import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { ResponseStore, StoredResponse } from './response-store.ts';

/** A row as the `responses` table holds it; `body` is the whole StoredResponse as JSON. */
interface ResponseRow {
  readonly id: string;
  readonly previous_response_id: string | null;
  readonly created_at: number;
  readonly body: string;
}

// `previous_response_id` and `created_at` repeat what `body` holds so that chains and age can
// be queried (and pruned) without parsing every body.
const CREATE_TABLE = `
  CREATE TABLE IF NOT EXISTS responses (
    id TEXT PRIMARY KEY,
    previous_response_id TEXT,
    created_at INTEGER NOT NULL,
    body TEXT NOT NULL
  )`;

/**
 * Responses in one SQLite file: the embedded default, which survives a restart. The file, its
 * directory and the table are created when the store is opened, so a fresh data directory
 * needs no setup; opening in the constructor makes an unwritable path fail at startup rather
 * than at the first `store: true` request.
 */
export class SqliteResponseStore implements ResponseStore {
  readonly #db: Database.Database;
  readonly #select: Database.Statement<[string], Pick<ResponseRow, 'body'>>;
  readonly #upsert: Database.Statement<[ResponseRow]>;
  readonly #delete: Database.Statement<[string]>;

  constructor(readonly filePath: string) {
    mkdirSync(dirname(filePath), { recursive: true });
    this.#db = new Database(filePath);
    // WAL lets readers proceed while a write commits; NORMAL skips the fsync on every commit,
    // which in WAL mode can lose the last transactions on power loss but never corrupts the file.
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = NORMAL');
    this.#db.exec(CREATE_TABLE);
    this.#select = this.#db.prepare('SELECT body FROM responses WHERE id = ?');
    // Putting an id again replaces it, as the in-memory store does.
    this.#upsert = this.#db.prepare(`
      INSERT INTO responses (id, previous_response_id, created_at, body)
      VALUES (@id, @previous_response_id, @created_at, @body)
      ON CONFLICT (id) DO UPDATE SET
        previous_response_id = excluded.previous_response_id,
        created_at = excluded.created_at,
        body = excluded.body`);
    this.#delete = this.#db.prepare('DELETE FROM responses WHERE id = ?');
  }

  async get(id: string): Promise<StoredResponse | undefined> {
    const row = this.#select.get(id);
    return row === undefined ? undefined : (JSON.parse(row.body) as StoredResponse);
  }

  async put(stored: StoredResponse): Promise<void> {
    const { response } = stored;
    this.#upsert.run({
      id: response.id,
      previous_response_id: response.previous_response_id,
      created_at: response.created_at,
      body: JSON.stringify(stored),
    });
  }

  async delete(id: string): Promise<boolean> {
    return this.#delete.run(id).changes > 0;
  }

  async close(): Promise<void> {
    // Closing the last connection checkpoints the WAL into the main file and removes it.
    if (this.#db.open) this.#db.close();
  }
}
