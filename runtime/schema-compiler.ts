import type { ChildProcess } from 'node:child_process';
import { sha256Hex } from './canonical-json.ts';
import { startModuleProcess } from './module-process.ts';
import { cpuMsFromStat } from './proc-stat.ts';
import { SchemaDeadlineError, SchemaTooComplexError, ToolSchemaError } from './errors.ts';

/**
 * The way into tool schemas for the server and the runtime: compiling and checking happen in a
 * process of their own (schema-process.ts), so a schema that takes ajv seconds costs the loop
 * that serves requests, heartbeats and programs nothing. A job that runs past its deadline
 * kills the process (a compile cannot be interrupted otherwise) and fails with
 * SchemaDeadlineError; the jobs queued behind it go on in a fresh one. Jobs run one at a
 * time, and a job's deadline counts the process's CPU time from when it starts the job (on
 * Linux; elsewhere wall time): the process runs at a low priority, and on a busy machine an
 * honest schema may wait for a core without being failed for it. WALL_TIME_FACTOR times the
 * deadline in wall time ends a job however starved the process is. One process serves every
 * server of this process, started for the first job.
 */

type Schema = Readonly<Record<string, unknown>>;

type SchemaTask = { readonly op: 'compile'; readonly schemas: readonly Schema[] } | { readonly op: 'check'; readonly schema: Schema; readonly value: unknown; readonly root: string };

export type SchemaJob = SchemaTask & { readonly id: number };

export type SchemaJobReply =
  | { readonly id: number; readonly results: readonly ({ readonly source: string } | { readonly error: string; readonly tooComplex?: true })[] }
  | { readonly id: number; readonly violation: string | null }
  | { readonly id: number; readonly error: string };

/** What the process sends once it has loaded, before any reply. */
export interface SchemaProcessReady {
  readonly ready: true;
}

export interface CompiledSchema {
  /** The validator as a CommonJS module body for the isolate (see GUEST_SCHEMA_MODULES). */
  readonly source: string;
}


/** How long a job may take when its caller names no deadline: far beyond any honest schema. */
export const DEFAULT_SCHEMA_DEADLINE_MS = 10_000;

/** A job also ends after this many times its deadline in wall time, however little CPU it got. */
const WALL_TIME_FACTOR = 10;

/** CPU milliseconds a process has used, all its threads (Linux); undefined if unreadable. */
const processCpuMs = (pid: number): number | undefined => cpuMsFromStat(`/proc/${pid}/stat`);

const FROM_SOURCES = import.meta.url.endsWith('.ts');
const PROCESS_ENTRY = new URL(FROM_SOURCES ? './schema-process.ts' : './schema-process.js', import.meta.url);

interface Pending {
  readonly job: SchemaJob;
  readonly deadlineMs: number;
  readonly resolve: (reply: SchemaJobReply) => void;
  readonly reject: (error: Error) => void;
  timer?: NodeJS.Timeout;
}

/** How often a running job's CPU time is read: often enough that a deadline is kept to ~10%. */
function pollMs(deadlineMs: number): number {
  return Math.max(10, Math.min(100, Math.round(deadlineMs / 10)));
}

class SchemaProcess {
  #child: ChildProcess | undefined;
  /** Whether #child has loaded: a job is handed over (and its deadline starts) only then. */
  #ready = false;
  /** Jobs in order; the first is the one the process is running. One at a time, so that a job's deadline counts its own time only. */
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
    const child = head ? (this.#child ?? this.#start()) : this.#child;
    // While jobs wait, the process keeps this one alive for their replies; idle, it does not.
    keepAlive(child, head !== undefined);
    if (!head || !child || !this.#ready) return;
    this.#watch(head, child.pid);
    child.send(head.job);
  }

  #start(): ChildProcess {
    const child = startModuleProcess(PROCESS_ENTRY);
    this.#ready = false;
    child.on('message', (reply: SchemaJobReply | SchemaProcessReady) => {
      if (this.#child !== child) return;
      if ('ready' in reply) {
        this.#ready = true;
        this.#postHead();
        return;
      }
      const head = this.#queue[0];
      if (head?.job.id !== reply.id) return;
      this.#queue.shift();
      clearInterval(head.timer);
      head.resolve(reply);
      this.#postHead();
    });
    const lost = (error: Error): void => {
      if (this.#child !== child) return;
      this.#child = undefined;
      const head = this.#queue.shift();
      if (head) {
        clearInterval(head.timer);
        head.reject(error);
      }
      this.#postHead();
    };
    child.on('error', lost);
    child.on('exit', (code, signal) => lost(new Error(`The schema process exited (${signal ?? `code ${code}`})`)));
    this.#child = child;
    return child;
  }

  /** Starts the running job's deadline: its process's CPU time from now, or wall time if that cannot be read. */
  #watch(job: Pending, pid: number | undefined): void {
    const startedAt = Date.now();
    const cpuAtStart = pid === undefined ? undefined : processCpuMs(pid);
    job.timer = setInterval(() => {
      const wallMs = Date.now() - startedAt;
      const cpuNow = cpuAtStart === undefined ? undefined : processCpuMs(pid!);
      if (cpuNow === undefined ? wallMs >= job.deadlineMs : cpuNow - cpuAtStart! >= job.deadlineMs) {
        this.#expire(job, cpuNow === undefined ? `${job.deadlineMs} ms` : `${job.deadlineMs} ms of CPU time`);
      } else if (wallMs >= WALL_TIME_FACTOR * job.deadlineMs) {
        this.#expire(job, `${wallMs} ms (its process was starved of CPU)`);
      }
    }, pollMs(job.deadlineMs));
  }

  /** The running job took too long: it fails, the process is killed, the next job goes to a fresh one. */
  #expire(expired: Pending, measure: string): void {
    clearInterval(expired.timer);
    if (this.#queue[0] !== expired) return;
    this.#queue.shift();
    expired.reject(new SchemaDeadlineError(expired.deadlineMs, measure));
    const child = this.#child;
    this.#child = undefined;
    child?.kill('SIGKILL');
    this.#postHead();
  }
}

/** Whether the child (its process and its channel) keeps this process's loop alive. */
function keepAlive(child: ChildProcess | undefined, alive: boolean): void {
  if (!child) return;
  if (alive) {
    child.ref();
    child.channel?.ref();
  } else {
    child.unref();
    child.channel?.unref();
  }
}

const schemaProcess = new SchemaProcess();
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

/**
 * Compiles tool schemas, each result in the order given: the compiled schema, or the
 * ToolSchemaError that says why ajv could not (SchemaDeadlineError for every schema not done
 * when the deadline passed). Compiled schemas are cached by the hash of their JSON.
 */
export async function compileToolSchemas(schemas: readonly Schema[], deadlineMs = DEFAULT_SCHEMA_DEADLINE_MS): Promise<(CompiledSchema | ToolSchemaError)[]> {
  // Keyed by the hash of the schema's JSON as given (not canonical: sorting the keys of a huge
  // schema costs the loop more than compiling a reordered copy twice in the schema process).
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
      const reply = await schemaProcess.run({ op: 'compile', schemas: [...missing.values()] }, deadlineMs);
      if (!('results' in reply)) throw new Error('The schema process answered a compile with something else');
      [...missing.keys()].forEach((key, index) => {
        const result = reply.results[index]!;
        if ('error' in result) return results.set(key, result.tooComplex ? new SchemaTooComplexError(result.error) : new ToolSchemaError(result.error));
        const entry = { source: result.source };
        remember(key, entry);
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
  const reply = await schemaProcess.run({ op: 'check', schema, value, root }, deadlineMs);
  if ('error' in reply) throw new ToolSchemaError(reply.error);
  if (!('violation' in reply)) throw new Error('The schema process answered a check with something else');
  return reply.violation ?? undefined;
}
