import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ExploreLedger } from '../../engine/explore/explore-ledger.ts';
import { exploreHtml } from './explore-html.ts';
import { exploreReport } from '../../engine/explore/explore-report.ts';
import { parseOrThrow } from '../../platform/request-validation.ts';

const ReportQuery = z.strictObject({ format: z.enum(['json', 'html']).default('json') });

/**
 * `GET /v1/emulator/explore`: the client-loop report of the conversations explored so far
 * (docs/EXPLORE.md), as JSON or (`?format=html`) a page linking each conversation to the
 * inspector; `DELETE` forgets them (between runs).
 */
export function registerExploreRoutes(app: FastifyInstance, ledger: ExploreLedger): void {
  app.get('/v1/emulator/explore', async (request, reply) => {
    const { format } = parseOrThrow(ReportQuery, request.query);
    const report = exploreReport(ledger.conversations());
    if (format === 'json') return report;
    return reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
      .send(exploreHtml(report, { inspectorLinks: true }));
  });

  app.delete('/v1/emulator/explore', async () => ({ object: 'emulator.explore.cleared', cleared: ledger.clear() }));
}
