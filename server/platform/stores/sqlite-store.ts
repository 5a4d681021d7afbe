import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { ConversationItem } from '../../../schemas/items.ts';
import { UNFINISHED_STATUSES, type ResponseStore, type StoredResponse } from './response-store.ts';
import { SqliteRecordStore } from './sqlite-records.ts';
import { SqliteConversationStore } from './sqlite-conversations.ts';
import { transaction } from './sqlite-transaction.ts';

/** A row as the `responses` table holds it; `body` is the whole StoredResponse as JSON. */
interface ResponseRow {
  readonly id: string;
  readonly previous_response_id: string | null;
  readonly created_at: number;
  readonly status: string;
  readonly body: string;
}

type BodyRow = Pick<ResponseRow, 'body'>;

const BUSY_TIMEOUT_MS = 5_000;

// `previous_response_id` and `created_at` repeat what `body` holds so that chains and age can
// be queried (and pruned) without parsing every body.
const CREATE_TABLE = `
  CREATE TABLE IF NOT EXISTS responses (
    id TEXT PRIMARY KEY,
    previous_response_id TEXT,
    created_at INTEGER NOT NULL,
    body TEXT NOT NULL
  )`;

// Which response emitted each output item, and the item as JSON, so that an item can be read
// back by its id (an mcp_call resent without its output, an item_reference) without reading its
// response. Responses stored before this table existed are not in it; rows written before the
// `body` column existed have none (their item is read from the response's body).
const CREATE_ITEMS_TABLE = `
  CREATE TABLE IF NOT EXISTS response_items (
    item_id TEXT PRIMARY KEY,
    response_id TEXT NOT NULL
  );
  CREATE INDEX IF NOT EXISTS response_items_by_response ON response_items (response_id)`;

/**
 * Responses in one SQLite file: the embedded default, which survives a restart. The same file
 * holds the conversations (tables `conversations` and `conversation_items`, see
 * SqliteConversationStore), so one file is the whole state. The file, its directory and the
 * tables are created when the store is opened, so a fresh data directory needs no setup;
 * opening in the constructor makes an unwritable path fail at startup rather than at the first
 * `store: true` request.
 */
export class SqliteResponseStore implements ResponseStore {
  readonly #db: DatabaseSync;
  readonly #select: StatementSync;
  readonly #upsert: StatementSync;
  readonly #delete: StatementSync;
  readonly #deleteItems: StatementSync;
  readonly #upsertItem: StatementSync;
  readonly #selectItemOwner: StatementSync;
  readonly #selectItemBytes: StatementSync;
  readonly #selectStatus: StatementSync;
  readonly #putAll: (stored: StoredResponse) => void;
  readonly #putIfUnfinished: (stored: StoredResponse) => boolean;
  readonly #deleteAll: (id: string) => boolean;
  readonly conversations: SqliteConversationStore;
  readonly records: SqliteRecordStore;

  constructor(readonly filePath: string) {
    mkdirSync(dirname(filePath), { recursive: true });
    // A process waits up to 5 s for another's write lock (instances sharing one file) before
    // SQLITE_BUSY, as better-sqlite3, the driver before node:sqlite, did by default.
    // Loaded when a store opens, not when this module does: on a Node.js without node:sqlite the
    // package's entry points can then say which Node it needs (runtime/node-version.ts).
    const { DatabaseSync: Database } = process.getBuiltinModule('node:sqlite');
    this.#db = new Database(filePath, { timeout: BUSY_TIMEOUT_MS });
    // WAL lets readers proceed while a write commits; NORMAL skips the fsync on every commit,
    // which in WAL mode can lose the last transactions on power loss but never corrupts the file.
    this.#db.exec('PRAGMA journal_mode = WAL');
    this.#db.exec('PRAGMA synchronous = NORMAL');
    this.#db.exec(CREATE_TABLE);
    this.#db.exec(CREATE_ITEMS_TABLE);
    // Added in place to a file an earlier version made (a table cannot be created over it).
    const columns = this.#db.prepare('PRAGMA table_info(response_items)').all() as { name: string }[];
    if (!columns.some((column) => column.name === 'body')) this.#db.exec('ALTER TABLE response_items ADD COLUMN body TEXT');
    this.conversations = new SqliteConversationStore(this.#db);
    this.records = new SqliteRecordStore(this.#db);
    // The status, repeated so that a conditional put reads no body (null in rows of an earlier version).
    const responseColumns = this.#db.prepare('PRAGMA table_info(responses)').all() as { name: string }[];
    if (!responseColumns.some((column) => column.name === 'status')) this.#db.exec('ALTER TABLE responses ADD COLUMN status TEXT');
    this.#select = this.#db.prepare('SELECT body FROM responses WHERE id = ?');
    this.#selectStatus = this.#db.prepare("SELECT COALESCE(status, json_extract(body, '$.response.status')) AS status FROM responses WHERE id = ?");
    // Putting an id again replaces it, as the in-memory store does.
    this.#upsert = this.#db.prepare(`
      INSERT INTO responses (id, previous_response_id, created_at, status, body)
      VALUES (@id, @previous_response_id, @created_at, @status, @body)
      ON CONFLICT (id) DO UPDATE SET
        previous_response_id = excluded.previous_response_id,
        created_at = excluded.created_at,
        status = excluded.status,
        body = excluded.body`);
    this.#delete = this.#db.prepare('DELETE FROM responses WHERE id = ?');
    this.#deleteItems = this.#db.prepare('DELETE FROM response_items WHERE response_id = ?');
    this.#upsertItem = this.#db.prepare(`
      INSERT INTO response_items (item_id, response_id, body) VALUES (@item_id, @response_id, @body)
      ON CONFLICT (item_id) DO UPDATE SET response_id = excluded.response_id, body = excluded.body`);
    this.#selectItemOwner = this.#db.prepare('SELECT response_id, body FROM response_items WHERE item_id = ?');
    // octet_length reads the size from the record, not the text.
    this.#selectItemBytes = this.#db.prepare(`
      SELECT COALESCE(octet_length(items.body), octet_length(responses.body), 0) AS bytes
      FROM response_items AS items LEFT JOIN responses ON responses.id = items.response_id
      WHERE items.item_id = ?`);
    // A response and its items' index change together.
    const write = (stored: StoredResponse): void => {
      const { response } = stored;
      this.#upsert.run({
        id: response.id,
        previous_response_id: response.previous_response_id ?? null,
        created_at: response.created_at,
        status: response.status,
        body: JSON.stringify(stored),
      } satisfies ResponseRow);
      this.#deleteItems.run(response.id);
      for (const item of response.output) this.#upsertItem.run({ item_id: item.id, response_id: response.id, body: JSON.stringify(item) });
    };
    this.#putAll = transaction(this.#db, 'write', write);
    // Read and written under one write lock: another process's write waits for it, or it for that.
    this.#putIfUnfinished = transaction(this.#db, 'write', (stored: StoredResponse): boolean => {
      const row = this.#selectStatus.get(stored.response.id) as { status: string | null } | undefined;
      if (row?.status == null || !UNFINISHED_STATUSES.has(row.status)) return false;
      write(stored);
      return true;
    });
    this.#deleteAll = transaction(this.#db, 'write', (id: string) => {
      this.#deleteItems.run(id);
      return this.#delete.run(id).changes > 0;
    });
  }

  async get(id: string): Promise<StoredResponse | undefined> {
    const row = this.#select.get(id) as BodyRow | undefined;
    return row === undefined ? undefined : (JSON.parse(row.body) as StoredResponse);
  }

  async put(stored: StoredResponse): Promise<void> {
    this.#putAll(stored);
  }

  async putIfUnfinished(stored: StoredResponse): Promise<boolean> {
    return this.#putIfUnfinished(stored);
  }

  async delete(id: string): Promise<boolean> {
    return this.#deleteAll(id);
  }

  async outputItemBytes(ids: readonly string[]): Promise<Map<string, number>> {
    const found = new Map<string, number>();
    for (const itemId of ids) {
      const row = this.#selectItemBytes.get(itemId) as { bytes: number } | undefined;
      if (row !== undefined) found.set(itemId, row.bytes);
    }
    return found;
  }

  async outputItems(ids: readonly string[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    // An item whose row has no body (written by an earlier version) is read from its response's
    // body, each such response parsed once however many of its items are asked for.
    const legacyOutputs = new Map<string, Map<string, ConversationItem>>();
    for (const itemId of ids) {
      const row = this.#selectItemOwner.get(itemId) as { response_id: string; body: string | null } | undefined;
      if (row === undefined) continue;
      if (row.body !== null) {
        found.set(itemId, row.body);
        continue;
      }
      let output = legacyOutputs.get(row.response_id);
      if (!output) {
        const owner = this.#select.get(row.response_id) as BodyRow | undefined;
        output = new Map(
          (owner === undefined ? [] : (JSON.parse(owner.body) as StoredResponse).response.output).map((item) => [item.id, item as ConversationItem]),
        );
        legacyOutputs.set(row.response_id, output);
      }
      const item = output.get(itemId);
      if (item) found.set(itemId, JSON.stringify(item));
    }
    return found;
  }

  async close(): Promise<void> {
    // Closing the last connection checkpoints the WAL into the main file and removes it.
    if (this.#db.isOpen) this.#db.close();
  }
}
