import { setTimeout as sleep } from 'node:timers/promises';
import type { WebSocket } from '@fastify/websocket';
import type { Knobs } from '../../../schemas/knobs.ts';
import type { UnnumberedStreamEvent } from '../../../schemas/stream-events.ts';
import { isPaced, pacedEvents, type StreamReport } from './paced-events.ts';
import { BATCH_CHARS } from './sse-writer.ts';

/** Sends one message; resolves once it has been handed to the operating system (or failed, the socket closing). */
function sent(socket: WebSocket, text: string): Promise<void> {
  return new Promise<void>((resolve) => socket.send(text, () => resolve()));
}

/**
 * Sends a response's events on a WebSocket, one text message each, numbered from 0 as the
 * Server-Sent Events of the same response are; the stream knobs apply as they do there. A cut
 * (`stream_cut_after`) ends the connection without a close frame: what a dropped connection
 * looks like to the client. A client that has gone stops the sending at once. Once `hurry` is
 * aborted (the response was steered), the rest go out without the knobs' pauses.
 */
export async function sendSocketEvents(
  socket: WebSocket,
  events: readonly UnnumberedStreamEvent[],
  knobs: Knobs,
  streamId?: string,
  hurry?: AbortSignal,
): Promise<StreamReport> {
  const pauses: number[] = [];
  const report = (cut: boolean): StreamReport => ({ events_sent: pauses.length, pauses_ms: pauses, cut });
  const paced = isPaced(knobs);
  // Unpaced, a message is only waited for once BATCH_CHARS have gone out since the last wait:
  // memory stays bounded for a slow reader, and the loop is given back as often as the SSE
  // writer gives it back, without a promise per delta event.
  let unflushed = 0;
  for (const step of pacedEvents(events, knobs)) {
    if (socket.readyState !== socket.OPEN) return report(false);
    if ('cut' in step) {
      socket.terminate();
      return report(true);
    }
    const pause = hurry?.aborted ? 0 : step.pause;
    // A pause under way when the response is steered ends there.
    if (pause > 0) await sleep(pause, undefined, hurry ? { signal: hurry } : {}).catch(() => undefined);
    if (socket.readyState !== socket.OPEN) return report(false);
    pauses.push(pause);
    // A request's lane (`stream_id`, openai 7.x) goes back on each of its events.
    const text = JSON.stringify(streamId === undefined ? step.event : { ...step.event, stream_id: streamId });
    unflushed += text.length;
    if (paced || unflushed >= BATCH_CHARS) {
      // Paced, each event is flushed before the next, so a cut has delivered all before it.
      await sent(socket, text);
      unflushed = 0;
    } else {
      socket.send(text);
    }
  }
  return report(false);
}
