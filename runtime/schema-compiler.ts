import { Worker } from 'node:worker_threads';
import { canonicalJson, sha256Hex } from './canonical-json.ts';
import { ToolSchemaError } from './tool-schemas.ts';

/**
 * The way into tool schemas for the server and the runtime: compiling and checking happen in a
 * thread of their own (schema-thread.ts), so a schema that takes ajv seconds costs the loop
 * that serves requests, heartbeats and programs nothing. A job that runs past its deadline
 * stops the thread (a compile cannot be interrupted otherwise) and fails with
 * SchemaDeadlineError; the jobs queued behind it go on in a fresh thread.
 */

type Schema = Readonly<Record<string, unknown>>;

type SchemaTask = { readonly op: 'compile'; readonly schemas: readonly Schema[] } | { readonly op: 'check'; readonly schema: Schema; readonly value: unknown; readonly root: string };

export type SchemaJob = SchemaTask & { readonly id: number };

export type SchemaJobReply =
  | { readonly id: number; readonly results: readonly ({ readonly source: string } | { readonly error: string })[] }
  | { readonly id: number; readonly violation: string | null }
  | { readonly id: number; readonly error: string };

export interface CompiledSchema {
  /** sha256 of the schema's canonical JSON: what a fingerprint seals. */
  readonly sha256: string;
  /** The validator as a CommonJS module body for the isolate (see GUEST_SCHEMA_MODULES). */
  readonly source: string;
}

/** ajv took longer than the job's deadline over a schema. */
export class SchemaDeadlineError extends ToolSchemaError {
  constructor(readonly deadlineMs: number) {
    super(`ajv did not compile it within ${deadlineMs} ms`);
  }
}

/** How long a job may take when its caller names no deadline: far beyond any honest schema. */
export const DEFAULT_SCHEMA_DEADLINE_MS = 10_000;

const FROM_SOURCES = import.meta.url.endsWith('.ts');
const THREAD_ENTRY = new URL(FROM_SOURCES ? './schema-thread.ts' : './schema-thread.js', import.meta.url);

/** The thread; from the TypeScript sources, its entry is loaded through tsx's loader. */
function startThread(): Worker {
  if (!FROM_SOURCES) return new Worker(THREAD_ENTRY);
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  return new Worker(`import(${tsx}).then(({ register }) => { register(); return import(${JSON.stringify(THREAD_ENTRY.href)}); })`, { eval: true });
}

interface Pending {
  readonly job: SchemaJob;
  readonly deadlineMs: number;
  readonly resolve: (reply: SchemaJobReply) => void;
  readonly reject: (error: Error) => void;
  timer?: NodeJS.Timeout;
}

class SchemaThread {
  #worker: Worker | undefined;
  #pending = new Map<number, Pending>();
  #nextId = 1;

  run(task: SchemaTask, deadlineMs: number): Promise<SchemaJobReply> {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      const pending: Pending = { job: { ...task, id }, deadlineMs, resolve, reject };
      this.#pending.set(id, pending);
      this.#post(pending);
    });
  }

  #post(pending: Pending): void {
    const worker = this.#worker ?? this.#start();
    // The deadline runs from when the job is handed over, so a job does not pay for the one
    // before it being stopped.
    clearTimeout(pending.timer);
    pending.timer = setTimeout(() => this.#expire(pending), pending.deadlineMs);
    pending.timer.unref();
    worker.postMessage(pending.job);
  }

  #start(): Worker {
    const worker = startThread();
    // The thread never keeps a process alive: a job waited on does, through its timer's promise.
    worker.unref();
    worker.on('message', (reply: SchemaJobReply) => {
      const pending = this.#pending.get(reply.id);
      if (!pending) return;
      this.#pending.delete(reply.id);
      clearTimeout(pending.timer);
      pending.resolve(reply);
    });
    const lost = (error: Error): void => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      for (const pending of this.#pending.values()) {
        clearTimeout(pending.timer);
        pending.reject(error);
      }
      this.#pending.clear();
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`The schema thread exited (code ${code})`)));
    this.#worker = worker;
    return worker;
  }

  #expire(expired: Pending): void {
    this.#pending.delete(expired.job.id);
    expired.reject(new SchemaDeadlineError(expired.deadlineMs));
    const worker = this.#worker;
    this.#worker = undefined;
    void worker?.terminate();
    for (const pending of this.#pending.values()) this.#post(pending);
  }
}

const thread = new SchemaThread();
const MAX_CACHED = 512;
const compiled = new Map<string, CompiledSchema>();

/**
 * Compiles tool schemas, each result in the order given: the compiled schema, or the
 * ToolSchemaError that says why ajv could not (SchemaDeadlineError for every schema not done
 * when the deadline passed). Compiled schemas are cached by content.
 */
export async function compileToolSchemas(schemas: readonly Schema[], deadlineMs = DEFAULT_SCHEMA_DEADLINE_MS): Promise<(CompiledSchema | ToolSchemaError)[]> {
  const hashes = schemas.map((schema) => sha256Hex(canonicalJson(schema)));
  const results = new Map<string, CompiledSchema | ToolSchemaError>();
  const missing = new Map<string, Schema>();
  hashes.forEach((sha256, index) => {
    const known = compiled.get(sha256);
    if (known) results.set(sha256, known);
    else missing.set(sha256, schemas[index]!);
  });
  if (missing.size > 0) {
    try {
      const reply = await thread.run({ op: 'compile', schemas: [...missing.values()] }, deadlineMs);
      if (!('results' in reply)) throw new Error('The schema thread answered a compile with something else');
      [...missing.keys()].forEach((sha256, index) => {
        const result = reply.results[index]!;
        if ('error' in result) return results.set(sha256, new ToolSchemaError(result.error));
        const entry = { sha256, source: result.source };
        if (compiled.size >= MAX_CACHED) compiled.delete(compiled.keys().next().value!);
        compiled.set(sha256, entry);
        return results.set(sha256, entry);
      });
    } catch (error) {
      if (!(error instanceof SchemaDeadlineError)) throw error;
      for (const sha256 of missing.keys()) results.set(sha256, error);
    }
  }
  return hashes.map((sha256) => results.get(sha256)!);
}

/** Compiles one tool schema; throws the ToolSchemaError that says why ajv could not. */
export async function compileToolSchema(schema: Schema, deadlineMs = DEFAULT_SCHEMA_DEADLINE_MS): Promise<CompiledSchema> {
  const [result] = await compileToolSchemas([schema], deadlineMs);
  if (result instanceof ToolSchemaError) throw result;
  return result!;
}

/**
 * The first violation of `value` against `schema`, described with `root` as the name of the
 * whole value; undefined when it conforms. Throws ToolSchemaError when the schema does not compile.
 */
export async function checkAgainstSchema(schema: Schema, value: unknown, root: string, deadlineMs = DEFAULT_SCHEMA_DEADLINE_MS): Promise<string | undefined> {
  const reply = await thread.run({ op: 'check', schema, value, root }, deadlineMs);
  if ('error' in reply) throw new ToolSchemaError(reply.error);
  if (!('violation' in reply)) throw new Error('The schema thread answered a check with something else');
  return reply.violation ?? undefined;
}
