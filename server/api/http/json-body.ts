import type { Worker } from 'node:worker_threads';
import { jsonDepthExceeds, MAX_JSON_DEPTH, startModuleThread } from '../../../runtime/index.ts';
import { bodyBoundViolation, type BodyBoundViolation, type BodyBounds } from '../../../schemas/body-bounds.ts';
import { FIXED_LIMITS } from '../../../schemas/fixed-limits.ts';
import { ApiError } from '../../platform/api-error.ts';
import type { JsonBodyMessage, JsonBodyReply } from './json-body-thread.ts';
import { parseJsonText } from './json-text.ts';

/**
 * Request bodies (and WebSocket messages) are parsed as JSON (json-text.ts): small ones on the
 * server's loop, large ones in a thread of their own (json-body-thread.ts), which receives their
 * chunks as they arrive: JSON.parse's cost grows with a body's strings, and a large body of
 * short ones would hold the loop for seconds. A body nested deeper than MAX_JSON_DEPTH is refused
 * either way (nothing downstream may recurse into it), and so is one past a bound of
 * schemas/body-bounds.ts, before anything validates it.
 */

/** Bodies of at least this many bytes are parsed in the thread (below it, parsing costs the loop at most a few milliseconds). */
export const OFF_LOOP_JSON_BYTES = 64 * 1024;

const FROM_SOURCES = import.meta.url.endsWith('.ts');
const THREAD_ENTRY = new URL(FROM_SOURCES ? './json-body-thread.ts' : './json-body-thread.js', import.meta.url);

/** A body on its way to the thread: its chunks written as they come, then parsed there. */
export interface BodyInThread {
  /** Sends a chunk, its memory handed to the thread (the caller does not read it again); `owned`: no other view shares that memory. */
  write(bytes: Uint8Array, owned?: boolean): void;
  /** The body is whole: its value, or why it is refused (see parseOffLoop). */
  end(bounds: BodyBounds): Promise<unknown>;
  /** The request failed: the thread forgets what it received. */
  drop(): void;
}

interface Parsing {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
}

/**
 * One thread, receiving any number of bodies at once and parsing them one at a time in the order
 * they ended, at most FIXED_LIMITS.jsonBodyQueue waiting; started when first needed, and not
 * keeping the process alive while idle.
 */
class JsonBodyThread {
  #worker: Worker | undefined;
  #nextId = 1;
  readonly #receiving = new Set<number>();
  readonly #parsing = new Map<number, Parsing>();

  open(): BodyInThread {
    const id = this.#nextId++;
    // Messages posted before the thread listens wait in its port.
    const worker = this.#worker ?? this.#start();
    this.#receiving.add(id);
    worker.ref();
    const post = (message: JsonBodyMessage, transfer: ArrayBuffer[] = []): void => {
      if (this.#worker === worker) worker.postMessage(message, transfer);
    };
    return {
      write: (bytes, owned = false) => {
        // A request's chunk has memory of its own (Node copies each out of the socket's reads):
        // it goes to the thread as it is, rather than a copy that would count against this heap
        // and bring on its collections sooner. A view of shared memory is copied.
        const own = owned || ownsItsMemory(bytes) ? bytes : new Uint8Array(bytes);
        post({ kind: 'chunk', id, bytes: own }, [own.buffer as ArrayBuffer]);
      },
      end: (bounds) => {
        this.#receiving.delete(id);
        if (this.#worker !== worker) return Promise.reject(new Error('The JSON body thread exited'));
        if (this.#parsing.size >= FIXED_LIMITS.jsonBodyQueue.value) {
          post({ kind: 'drop', id });
          this.#unrefIfIdle();
          return Promise.reject(
            new ApiError('server_busy', `The server is busy: ${this.#parsing.size} large bodies are waiting to be parsed. Retry shortly.`, null, {
              'retry-after': '1',
            }),
          );
        }
        return new Promise((resolve, reject) => {
          this.#parsing.set(id, { resolve, reject });
          post({ kind: 'end', id, bounds });
        });
      },
      drop: () => {
        if (!this.#receiving.delete(id)) return;
        post({ kind: 'drop', id });
        this.#unrefIfIdle();
      },
    };
  }

  #unrefIfIdle(): void {
    if (this.#receiving.size === 0 && this.#parsing.size === 0) this.#worker?.unref();
  }

  #start(): Worker {
    const worker = startModuleThread(THREAD_ENTRY);
    this.#worker = worker;
    worker.on('message', (reply: JsonBodyReply | { ready: true }) => {
      if (this.#worker !== worker || 'ready' in reply) return;
      const parsing = this.#parsing.get(reply.id);
      if (!parsing) return;
      this.#parsing.delete(reply.id);
      if ('error' in reply) parsing.reject(Object.assign(new SyntaxError(reply.error), { statusCode: 400 }));
      else if ('tooDeep' in reply) parsing.reject(tooDeep());
      else if ('refused' in reply) parsing.reject(pastBound(reply.refused));
      else parsing.resolve(reply.value);
      this.#unrefIfIdle();
    });
    const lost = (error: Error): void => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      // Bodies still arriving fail at their end (their stream sees the thread is gone).
      this.#receiving.clear();
      for (const parsing of this.#parsing.values()) parsing.reject(error);
      this.#parsing.clear();
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`The JSON body thread exited (code ${code})`)));
    return worker;
  }
}

const thread = new JsonBodyThread();

/** A large body's way to the thread, for a reader that gets it in chunks (json-body-reader.ts). */
export function openBodyInThread(): BodyInThread {
  return thread.open();
}

/** A body past one of schemas/body-bounds.ts's bounds: the 400 validation would have given. */
export const pastBound = ({ code, param, message }: BodyBoundViolation): ApiError => new ApiError(code, message, param);

/** A body nested past MAX_JSON_DEPTH: a 400 `invalid_json`, told apart by its class (the WebSocket answers it its own way). */
class BodyTooDeepError extends ApiError {
  constructor() {
    super('invalid_json', `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`);
  }
}

const tooDeep = (): ApiError => new BodyTooDeepError();

/** Whether a parse's error is the one for a body nested too deep. */
export function isTooDeep(error: unknown): boolean {
  return error instanceof BodyTooDeepError;
}

/** Whether bytes are all of their memory, which can then be handed to the thread: Buffer.concat's result is, a slice of Node's shared pool is not. */
function ownsItsMemory(bytes: Uint8Array): boolean {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && !(bytes.buffer instanceof SharedArrayBuffer);
}

/**
 * Parses a large body whole in the thread (a WebSocket message): its value, or a SyntaxError,
 * or the ApiError of a body too deep (isTooDeep() tells) or past a bound. The bytes are handed
 * to the thread: the caller does not read them again.
 */
export function parseOffLoop(body: Buffer, bounds: BodyBounds): Promise<unknown> {
  const inThread = thread.open();
  inThread.write(body);
  return inThread.end(bounds);
}

/** Parses a small body on the loop, held to the same checks: its value, or the error parseOffLoop would give. */
export function parseOnLoop(body: Buffer, bounds: BodyBounds): unknown {
  const value = parseJsonText(body);
  if (jsonDepthExceeds(value, MAX_JSON_DEPTH)) throw tooDeep();
  const refused = bodyBoundViolation(value, bounds);
  if (refused) throw pastBound(refused);
  return value;
}
