import { parentPort } from 'node:worker_threads';
import { lowerThreadPriority } from '../../../runtime/index.ts';
import { bodyBoundViolation, type BodyBoundViolation, type BodyBounds } from '../../../schemas/body-bounds.ts';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from '../../../schemas/json-depth.ts';
import { parseJsonText } from './json-text.ts';

/**
 * The thread that receives and parses large request bodies (json-body.ts starts it). A body's
 * chunks come here as they arrive, so the server's loop never holds a large body whole: joining
 * 25 MiB of chunks there took it ~10 ms and set off a full collection of its heap (~80 ms).
 * JSON.parse costs the loop that runs it about half a microsecond per distinct string (60,000
 * enum values take 35 ms, the 3 million short strings a 32 MiB body can hold 2.3 s); here the
 * loop pays only for receiving the parsed value, and nothing for one refused. Parsed as a small
 * body is on the loop (json-text.ts).
 */
export type JsonBodyMessage =
  | { readonly kind: 'chunk'; readonly id: number; readonly bytes: Uint8Array }
  /** The body is whole: parse it and answer. */
  | { readonly kind: 'end'; readonly id: number; readonly bounds: BodyBounds }
  /** The request failed before its end: forget its chunks. */
  | { readonly kind: 'drop'; readonly id: number };

export type JsonBodyReply =
  | { readonly id: number; readonly value: unknown }
  | { readonly id: number; readonly error: string }
  | { readonly id: number; readonly tooDeep: true }
  | { readonly id: number; readonly refused: BodyBoundViolation };

// Beside a busy loop, parsing yields the cores to it (thread-priority.ts).
lowerThreadPriority();

const bodies = new Map<number, Uint8Array[]>();

parentPort!.on('message', (message: JsonBodyMessage) => {
  switch (message.kind) {
    case 'chunk': {
      const chunks = bodies.get(message.id);
      if (chunks) chunks.push(message.bytes);
      else bodies.set(message.id, [message.bytes]);
      return;
    }
    case 'drop':
      bodies.delete(message.id);
      return;
    case 'end': {
      const chunks = bodies.get(message.id) ?? [];
      bodies.delete(message.id);
      parentPort!.postMessage(parsed(message.id, Buffer.concat(chunks), message.bounds));
    }
  }
});
parentPort!.postMessage({ ready: true });

function parsed(id: number, body: Buffer, bounds: BodyBounds): JsonBodyReply {
  try {
    const value = parseJsonText(body);
    // Checked here, not after: copying an absurdly nested value to the server's loop would overflow the stack that copies it.
    if (jsonDepthExceeds(value, MAX_JSON_DEPTH)) return { id, tooDeep: true };
    // Past a bound, only the refusal goes back: the loop neither receives nor validates the value.
    const refused = bodyBoundViolation(value, bounds);
    return refused ? { id, refused } : { id, value };
  } catch (error) {
    return { id, error: error instanceof Error ? error.message : String(error) };
  }
}
