import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { canonicalJson, sha256Hex } from './canonical-json.ts';
import { compileValidator, describeViolation, ToolSchemaError, type Validator } from './tool-schemas.ts';
import type { SchemaJob, SchemaJobReply, SchemaThreadReady } from './schema-compiler.ts';

/**
 * The schema thread: compiles tool schemas and checks values against them, one job at a time,
 * off the loop of the process that asked (see schema-compiler.ts, which starts it and stops it
 * when a job runs past its deadline).
 */

// A lower CPU priority for this thread alone (Linux names a thread's id in /proc/thread-self):
// a request's huge schema then yields the cores to the server's loop and the programs. Not the
// lowest: on a machine kept busy by others, an honest schema must still compile well within
// its deadline (at nice 19 the thread gets ~1% of a core beside two busy processes).
try {
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), 5);
} catch {
  // Not Linux, or not allowed: compile at the process's priority.
}

const MAX_CACHED = 256;
const cache = new Map<string, Validator>();

function validatorOf(schema: Readonly<Record<string, unknown>>): Validator {
  const sha256 = sha256Hex(canonicalJson(schema));
  const cached = cache.get(sha256);
  if (cached) return cached;
  const validator = compileValidator(schema);
  if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
  cache.set(sha256, validator);
  return validator;
}

function failure(error: unknown): { error: string } {
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
parentPort!.postMessage({ ready: true } satisfies SchemaThreadReady);
