import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../platform/api-error.ts';
import type { RequestJournal } from '../journal/journal.ts';
import type { JournalEntry } from '../../engine/journal-details.ts';
import { FIXED_LIMITS } from '../../../schemas/fixed-limits.ts';

/** Bytes one event stream may have waiting in its socket's buffer (a client not reading): see FIXED_LIMITS. */
export const MAX_EVENT_STREAM_BUFFER_BYTES = FIXED_LIMITS.eventStreamBufferBytes.value;

/**
 * Event streams open at once; one more is answered 429 `too_many_event_streams`. With the
 * buffer bound, what all streams may hold is bounded too (64 MiB), and each entry is written
 * to at most this many sockets.
 */
export const MAX_EVENT_STREAMS = FIXED_LIMITS.journalEventStreams.value;

/**
 * `GET /v1/emulator/journal/events`: Server-Sent Events, one `journal.entry` event per request
 * journaled from now on (its `data` the entry, as `GET /v1/emulator/journal` lists it). The
 * inspector page redraws on each. It needs the API key like the journal.
 */
export function registerJournalEventRoutes(app: FastifyInstance, journal: RequestJournal): void {
  const open = new Set<() => void>();
  // Each entry is serialised once, however many streams send it.
  const serialised = new WeakMap<JournalEntry, string>();
  const eventOf = (entry: JournalEntry): string => {
    let event = serialised.get(entry);
    if (event === undefined) {
      event = `event: journal.entry\ndata: ${JSON.stringify(entry)}\n\n`;
      serialised.set(entry, event);
    }
    return event;
  };
  app.get('/v1/emulator/journal/events', (request, reply) => {
    if (open.size >= MAX_EVENT_STREAMS) {
      throw new ApiError(
        'too_many_event_streams',
        `${MAX_EVENT_STREAMS} journal event streams are open, the most the emulator serves at once: close one (an inspector tab) and retry.`,
      );
    }
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      // The connection is the stream's: when the stream ends, so does the connection.
      connection: 'close',
      'x-request-id': request.id,
    });
    raw.write(': journal events\n\n');
    const end = (): void => {
      unsubscribe();
      open.delete(end);
      if (!raw.writableEnded) raw.end();
    };
    const unsubscribe = journal.subscribe((entry) => {
      if (raw.writableLength > MAX_EVENT_STREAM_BUFFER_BYTES) {
        end();
        // Ending alone would keep the unsent bytes until a client that reads nothing reads them.
        raw.destroy();
        return;
      }
      raw.write(eventOf(entry));
    });
    open.add(end);
    raw.on('close', end);
  });
  // Streams never end by themselves: closing the server ends them, or close() would wait on them.
  app.addHook('preClose', async () => {
    for (const end of [...open]) end();
  });
}
