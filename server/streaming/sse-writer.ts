import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Knobs } from '../../schemas/knobs.ts';
import type { StreamEvent, UnnumberedStreamEvent } from '../../schemas/stream-events.ts';
import { seededRandom } from '../knobs.ts';

/** One Server-Sent Event as the hosted API writes it: the type as `event:`, the JSON as `data:`. */
function frame(event: StreamEvent): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** How much of a stream, in characters, goes out in one write when nothing paces it. */
const BATCH_CHARS = 64 * 1024;

/** What a stream did: the journal keeps it, so knob tests need no clock. */
export interface StreamReport {
  readonly events_sent: number;
  /** The pause before each event sent, in ms (latency plus seeded jitter). */
  readonly pauses_ms: readonly number[];
  /** True when the `stream_cut_after` knob ended the stream without its terminal event. */
  readonly cut: boolean;
}

/**
 * Writes a response's events as Server-Sent Events, numbering them from 0 in order; only those
 * after `startingAfter` are sent (a replayed stream resumes where the client left). The stream
 * knobs apply: a pause before each event (seeded jitter), and an abrupt end after N events.
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
  const random = seededRandom(knobs.seed ?? 0);
  const pauses: number[] = [];
  const report = (cut: boolean): StreamReport => ({ events_sent: pauses.length, pauses_ms: pauses, cut });
  // Waiting for each write to flush keeps memory bounded for slow readers, and makes a cut
  // stream deliver every event written before it (destroy drops unflushed writes).
  const write = (text: string): Promise<void> => new Promise<void>((resolve) => raw.write(text, () => resolve()));
  // Without pauses or a cut to honour, events go out in writes of up to BATCH_CHARS: the same
  // bytes, a fraction of the work per event (a 300,000-character text is ~75,000 delta events),
  // and the loop is given back between writes.
  const paced = knobs.stream_cut_after !== undefined || (knobs.event_latency_ms ?? 0) > 0 || (knobs.latency_jitter_ms ?? 0) > 0;
  let batch = '';
  for (const [sequence_number, event] of events.entries()) {
    if (sequence_number <= startingAfter) continue;
    if (raw.destroyed) return report(false);
    const framed = frame({ ...event, sequence_number } as StreamEvent);
    if (!paced) {
      batch += framed;
      pauses.push(0);
      if (batch.length >= BATCH_CHARS) {
        await write(batch);
        batch = '';
      }
      continue;
    }
    if (knobs.stream_cut_after !== undefined && pauses.length >= knobs.stream_cut_after) {
      // What a dropped connection looks like to the client: no terminal event, no clean end.
      raw.destroy();
      return report(true);
    }
    const pause = (knobs.event_latency_ms ?? 0) + Math.floor(random() * (knobs.latency_jitter_ms ?? 0));
    if (pause > 0) await sleep(pause);
    await write(framed);
    pauses.push(pause);
  }
  if (batch !== '' && !raw.destroyed) await write(batch);
  raw.end();
  return report(false);
}
