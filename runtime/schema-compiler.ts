import type { Worker } from 'node:worker_threads';
import { sha256Hex } from './canonical-json.ts';
import { TextMemo } from './text-memo.ts';
import { startModuleThread } from './module-thread.ts';
import { FIXED_LIMITS } from '../schemas/fixed-limits.ts';
import { watchThreadDeadline } from './thread-deadline.ts';
import { SchemaDeadlineError, SchemaThreadBusyError, SchemaTooComplexError, ToolSchemaError } from './errors.ts';

/**
 * The way into tool schemas for the server and the runtime: compiling and checking happen in a
 * thread of their own (schema-thread.ts), so a schema that takes ajv seconds costs the loop
 * that serves requests, heartbeats and programs nothing. A job that runs past its deadline
 * stops the thread (a compile cannot be interrupted otherwise) and fails with
 * SchemaDeadlineError; the jobs queued behind it go on in a fresh thread (at most
 * FIXED_LIMITS.schemaJobQueue wait: one more is SchemaThreadBusyError). Jobs run one at a
 * time, and a job's deadline counts the thread's CPU time from when it starts the job (on
 * Linux; elsewhere wall time): the thread runs at a low priority, and on a busy machine an
 * honest schema may wait for a core without being failed for it (thread-deadline.ts).
 */

type Schema = Readonly<Record<string, unknown>>;

type SchemaTask =
  | { readonly op: 'compile'; readonly schemas: readonly Schema[] }
  | { readonly op: 'check'; readonly schema: Schema; readonly value: unknown; readonly root: string };

export type SchemaJob = SchemaTask & { readonly id: number };

export type SchemaJobReply =
  | { readonly id: number; readonly results: readonly ({ readonly source: string } | { readonly error: string; readonly tooComplex?: true })[] }
  | { readonly id: number; readonly violation: string | null }
  | { readonly id: number; readonly error: string };

/** What the thread sends once it has loaded, before any reply: its Linux thread id, if known. */
export interface SchemaThreadReady {
  readonly ready: true;
  readonly threadId: number | undefined;
}

export interface CompiledSchema {
  /** The validator as a CommonJS module body for the isolate (see GUEST_SCHEMA_MODULES). */
  readonly source: string;
}

/** How long a job may take when its caller names no deadline: far beyond any honest schema. */
export const DEFAULT_SCHEMA_DEADLINE_MS = 10_000;

/**
 * The schema thread's heap, in MiB. Without a bound, a schema that ran ajv out of memory would
 * abort the whole server; with it, only the thread ends (the job fails as too complex). The
 * largest schemas within the default PTC_MAX_SCHEMA_BYTES and the hosted API's limits take
 * ajv under 400 MiB (5,000 properties of twelve keywords each, 1 MiB).
 */
export const SCHEMA_THREAD_HEAP_MB = 1024;

/**
 * The schema thread's young generation, in MiB (V8's default gives it 32 MiB of new space, this
 * 128). Ajv makes garbage
 * fast, and each collection of a small young generation is work for V8's helper threads, which
 * run at the server's priority, not the thread's nice 10. Beside a client sending the costliest
 * schema within the limits, one after another, honest clients of `npm run bench:hostile` kept
 * 0.85–0.87 of their throughput with 256 MiB, 0.78–0.81 with the default (runs alternated).
 */
const SCHEMA_THREAD_YOUNG_MB = 256;

const FROM_SOURCES = import.meta.url.endsWith('.ts');
const THREAD_ENTRY = new URL(FROM_SOURCES ? './schema-thread.ts' : './schema-thread.js', import.meta.url);

interface Pending {
  readonly job: SchemaJob;
  readonly deadlineMs: number;
  readonly resolve: (reply: SchemaJobReply) => void;
  readonly reject: (error: Error) => void;
  stopWatching?: () => void;
}

class SchemaThread {
  #worker: Worker | undefined;
  /** Whether #worker has loaded: a job is handed over (and its deadline starts) only then. */
  #ready = false;
  /** #worker's Linux thread id, whose CPU time a job's deadline counts. */
  #threadId: number | undefined;
  /** Jobs in order; the first is the one the thread is running. One at a time, so that a job's deadline counts its own time only. */
  #queue: Pending[] = [];
  #nextId = 1;

  run(task: SchemaTask, deadlineMs: number): Promise<SchemaJobReply> {
    if (this.#queue.length >= FIXED_LIMITS.schemaJobQueue.value) {
      return Promise.reject(new SchemaThreadBusyError(`The schema thread has ${this.#queue.length} jobs waiting already`));
    }
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
    this.#watch(head);
    worker.postMessage(head.job);
  }

  #start(): Worker {
    const worker = startModuleThread(THREAD_ENTRY, { maxOldGenerationSizeMb: SCHEMA_THREAD_HEAP_MB, maxYoungGenerationSizeMb: SCHEMA_THREAD_YOUNG_MB });
    this.#ready = false;
    worker.on('message', (reply: SchemaJobReply | SchemaThreadReady) => {
      if (this.#worker !== worker) return;
      if ('ready' in reply) {
        this.#ready = true;
        this.#threadId = reply.threadId;
        this.#postHead();
        return;
      }
      const head = this.#queue[0];
      if (head?.job.id !== reply.id) return;
      this.#queue.shift();
      head.stopWatching?.();
      head.resolve(reply);
      if (this.#queue.length === 0) worker.unref();
      this.#postHead();
    });
    const lost = (error: Error): void => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      const head = this.#queue.shift();
      if (head) {
        head.stopWatching?.();
        const outOfMemory = (error as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY';
        head.reject(
          outOfMemory
            ? new SchemaTooComplexError(`ajv ran out of the ${SCHEMA_THREAD_HEAP_MB} MiB of heap it may use, compiling this request's schemas from this one on`)
            : error,
        );
      }
      this.#postHead();
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`The schema thread exited (code ${code})`)));
    this.#worker = worker;
    return worker;
  }

  /** Starts the running job's deadline (thread-deadline.ts). */
  #watch(job: Pending): void {
    job.stopWatching = watchThreadDeadline(this.#threadId, job.deadlineMs, (measure) => this.#expire(job, measure));
  }

  /** The running job took too long: it fails, the thread is stopped, the next job goes to a fresh one. */
  #expire(expired: Pending, measure: string): void {
    expired.stopWatching?.();
    if (this.#queue[0] !== expired) return;
    this.#queue.shift();
    expired.reject(new SchemaDeadlineError(expired.deadlineMs, measure));
    const worker = this.#worker;
    this.#worker = undefined;
    void worker?.terminate();
    this.#postHead();
  }
}

const thread = new SchemaThread();
const MAX_CACHED = 512;
/** Compiled schemas are code: the cache keeps at most this many characters of it. */
const MAX_CACHED_CHARS = 64 * 2 ** 20;
const compiled = new Map<string, CompiledSchema>();
let compiledChars = 0;

function remember(key: string, entry: CompiledSchema): void {
  // Two requests with the same new schema both compile it: the second replaces the first.
  const known = compiled.get(key);
  if (known) {
    compiled.delete(key);
    compiledChars -= known.source.length;
  }
  while (compiled.size > 0 && (compiled.size >= MAX_CACHED || compiledChars + entry.source.length > MAX_CACHED_CHARS)) {
    const [oldest, evicted] = compiled.entries().next().value!;
    compiled.delete(oldest);
    compiledChars -= evicted.source.length;
  }
  compiled.set(key, entry);
  compiledChars += entry.source.length;
}

/** The hashes of schemas' JSON seen before: each request brings its tools' schemas again. */
const hashedTexts = new TextMemo<string>(1_024, 4 * 2 ** 20);

/**
 * Compiles tool schemas, each result in the order given: the compiled schema, or the
 * ToolSchemaError that says why ajv could not (SchemaDeadlineError for every schema not done
 * when the deadline passed, SchemaTooComplexError for all when ajv ran out of memory). Compiled schemas are cached by the hash of their JSON.
 */
export async function compileToolSchemas(schemas: readonly Schema[], deadlineMs = DEFAULT_SCHEMA_DEADLINE_MS): Promise<(CompiledSchema | ToolSchemaError)[]> {
  // Keyed by the hash of the schema's JSON as given (not canonical: sorting the keys of a huge
  // schema costs the loop more than compiling a reordered copy twice in the thread).
  const keys = schemas.map((schema) => {
    const text = JSON.stringify(schema);
    return hashedTexts.get(text) ?? hashedTexts.set(text, sha256Hex(text));
  });
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
        if ('error' in result) return results.set(key, result.tooComplex ? new SchemaTooComplexError(result.error) : new ToolSchemaError(result.error));
        const entry = { source: result.source };
        remember(key, entry);
        return results.set(key, entry);
      });
    } catch (error) {
      // Past its deadline or out of memory, the job failed as a whole: every schema it had is too complex.
      if (!(error instanceof SchemaTooComplexError)) throw error;
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
