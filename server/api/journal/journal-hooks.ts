import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RequestJournal } from './journal.ts';
import type { JournalDetails } from '../../engine/journal-details.ts';
import type { WebhookAttempt } from '../../platform/webhooks/webhook-sender.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** What the routes noted about this request for the journal. */
    journal: JournalDetails | null;
    /** True when the reply was a stream written by hand, which the route journals itself. */
    streamedByHand: boolean;
  }
}

/** How the routes and the error handler add to the journal. */
export interface JournalRecorder {
  /** Adds to the journal entry of the request being served. */
  note(request: FastifyRequest, details: JournalDetails): void;
  /** Records a request whose reply was written by hand (a stream), in place of the onResponse hook. */
  recordStream(request: FastifyRequest, reply: FastifyReply): void;
  /** Records a request answered on its socket outside Fastify (a 408 past PTC_REQUEST_TIMEOUT_MS), in place of the onResponse hook. */
  recordAnsweredOnSocket(request: FastifyRequest, status: number, elapsedMs: number): void;
  /** Records how a background response ended, as an entry of its own. */
  recordBackground(details: JournalDetails & { readonly requestId: string; readonly status: number }): void;
  /**
   * Records a request that came as a WebSocket message (a `response.create` event), as an entry
   * of its own with `method: "WS"`: the upgrade is one HTTP request for all of them. `status` is
   * the HTTP status the same request would have had.
   */
  recordSocketMessage(
    details: JournalDetails & { readonly requestId: string; readonly path: string; readonly status: number; readonly durationMs: number },
  ): void;
  /**
   * Records a response an agent session's harness made (server/api/agents/harness.ts), as an entry
   * of its own with `method: "AGENT"` and the session's path.
   */
  recordAgentResponse(
    details: JournalDetails & { readonly requestId: string; readonly sessionId: string; readonly status: number; readonly durationMs: number },
  ): void;
  /**
   * Records one attempt at delivering a webhook event, as an entry of its own with
   * `method: "WEBHOOK"`, the endpoint's URL as its path and the endpoint's status (0: none).
   */
  recordWebhook(attempt: WebhookAttempt): void;
}

/**
 * Journals what each API request did: the routes note details on the request as they go, and
 * the entry is recorded once the reply is sent. Only `/v1/` requests are journaled, and never
 * those of the journal itself (`/v1/emulator/`), so that reading it does not change it.
 */
export function journalRequests(app: FastifyInstance, journal: RequestJournal): JournalRecorder {
  app.decorateRequest('journal', null);
  app.decorateRequest('streamedByHand', false);
  const record = (request: FastifyRequest, status: number, elapsed: number): void => {
    const path = request.url.split('?')[0]!;
    if (!path.startsWith('/v1/') || path.startsWith('/v1/emulator/')) return;
    journal.record({
      request_id: request.id,
      at: new Date().toISOString(),
      method: request.method,
      path,
      status,
      duration_ms: Math.round(elapsed * 1000) / 1000,
      ...request.journal,
    });
  };
  app.addHook('onResponse', async (request, reply) => {
    if (!request.streamedByHand) record(request, reply.statusCode, reply.elapsedTime);
  });
  return {
    note: (request, details) => {
      request.journal = { ...request.journal, ...details };
    },
    recordStream: (request, reply) => record(request, reply.raw.statusCode, reply.elapsedTime),
    recordAnsweredOnSocket: (request, status, elapsedMs) => record(request, status, elapsedMs),
    recordBackground: ({ requestId, status, ...details }) =>
      journal.record({
        request_id: requestId,
        at: new Date().toISOString(),
        method: 'BACKGROUND',
        path: `/v1/responses/${requestId}`,
        status,
        duration_ms: 0,
        ...details,
      }),
    recordSocketMessage: ({ requestId, path, status, durationMs, ...details }) =>
      journal.record({
        request_id: requestId,
        at: new Date().toISOString(),
        method: 'WS',
        path,
        status,
        duration_ms: Math.round(durationMs * 1000) / 1000,
        ...details,
      }),
    recordAgentResponse: ({ requestId, sessionId, status, durationMs, ...details }) =>
      journal.record({
        request_id: requestId,
        at: new Date().toISOString(),
        method: 'AGENT',
        path: `/v1/agents/sessions/${sessionId}`,
        status,
        duration_ms: Math.round(durationMs * 1000) / 1000,
        ...details,
      }),
    recordWebhook: (attempt) => {
      const { event } = attempt;
      journal.record({
        request_id: `${attempt.webhookId}.${attempt.attempt}`,
        at: new Date().toISOString(),
        method: 'WEBHOOK',
        path: attempt.url,
        status: attempt.status,
        duration_ms: Math.round(attempt.durationMs * 1000) / 1000,
        // A response's events join its conversation in the inspector.
        ...(event.type.startsWith('response.') && typeof event.data.id === 'string' ? { response_id: event.data.id } : {}),
        webhook: {
          event_id: event.id,
          event_type: event.type,
          data: event.data,
          webhook_id: attempt.webhookId,
          endpoint_id: attempt.endpointId,
          attempt: attempt.attempt,
          outcome: attempt.outcome,
          ...(attempt.retryInMs === undefined ? {} : { retry_in_ms: attempt.retryInMs }),
          ...(attempt.error === undefined ? {} : { error: attempt.error }),
        },
      });
    },
  };
}
