import { errorCodes, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Worker } from 'node:worker_threads';
import { jsonDepthExceeds, MAX_JSON_DEPTH, startModuleThread } from '../../../runtime/index.ts';
import { bodyBoundViolation, type BodyBoundViolation, type BodyBounds, type RouteBounds } from '../../../schemas/body-bounds.ts';
import { FIXED_LIMITS } from '../../../schemas/fixed-limits.ts';
import { ApiError } from '../../platform/api-error.ts';
import type { JsonBodyJob, JsonBodyReply } from './json-body-thread.ts';
import { parseJsonText } from './json-text.ts';

/**
 * Request bodies are parsed as JSON (json-text.ts): small ones on the server's loop,
 * large ones in a thread of their own (json-body-thread.ts), since JSON.parse's cost grows
 * with a body's strings and a large body of short ones would hold the loop for seconds. A body
 * nested deeper than MAX_JSON_DEPTH is refused either way: nothing downstream (validation
 * messages, usage, stores, the reply) may recurse into it.
 */

/** Bodies of at least this many bytes are parsed in the thread (below it, parsing costs the loop at most a few milliseconds). */
export const OFF_LOOP_JSON_BYTES = 64 * 1024;

const FROM_SOURCES = import.meta.url.endsWith('.ts');
const THREAD_ENTRY = new URL(FROM_SOURCES ? './json-body-thread.ts' : './json-body-thread.js', import.meta.url);

interface Pending {
  readonly job: JsonBodyJob;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
}

/**
 * One thread, one body at a time, in the order they came, at most FIXED_LIMITS.jsonBodyQueue
 * waiting; started when first needed, and not keeping the process alive while idle.
 */
class JsonBodyThread {
  #worker: Worker | undefined;
  #ready = false;
  #queue: Pending[] = [];
  #nextId = 1;

  parse(body: Uint8Array, bounds: BodyBounds): Promise<unknown> {
    if (this.#queue.length >= FIXED_LIMITS.jsonBodyQueue.value) {
      return Promise.reject(
        new ApiError('server_busy', `The server is busy: ${this.#queue.length} large bodies are waiting to be parsed. Retry shortly.`, null, {
          'retry-after': '1',
        }),
      );
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({ job: { id: this.#nextId++, body, bounds }, resolve, reject });
      if (this.#queue.length === 1) this.#postHead();
    });
  }

  #postHead(): void {
    const head = this.#queue[0];
    if (!head) {
      this.#worker?.unref();
      return;
    }
    const worker = this.#worker ?? this.#start();
    worker.ref();
    if (!this.#ready) return;
    try {
      // The body's memory goes to the thread rather than being copied; the request does not read it again.
      worker.postMessage(head.job, [head.job.body.buffer as ArrayBuffer]);
    } catch (error) {
      // Not sent, it would hold every body behind it: it fails alone.
      this.#queue.shift();
      head.reject(error as Error);
      this.#postHead();
    }
  }

  #start(): Worker {
    const worker = startModuleThread(THREAD_ENTRY);
    this.#worker = worker;
    this.#ready = false;
    worker.on('message', (reply: JsonBodyReply | { ready: true }) => {
      if (this.#worker !== worker) return;
      if ('ready' in reply) {
        this.#ready = true;
      } else if (this.#queue[0]?.job.id === reply.id) {
        const head = this.#queue.shift()!;
        if ('error' in reply) head.reject(Object.assign(new SyntaxError(reply.error), { statusCode: 400 }));
        else if ('tooDeep' in reply) head.reject(tooDeep());
        else if ('refused' in reply) head.reject(pastBound(reply.refused));
        else head.resolve(reply.value);
      }
      this.#postHead();
    });
    const lost = (error: Error): void => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      this.#queue.shift()?.reject(error);
      this.#postHead();
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`The JSON body thread exited (code ${code})`)));
    return worker;
  }
}

const thread = new JsonBodyThread();

/** A body past one of schemas/body-bounds.ts's bounds: the 400 validation would have given. */
export const pastBound = ({ code, param, message }: BodyBoundViolation): ApiError => new ApiError(code, message, param);

const tooDeep = (): ApiError => new ApiError('invalid_json', `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`);

/** A body of its own memory, which can be handed to the thread: Buffer.concat's result is, a slice of Node's shared pool is not. */
function ownMemory(body: Buffer): Uint8Array {
  return body.byteOffset === 0 && body.byteLength === body.buffer.byteLength ? body : new Uint8Array(body);
}

/**
 * Parses a large body in the thread (a WebSocket message as an HTTP body is): its value, or a
 * SyntaxError, or the ApiError of a body too deep or past a bound of schemas/body-bounds.ts
 * (isTooDeep() tells which). The bytes are handed to the thread: the caller does not read them again.
 */
export function parseOffLoop(body: Buffer, bounds: BodyBounds): Promise<unknown> {
  return thread.parse(ownMemory(body), bounds);
}

/** Whether parseOffLoop's error is the one for a body nested too deep. */
export function isTooDeep(error: unknown): boolean {
  return error instanceof ApiError && error.code === 'invalid_json' && error.message === tooDeep().message;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The bounds of schemas/body-bounds.ts that depend on the route (a Responses `input`'s items). */
    bodyBounds?: RouteBounds;
  }
}

/** Replaces Fastify's JSON parser with one that parses large bodies off the loop. */
export function parseJsonBodies(app: FastifyInstance, maxValues: number): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer' },
    (request: FastifyRequest, body: Buffer, done: (error: Error | null, value?: unknown) => void) => {
      const bounds: BodyBounds = { values: maxValues, ...request.routeOptions.config.bodyBounds };
      if (body.length === 0) return done(new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY());
      if (body.length < OFF_LOOP_JSON_BYTES) {
        let value: unknown;
        try {
          value = parseJsonText(body);
        } catch (error) {
          return done(error as Error);
        }
        if (jsonDepthExceeds(value, MAX_JSON_DEPTH)) return done(tooDeep());
        const refused = bodyBoundViolation(value, bounds);
        return refused ? done(pastBound(refused)) : done(null, value);
      }
      thread.parse(ownMemory(body), bounds).then(
        (value) => done(null, value),
        (error: Error) => done(error),
      );
    },
  );
}
