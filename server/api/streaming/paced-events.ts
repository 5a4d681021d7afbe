import type { StreamReport } from '../../engine/journal-details.ts';

export type { StreamReport };
import type { Knobs } from '../../../schemas/knobs.ts';
import type { StreamEvent, UnnumberedStreamEvent } from '../../../schemas/stream-events.ts';
import { seededRandom } from '../../engine/knobs.ts';

// The stream knobs' meaning, in one place for every transport that streams a response's events
// (Server-Sent Events in sse-writer.ts, WebSocket messages in socket-writer.ts).

/** What a stream did: the journal keeps it, so knob tests need no clock. */
/** One step of a paced stream: an event to send after a pause, or the cut that ends the stream. */
export type PacedStep = { readonly event: StreamEvent; readonly pause: number } | { readonly cut: true };

/**
 * True when a knob paces the stream (a pause before events, or a cut): each event then goes out
 * by itself, flushed before the next, so that a cut stream has delivered every event before it.
 */
export function isPaced(knobs: Knobs): boolean {
  return knobs.stream_cut_after !== undefined || (knobs.event_latency_ms ?? 0) > 0 || (knobs.latency_jitter_ms ?? 0) > 0;
}

/**
 * A response's events as the stream knobs send them: numbered from 0 in order, only those after
 * `startingAfter` (a replayed stream resumes where the client left), each with the pause before
 * it (`event_latency_ms` plus jitter drawn from `seed`), and after `stream_cut_after` events
 * sent, a cut and nothing more.
 */
export function* pacedEvents(events: readonly UnnumberedStreamEvent[], knobs: Knobs, startingAfter = -1): Generator<PacedStep> {
  const random = seededRandom(knobs.seed ?? 0);
  let sent = 0;
  for (const [sequence_number, event] of events.entries()) {
    if (sequence_number <= startingAfter) continue;
    if (knobs.stream_cut_after !== undefined && sent >= knobs.stream_cut_after) {
      yield { cut: true };
      return;
    }
    sent += 1;
    yield { event: { ...event, sequence_number } as StreamEvent, pause: (knobs.event_latency_ms ?? 0) + Math.floor(random() * (knobs.latency_jitter_ms ?? 0)) };
  }
}
