import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { RequestJournal } from './journal.ts';
import { parseOrThrow } from '../../platform/request-validation.ts';

const JournalQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(10_000).default(100) });

/**
 * `GET /v1/emulator/journal`: the most recent API requests, newest first, with what they did;
 * `DELETE /v1/emulator/journal` empties it (between tests).
 */
export function registerJournalRoutes(app: FastifyInstance, journal: RequestJournal): void {
  app.get('/v1/emulator/journal', async (request) => {
    const { limit } = parseOrThrow(JournalQuery, request.query);
    return { object: 'list', data: journal.list(limit) };
  });

  app.delete('/v1/emulator/journal', async () => ({ object: 'emulator.journal.cleared', cleared: journal.clear() }));
}
