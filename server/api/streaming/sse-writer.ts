import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Knobs } from '../../../schemas/knobs.ts';
import type { StreamEvent, UnnumberedStreamEvent } from '../../../schemas/stream-events.ts';
import { isPaced, pacedEvents, type StreamReport } from './paced-events.ts';

/** One Server-Sent Event as the hosted API writes it: the type as `event:`, the JSON as `data:`. */
function frame(event: StreamEvent): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** How much of a stream, in characters, goes out in one write when nothing paces it. */
export const BATCH_CHARS = 64 * 1024;

/**
 * Writes a response's events as Server-Sent Events, numbering them from 0 in order; only those
 * after `startingAfter` are sent (a replayed stream resumes where the client left). The stream
 * knobs apply (paced-events.ts): a pause before each event, and an abrupt end after N events.
 */
export async function writeEventStream(
  request: FastifyRequest,
  reply: FastifyReply,
  events: readonly UnnumberedStreamEvent[],
  knobs: Knobs,
  startingAfter = -1,
): Promise<StreamReport> {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-request-id': request.id,
  });
  const pauses: number[] = [];
  const report = (cut: boolean): StreamReport => ({ events_sent: pauses.length, pauses_ms: pauses, cut });
  // Waiting for each write to flush keeps memory bounded for slow readers, and makes a cut
  // stream deliver every event written before it (destroy drops unflushed writes).
  const write = (text: string): Promise<void> => new Promise<void>((resolve) => raw.write(text, () => resolve()));
  // Without pauses or a cut to honour, events go out in writes of up to BATCH_CHARS: the same
  // bytes, a fraction of the work per event (a 300,000-character text is ~75,000 delta events),
  // and the loop is given back between writes.
  const paced = isPaced(knobs);
  let batch = '';
  for (const step of pacedEvents(events, knobs, startingAfter)) {
    if (raw.destroyed) return report(false);
    if ('cut' in step) {
      // What a dropped connection looks like to the client: no terminal event, no clean end.
      raw.destroy();
      return report(true);
    }
    const framed = frame(step.event);
    pauses.push(step.pause);
    if (!paced) {
      batch += framed;
      if (batch.length >= BATCH_CHARS) {
        await write(batch);
        batch = '';
      }
      continue;
    }
    if (step.pause > 0) await sleep(step.pause);
    await write(framed);
  }
  if (batch !== '' && !raw.destroyed) await write(batch);
  raw.end();
  return report(false);
}
