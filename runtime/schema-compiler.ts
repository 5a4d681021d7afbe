import { Worker } from 'node:worker_threads';
import { sha256Hex } from './canonical-json.ts';
import { ToolSchemaError } from './tool-schemas.ts';

/**
 * The way into tool schemas for the server and the runtime: compiling and checking happen in a
 * thread of their own (schema-thread.ts), so a schema that takes ajv seconds costs the loop
 * that serves requests, heartbeats and programs nothing. A job that runs past its deadline
 * stops the thread (a compile cannot be interrupted otherwise) and fails with
 * SchemaDeadlineError; the jobs queued behind it go on in a fresh thread. Jobs run one at a
 * time, and a job's deadline runs from when the thread starts it, not while it waits.
 */

type Schema = Readonly<Record<string, unknown>>;

type SchemaTask = { readonly op: 'compile'; readonly schemas: readonly Schema[] } | { readonly op: 'check'; readonly schema: Schema; readonly value: unknown; readonly root: string };

export type SchemaJob = SchemaTask & { readonly id: number };

export type SchemaJobReply =
  | { readonly id: number; readonly results: readonly ({ readonly source: string } | { readonly error: string })[] }
  | { readonly id: number; readonly violation: string | null }
  | { readonly id: number; readonly error: string };

/** What the thread sends once it has loaded, before any reply. */
export interface SchemaThreadReady {
  readonly ready: true;
}

export interface CompiledSchema {
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
  /** Whether #worker has loaded: a job is handed over (and its deadline starts) only then. */
  #ready = false;
  /** Jobs in order; the first is the one the thread is running. One at a time, so that a job's deadline counts its own time only. */
  #queue: Pending[] = [];
  #nextId = 1;

  run(task: SchemaTask, deadlineMs: number): Promise<SchemaJobReply> {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#queue.push({ job: { ...task, id }, deadlineMs, resolve, reject });
      if (this.#queue.length === 1) this.#postHead();
    });
  }

  #postHead(): void {
    const head = this.#queue[0];
    if (!head) return;
    const worker = this.#worker ?? this.#start();
    // While jobs wait, the thread keeps the process alive for their replies; idle, it does not.
    worker.ref();
    if (!this.#ready) return;
    head.timer = setTimeout(() => this.#expire(head), head.deadlineMs);
    worker.postMessage(head.job);
  }

  #start(): Worker {
    const worker = startThread();
    this.#ready = false;
    worker.on('message', (reply: SchemaJobReply | SchemaThreadReady) => {
      if (this.#worker !== worker) return;
      if ('ready' in reply) {
        this.#ready = true;
        this.#postHead();
        return;
      }
      const head = this.#queue[0];
      if (head?.job.id !== reply.id) return;
      this.#queue.shift();
      clearTimeout(head.timer);
      head.resolve(reply);
      if (this.#queue.length === 0) worker.unref();
      this.#postHead();
    });
    const lost = (error: Error): void => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      const head = this.#queue.shift();
      if (head) {
        clearTimeout(head.timer);
        head.reject(error);
      }
      this.#postHead();
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`The schema thread exited (code ${code})`)));
    this.#worker = worker;
    return worker;
  }

  /** The running job took too long: it fails, the thread is stopped, the next job goes to a fresh one. */
  #expire(expired: Pending): void {
    if (this.#queue[0] !== expired) return;
    this.#queue.shift();
    expired.reject(new SchemaDeadlineError(expired.deadlineMs));
    const worker = this.#worker;
    this.#worker = undefined;
    void worker?.terminate();
    this.#postHead();
  }
}

const thread = new SchemaThread();
const MAX_CACHED = 512;
const compiled = new Map<string, CompiledSchema>();

/**
 * Compiles tool schemas, each result in the order given: the compiled schema, or the
 * ToolSchemaError that says why ajv could not (SchemaDeadlineError for every schema not done
 * when the deadline passed). Compiled schemas are cached by the hash of their JSON.
 */
export async function compileToolSchemas(schemas: readonly Schema[], deadlineMs = DEFAULT_SCHEMA_DEADLINE_MS): Promise<(CompiledSchema | ToolSchemaError)[]> {
  // Keyed by the hash of the schema's JSON as given (not canonical: sorting the keys of a huge
  // schema costs the loop more than compiling a reordered copy twice in the thread).
  const keys = schemas.map((schema) => sha256Hex(JSON.stringify(schema)));
  const results = new Map<string, CompiledSchema | ToolSchemaError>();
  const missing = new Map<string, Schema>();
  keys.forEach((key, index) => {
    const known = compiled.get(key);
    if (known) results.set(key, known);
    else missing.set(key, schemas[index]!);
  });
  if (missing.size > 0) {
    try {
      const reply = await thread.run({ op: 'compile', schemas: [...missing.values()] }, deadlineMs);
      if (!('results' in reply)) throw new Error('The schema thread answered a compile with something else');
      [...missing.keys()].forEach((key, index) => {
        const result = reply.results[index]!;
        if ('error' in result) return results.set(key, new ToolSchemaError(result.error));
        const entry = { source: result.source };
        if (compiled.size >= MAX_CACHED) compiled.delete(compiled.keys().next().value!);
        compiled.set(key, entry);
        return results.set(key, entry);
      });
    } catch (error) {
      if (!(error instanceof SchemaDeadlineError)) throw error;
      for (const key of missing.keys()) results.set(key, error);
    }
  }
  return keys.map((key) => results.get(key)!);
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
