import { randomUUID } from 'node:crypto';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { ConversationObject } from '../../../schemas/conversation.ts';
import type { ConversationItem } from '../../../schemas/items.ts';
import { UnknownCursorError, type ConversationStore, type ItemPage, type ItemPageQuery } from './conversation-store.ts';
import { transaction } from './sqlite-transaction.ts';

// `created_at` repeats what `body` holds so that conversations can be queried by age without
// parsing every body. The lock lives in the row so that taking it is one conditional UPDATE,
// which SQLite serialises across every process that opens the file.
const CREATE_CONVERSATIONS_TABLE = `
  CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    body TEXT NOT NULL,
    lock_token TEXT,
    locked_until INTEGER NOT NULL DEFAULT 0
  )`;

// `seq` is the items' order: AUTOINCREMENT never hands out a number again, even after the
// newest item is deleted, so an item appended later always sorts after every earlier one.
// The UNIQUE index also finds a conversation's items by id; the second one walks them in order.
const CREATE_ITEMS_TABLE = `
  CREATE TABLE IF NOT EXISTS conversation_items (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (conversation_id, item_id)
  );
  CREATE INDEX IF NOT EXISTS conversation_items_in_order ON conversation_items (conversation_id, seq)`;

// Bounds for a page without a cursor: AUTOINCREMENT numbers start at 1 and stay far below this.
const BEFORE_FIRST_SEQ = 0;
const AFTER_LAST_SEQ = Number.MAX_SAFE_INTEGER;

interface BodyRow {
  readonly body: string;
}

interface LockRow {
  readonly id: string;
  readonly lock_token: string;
  readonly locked_until: number;
  readonly now: number;
}

/**
 * Conversations in the SQLite file of the responses (SqliteResponseStore opens it): one row per
 * conversation, one per item. Every emulator process that opens the same file shares them,
 * their locks included.
 */
export class SqliteConversationStore implements ConversationStore {
  readonly #selectBody: StatementSync;
  readonly #exists: StatementSync;
  readonly #upsert: StatementSync;
  readonly #updateBody: StatementSync;
  readonly #delete: StatementSync;
  readonly #deleteItems: StatementSync;
  readonly #upsertItem: StatementSync;
  readonly #selectItems: StatementSync;
  readonly #selectItem: StatementSync;
  readonly #selectSeq: StatementSync;
  readonly #pageAsc: StatementSync;
  readonly #pageDesc: StatementSync;
  readonly #deleteItem: StatementSync;
  readonly #takeLock: StatementSync;
  readonly #releaseLock: StatementSync;
  readonly #createAll: (conversation: ConversationObject, items: readonly ConversationItem[]) => void;
  readonly #updateMetadata: (id: string, metadata: ConversationObject['metadata']) => ConversationObject | undefined;
  readonly #deleteAll: (id: string) => boolean;
  readonly #appendAll: (id: string, items: readonly ConversationItem[]) => boolean;
  readonly #readItems: (id: string) => ConversationItem[] | undefined;
  readonly #readPage: (id: string, query: ItemPageQuery) => ItemPage | undefined;
  readonly #lockOrFind: (row: LockRow) => 'taken' | 'held' | 'missing';

  constructor(db: DatabaseSync) {
    db.exec(CREATE_CONVERSATIONS_TABLE);
    db.exec(CREATE_ITEMS_TABLE);
    this.#selectBody = db.prepare('SELECT body FROM conversations WHERE id = ?');
    this.#exists = db.prepare('SELECT 1 AS found FROM conversations WHERE id = ?');
    // Creating an id again replaces that conversation, as the in-memory store does; the id is
    // meant to be new, so this only decides what a collision leaves behind.
    this.#upsert = db.prepare(`
      INSERT INTO conversations (id, created_at, body) VALUES (@id, @created_at, @body)
      ON CONFLICT (id) DO UPDATE SET
        created_at = excluded.created_at, body = excluded.body, lock_token = NULL, locked_until = 0`);
    this.#updateBody = db.prepare('UPDATE conversations SET body = @body WHERE id = @id');
    this.#delete = db.prepare('DELETE FROM conversations WHERE id = ?');
    this.#deleteItems = db.prepare('DELETE FROM conversation_items WHERE conversation_id = ?');
    // An id already in the conversation keeps its place and takes the new body, as in memory:
    // two appends racing past the caller's check must not fail on the UNIQUE index.
    this.#upsertItem = db.prepare(`
      INSERT INTO conversation_items (conversation_id, item_id, body) VALUES (@conversation_id, @item_id, @body)
      ON CONFLICT (conversation_id, item_id) DO UPDATE SET body = excluded.body`);
    this.#selectItems = db.prepare('SELECT body FROM conversation_items WHERE conversation_id = ? ORDER BY seq');
    this.#selectItem = db.prepare('SELECT body FROM conversation_items WHERE conversation_id = ? AND item_id = ?');
    this.#selectSeq = db.prepare('SELECT seq FROM conversation_items WHERE conversation_id = ? AND item_id = ?');
    this.#pageAsc = db.prepare('SELECT body FROM conversation_items WHERE conversation_id = ? AND seq > ? ORDER BY seq ASC LIMIT ?');
    this.#pageDesc = db.prepare('SELECT body FROM conversation_items WHERE conversation_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?');
    this.#deleteItem = db.prepare('DELETE FROM conversation_items WHERE conversation_id = ? AND item_id = ?');
    // One statement decides and takes: two processes cannot both see the lock free. The clocks
    // compared are those of processes sharing one file, so of one machine.
    this.#takeLock = db.prepare('UPDATE conversations SET lock_token = @lock_token, locked_until = @locked_until WHERE id = @id AND locked_until <= @now');
    // The token makes a holder whose lock expired, and was taken by another, release nothing.
    this.#releaseLock = db.prepare('UPDATE conversations SET locked_until = 0, lock_token = NULL WHERE id = ? AND lock_token = ?');

    this.#createAll = transaction(db, 'write', (conversation: ConversationObject, items: readonly ConversationItem[]) => {
      this.#deleteItems.run(conversation.id);
      this.#upsert.run({ id: conversation.id, created_at: conversation.created_at, body: JSON.stringify(conversation) });
      this.#insertItems(conversation.id, items);
    });
    this.#updateMetadata = transaction(db, 'write', (id: string, metadata: ConversationObject['metadata']) => {
      const row = this.#selectBody.get(id) as BodyRow | undefined;
      if (row === undefined) return undefined;
      const updated: ConversationObject = { ...(JSON.parse(row.body) as ConversationObject), metadata: { ...metadata } };
      this.#updateBody.run({ id, body: JSON.stringify(updated) });
      return updated;
    });
    this.#deleteAll = transaction(db, 'write', (id: string) => {
      this.#deleteItems.run(id);
      return this.#delete.run(id).changes > 0;
    });
    // The existence check and the inserts in one transaction: a delete committed in between
    // cannot leave items behind without their conversation.
    this.#appendAll = transaction(db, 'write', (id: string, items: readonly ConversationItem[]) => {
      if (this.#exists.get(id) === undefined) return false;
      this.#insertItems(id, items);
      return true;
    });
    // Reads of several statements run in a transaction so that they see one snapshot of the
    // file, not a write another process commits between them.
    this.#readItems = transaction(db, 'read', (id: string) => {
      if (this.#exists.get(id) === undefined) return undefined;
      return (this.#selectItems.all(id) as unknown as BodyRow[]).map((row) => JSON.parse(row.body) as ConversationItem);
    });
    this.#readPage = transaction(db, 'read', (id: string, query: ItemPageQuery) => {
      if (this.#exists.get(id) === undefined) return undefined;
      let from = query.order === 'asc' ? BEFORE_FIRST_SEQ : AFTER_LAST_SEQ;
      if (query.after !== undefined) {
        const cursor = this.#selectSeq.get(id, query.after) as { seq: number } | undefined;
        if (cursor === undefined) throw new UnknownCursorError(query.after);
        from = cursor.seq;
      }
      // One row past the page says whether more follow.
      const rows = (query.order === 'asc' ? this.#pageAsc : this.#pageDesc).all(id, from, query.limit + 1) as unknown as BodyRow[];
      return { data: rows.slice(0, query.limit).map((row) => JSON.parse(row.body) as ConversationItem), has_more: rows.length > query.limit };
    });
    this.#lockOrFind = transaction(db, 'write', (row: LockRow) => {
      if (this.#takeLock.run({ ...row }).changes > 0) return 'taken';
      return this.#exists.get(row.id) === undefined ? 'missing' : 'held';
    });
  }

  async create(conversation: ConversationObject, items: readonly ConversationItem[]): Promise<void> {
    this.#createAll(conversation, items);
  }

  async get(id: string): Promise<ConversationObject | undefined> {
    const row = this.#selectBody.get(id) as BodyRow | undefined;
    return row === undefined ? undefined : (JSON.parse(row.body) as ConversationObject);
  }

  async update(id: string, metadata: ConversationObject['metadata']): Promise<ConversationObject | undefined> {
    return this.#updateMetadata(id, metadata);
  }

  async delete(id: string): Promise<boolean> {
    return this.#deleteAll(id);
  }

  async append(id: string, items: readonly ConversationItem[]): Promise<boolean> {
    return this.#appendAll(id, items);
  }

  async items(id: string): Promise<ConversationItem[] | undefined> {
    return this.#readItems(id);
  }

  async existingIds(id: string, itemIds: readonly string[]): Promise<Set<string>> {
    return new Set(itemIds.filter((itemId) => this.#selectSeq.get(id, itemId) !== undefined));
  }

  async page(id: string, query: ItemPageQuery): Promise<ItemPage | undefined> {
    return this.#readPage(id, query);
  }

  async item(id: string, itemId: string): Promise<ConversationItem | undefined> {
    const row = this.#selectItem.get(id, itemId) as BodyRow | undefined;
    return row === undefined ? undefined : (JSON.parse(row.body) as ConversationItem);
  }

  async deleteItem(id: string, itemId: string): Promise<boolean> {
    return this.#deleteItem.run(id, itemId).changes > 0;
  }

  async lock(id: string, ttlMs: number): Promise<(() => Promise<void>) | undefined> {
    const token = randomUUID();
    const now = Date.now();
    const outcome = this.#lockOrFind({ id, lock_token: token, locked_until: now + ttlMs, now });
    // No conversation, nothing to guard: the caller finds it missing when it reads it.
    if (outcome === 'missing') return async () => {};
    if (outcome === 'held') return undefined;
    return async () => {
      this.#releaseLock.run(id, token);
    };
  }

  #insertItems(id: string, items: readonly ConversationItem[]): void {
    for (const item of items) this.#upsertItem.run({ conversation_id: id, item_id: item.id, body: JSON.stringify(item) });
  }
}
