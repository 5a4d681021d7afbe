import { parentPort } from 'node:worker_threads';
import { lowerThreadPriority } from '../../../runtime/index.ts';
import { bodyBoundViolation, type BodyBoundViolation, type BodyBounds } from '../../../schemas/body-bounds.ts';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from '../../../schemas/json-depth.ts';
import { parseJsonText } from './json-text.ts';

/**
 * The thread that parses large request bodies (json-body.ts starts it). JSON.parse costs the
 * loop that runs it about half a microsecond per distinct string: 60,000 enum values take
 * 35 ms, the 3 million short strings a 32 MiB body can hold 2.3 s. Here the server's loop
 * pays only for receiving the parsed value, about a quarter of that. Parsed as a small body
 * is on the loop (json-text.ts).
 */
export type JsonBodyJob = { readonly id: number; readonly body: Uint8Array; readonly bounds: BodyBounds };
export type JsonBodyReply =
  | { readonly id: number; readonly value: unknown }
  | { readonly id: number; readonly error: string }
  | { readonly id: number; readonly tooDeep: true }
  | { readonly id: number; readonly refused: BodyBoundViolation };

// Beside a busy loop, parsing yields the cores to it (thread-priority.ts).
lowerThreadPriority();

parentPort!.on('message', (job: JsonBodyJob) => {
  let reply: JsonBodyReply;
  try {
    const value = parseJsonText(Buffer.from(job.body.buffer, job.body.byteOffset, job.body.byteLength));
    // Checked here, not after: copying an absurdly nested value to the server's loop would overflow the stack that copies it.
    if (jsonDepthExceeds(value, MAX_JSON_DEPTH)) {
      reply = { id: job.id, tooDeep: true };
    } else {
      // Past a bound, only the refusal goes back: the loop neither receives nor validates the value.
      const refused = bodyBoundViolation(value, job.bounds);
      reply = refused ? { id: job.id, refused } : { id: job.id, value };
    }
  } catch (error) {
    reply = { id: job.id, error: error instanceof Error ? error.message : String(error) };
  }
  parentPort!.postMessage(reply);
});
parentPort!.postMessage({ ready: true });
