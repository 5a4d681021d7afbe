import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { RecordKind, RecordPageQuery, RecordPut, RecordStore } from './record-store.ts';
import { transaction } from './sqlite-transaction.ts';

const CREATE_TABLE = `
  CREATE TABLE IF NOT EXISTS agents_api_records (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    parent TEXT,
    body TEXT NOT NULL,
    UNIQUE (kind, id)
  );
  CREATE INDEX IF NOT EXISTS agents_api_records_by_parent ON agents_api_records (kind, parent, seq)`;

/** The Agents API's records in the SQLite file of the responses (table `agents_api_records`). */
export class SqliteRecordStore implements RecordStore {
  readonly #upsert: StatementSync;
  readonly #select: StatementSync;
  readonly #delete: StatementSync;
  readonly #list: StatementSync;
  readonly #listChildren: StatementSync;
  readonly #deleteChildren: StatementSync;
  readonly #seqOf: StatementSync;
  readonly #pageAsc: StatementSync;
  readonly #pageDesc: StatementSync;
  readonly #upsertAll: (records: readonly RecordPut[]) => void;

  constructor(db: DatabaseSync) {
    db.exec(CREATE_TABLE);
    // A replaced record keeps its seq, so its place in the list.
    this.#upsert = db.prepare(
      'INSERT INTO agents_api_records (kind, id, parent, body) VALUES (?, ?, ?, ?) ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body',
    );
    this.#select = db.prepare('SELECT body FROM agents_api_records WHERE kind = ? AND id = ?');
    this.#delete = db.prepare('DELETE FROM agents_api_records WHERE kind = ? AND id = ?');
    this.#list = db.prepare('SELECT body FROM agents_api_records WHERE kind = ? ORDER BY seq');
    this.#listChildren = db.prepare('SELECT body FROM agents_api_records WHERE kind = ? AND parent = ? ORDER BY seq');
    this.#deleteChildren = db.prepare('DELETE FROM agents_api_records WHERE kind = ? AND parent = ?');
    this.#seqOf = db.prepare('SELECT seq FROM agents_api_records WHERE kind = ? AND id = ? AND parent = ?');
    // One more than the page, to know whether more follow.
    this.#pageAsc = db.prepare('SELECT body FROM agents_api_records WHERE kind = ? AND parent = ? AND seq > ? ORDER BY seq LIMIT ?');
    this.#pageDesc = db.prepare('SELECT body FROM agents_api_records WHERE kind = ? AND parent = ? AND seq < ? ORDER BY seq DESC LIMIT ?');
    this.#upsertAll = transaction(db, 'write', (records: readonly RecordPut[]) => {
      for (const record of records) this.#upsert.run(record.kind, record.id, record.parent ?? null, JSON.stringify(record.value));
    });
  }

  async page<T>(kind: RecordKind, parent: string, query: RecordPageQuery): Promise<{ data: T[]; has_more: boolean } | undefined> {
    let from = query.order === 'asc' ? 0 : Number.MAX_SAFE_INTEGER;
    if (query.after !== undefined) {
      const row = this.#seqOf.get(kind, query.after, parent) as { seq: number } | undefined;
      if (row === undefined) return undefined;
      from = row.seq;
    }
    const rows = (query.order === 'asc' ? this.#pageAsc : this.#pageDesc).all(kind, parent, from, query.limit + 1) as { body: string }[];
    return { data: rows.slice(0, query.limit).map((row) => JSON.parse(row.body) as T), has_more: rows.length > query.limit };
  }

  async put(kind: RecordKind, id: string, value: object, parent?: string): Promise<void> {
    this.#upsert.run(kind, id, parent ?? null, JSON.stringify(value));
  }

  async putAll(records: readonly RecordPut[]): Promise<void> {
    this.#upsertAll(records);
  }

  async get<T>(kind: RecordKind, id: string): Promise<T | undefined> {
    const row = this.#select.get(kind, id) as { body: string } | undefined;
    return row === undefined ? undefined : (JSON.parse(row.body) as T);
  }

  async delete(kind: RecordKind, id: string): Promise<boolean> {
    return this.#delete.run(kind, id).changes > 0;
  }

  async list<T>(kind: RecordKind, parent?: string): Promise<T[]> {
    const rows = (parent === undefined ? this.#list.all(kind) : this.#listChildren.all(kind, parent)) as { body: string }[];
    return rows.map((row) => JSON.parse(row.body) as T);
  }

  async deleteChildren(kind: RecordKind, parent: string): Promise<void> {
    this.#deleteChildren.run(kind, parent);
  }
}
