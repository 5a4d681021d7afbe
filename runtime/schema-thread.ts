import { parentPort } from 'node:worker_threads';
import { canonicalJson, sha256Hex } from './canonical-json.ts';
import { SchemaTooComplexError, ToolSchemaError } from './errors.ts';
import { lowerThreadPriority } from './thread-priority.ts';
import { compileValidator, describeViolation, type Validator } from './tool-schemas.ts';
import type { SchemaJob, SchemaJobReply, SchemaThreadReady } from './schema-compiler.ts';

/**
 * The schema thread: compiles tool schemas and checks values against them, one job at a time,
 * off the loop of the process that asked (see schema-compiler.ts, which starts it and stops it
 * when a job runs past its deadline).
 */

// A lower CPU priority for this thread (thread-priority.ts). A job's deadline is counted in this
// thread's CPU time (schema-compiler.ts reads it by this id), so an honest schema compiled
// slowly on a busy machine is not failed for the wait; where the id is unknown, deadlines are in wall time.
const threadId = lowerThreadPriority();

const MAX_CACHED = 256;
/** Validators hold their code: the cache keeps at most this many characters of it. */
const MAX_CACHED_CHARS = 64 * 2 ** 20;
const cache = new Map<string, Validator>();
let cachedChars = 0;

function validatorOf(schema: Readonly<Record<string, unknown>>): Validator {
  const sha256 = sha256Hex(canonicalJson(schema));
  const cached = cache.get(sha256);
  if (cached) return cached;
  const validator = compileValidator(schema);
  while (cache.size > 0 && (cache.size >= MAX_CACHED || cachedChars + validator.source.length > MAX_CACHED_CHARS)) {
    const [oldest, evicted] = cache.entries().next().value!;
    cache.delete(oldest);
    cachedChars -= evicted.source.length;
  }
  cache.set(sha256, validator);
  cachedChars += validator.source.length;
  return validator;
}

function failure(error: unknown): { error: string; tooComplex?: true } {
  if (error instanceof SchemaTooComplexError) return { error: error.message, tooComplex: true };
  if (error instanceof ToolSchemaError) return { error: error.message };
  // ajv's own recursion on a deeply nested schema overflows the stack: a schema it cannot compile.
  if (error instanceof RangeError) return { error: `ajv cannot compile it (${error.message})` };
  throw error;
}

function run(job: SchemaJob): SchemaJobReply {
  if (job.op === 'compile') {
    return {
      id: job.id,
      results: job.schemas.map((schema) => {
        try {
          return { source: validatorOf(schema).source };
        } catch (error) {
          return failure(error);
        }
      }),
    };
  }
  try {
    const { validate } = validatorOf(job.schema);
    return { id: job.id, violation: validate(job.value) ? null : describeViolation(validate.errors![0]!, job.root) };
  } catch (error) {
    return { id: job.id, ...failure(error) };
  }
}

parentPort!.on('message', (job: SchemaJob) => parentPort!.postMessage(run(job)));
// Loaded: jobs may come (their deadlines do not pay for this thread's start).
parentPort!.postMessage({ ready: true, threadId } satisfies SchemaThreadReady);
