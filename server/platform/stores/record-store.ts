/**
 * The Agents API's resources (agents, sessions and their items, vaults and their credentials)
 * and the webhook endpoints made through the API, kept beside the responses of the same store
 * so that a restart loses none of them. Each record is one JSON object addressed by its kind and
 * id, and may belong to a parent (a session's items, a vault's credentials); a kind lists, whole
 * or by parent, in the order its records were first put. A record changed later keeps its place.
 * Records are copied in and out.
 */
export const RECORD_KINDS = ['agent', 'session', 'session_item', 'vault', 'credential', 'automation', 'automation_invocation', 'webhook_endpoint'] as const;
export type RecordKind = (typeof RECORD_KINDS)[number];

export interface RecordStore {
  /** Creates or replaces a record; `parent` is given on every put of a child record, the same each time. */
  put(kind: RecordKind, id: string, value: object, parent?: string): Promise<void>;
  /**
   * Puts several records as one step, in one round trip to the store: no reader sees some of them
   * without the rest, and a value that cannot be stored leaves none put (what a change to a
   * session stores: its items and the record that counts on them).
   */
  putAll(records: readonly RecordPut[]): Promise<void>;
  get<T>(kind: RecordKind, id: string): Promise<T | undefined>;
  /** True when there was one; `parent` as it was put. */
  delete(kind: RecordKind, id: string, parent?: string): Promise<boolean>;
  /** Every record of the kind (of `parent` only, when given), oldest first. */
  list<T>(kind: RecordKind, parent?: string): Promise<T[]>;
  /** Deletes every record of the kind that belongs to `parent`. */
  deleteChildren(kind: RecordKind, parent: string): Promise<void>;
  /**
   * One page of a parent's records in `order`, after the record `after` names: only the page is
   * read. Undefined when `after` is not a record of that parent.
   */
  page<T>(kind: RecordKind, parent: string, query: RecordPageQuery): Promise<{ data: T[]; has_more: boolean } | undefined>;
}

/** One record of a putAll, as put() takes it. */
export interface RecordPut {
  readonly kind: RecordKind;
  readonly id: string;
  readonly value: object;
  readonly parent?: string | undefined;
}

export interface RecordPageQuery {
  readonly after?: string | undefined;
  readonly limit: number;
  readonly order: 'asc' | 'desc';
}

/** Records in this process's memory: gone on restart. */
export class MemoryRecordStore implements RecordStore {
  /** Each kind's records by id, in the order they were first put. */
  readonly #kinds = new Map<RecordKind, Map<string, { json: string; parent: string | undefined }>>();
  /** Each kind's children ids by parent, in order. */
  readonly #children = new Map<string, Set<string>>();

  async put(kind: RecordKind, id: string, value: object, parent?: string): Promise<void> {
    this.#putJson(kind, id, JSON.stringify(value), parent);
  }

  #putJson(kind: RecordKind, id: string, json: string, parent: string | undefined): void {
    this.#of(kind).set(id, { json, parent });
    if (parent !== undefined) {
      const key = `${kind}\u0000${parent}`;
      let ids = this.#children.get(key);
      if (!ids) this.#children.set(key, (ids = new Set()));
      ids.add(id);
    }
  }

  async putAll(records: readonly RecordPut[]): Promise<void> {
    // Serialized first, so that a value that cannot be stored leaves none of them put.
    const serialized = records.map((record) => JSON.stringify(record.value));
    records.forEach((record, index) => this.#putJson(record.kind, record.id, serialized[index]!, record.parent));
  }

  async get<T>(kind: RecordKind, id: string): Promise<T | undefined> {
    const record = this.#of(kind).get(id);
    return record === undefined ? undefined : (JSON.parse(record.json) as T);
  }

  async delete(kind: RecordKind, id: string): Promise<boolean> {
    const record = this.#of(kind).get(id);
    if (!record) return false;
    this.#of(kind).delete(id);
    if (record.parent !== undefined) this.#children.get(`${kind}\u0000${record.parent}`)?.delete(id);
    return true;
  }

  async list<T>(kind: RecordKind, parent?: string): Promise<T[]> {
    const records = this.#of(kind);
    const ids = parent === undefined ? [...records.keys()] : [...(this.#children.get(`${kind}\u0000${parent}`) ?? [])];
    return ids.map((id) => JSON.parse(records.get(id)!.json) as T);
  }

  async deleteChildren(kind: RecordKind, parent: string): Promise<void> {
    const key = `${kind}\u0000${parent}`;
    for (const id of this.#children.get(key) ?? []) this.#of(kind).delete(id);
    this.#children.delete(key);
  }

  async page<T>(kind: RecordKind, parent: string, query: RecordPageQuery): Promise<{ data: T[]; has_more: boolean } | undefined> {
    const ids = [...(this.#children.get(`${kind}\u0000${parent}`) ?? [])];
    if (query.order === 'desc') ids.reverse();
    let start = 0;
    if (query.after !== undefined) {
      const index = ids.indexOf(query.after);
      if (index < 0) return undefined;
      start = index + 1;
    }
    const records = this.#of(kind);
    return { data: ids.slice(start, start + query.limit).map((id) => JSON.parse(records.get(id)!.json) as T), has_more: start + query.limit < ids.length };
  }

  #of(kind: RecordKind): Map<string, { json: string; parent: string | undefined }> {
    let records = this.#kinds.get(kind);
    if (!records) this.#kinds.set(kind, (records = new Map()));
    return records;
  }
}
