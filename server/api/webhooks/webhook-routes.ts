import type { FastifyInstance } from 'fastify';
import { FIXED_LIMITS } from '../../../schemas/fixed-limits.ts';
import {
  WEBHOOK_EVENT_TYPES,
  WebhookCreateParams,
  WebhookListQuery,
  WebhookRotateSecretParams,
  WebhookTestParams,
  WebhookUpdateParams,
  type WebhookEndpoint,
} from '../../../schemas/webhooks.ts';
import { ApiError } from '../../platform/api-error.ts';
import { newSortableId } from '../../platform/ids.ts';
import { parseOrThrow } from '../../platform/request-validation.ts';
import type { RecordStore } from '../../platform/stores/record-store.ts';
import { liveSecrets, publicEndpoint, targetOf, type StoredWebhookEndpoint } from '../../platform/webhooks/webhook-endpoints.ts';
import type { WebhookSender } from '../../platform/webhooks/webhook-sender.ts';
import { newSigningSecret, signingSecretHint } from '../../platform/webhooks/webhook-signature.ts';
import { cursorPage } from '../http/list-page.ts';

/** How long a rotation that keeps the old secret keeps it (`keep_old_secret_active_for_24_hours`). */
const OLD_SECRET_GRACE_MS = 24 * 60 * 60 * 1000;

export interface WebhookRoutesDeps {
  /** Where endpoints are kept; undefined: a store without records (every route but the event types is refused). */
  readonly records: RecordStore | undefined;
  readonly sender: WebhookSender;
  /** `PTC_WEBHOOK_ALLOWED_URLS`: prefixes an endpoint's URL must start with; empty: any. */
  readonly allowedUrls: readonly string[];
}

type EndpointParams = { Params: { webhook_endpoint_id: string } };

/**
 * Webhook endpoints (`client.webhooks`: create, retrieve, update, list, delete, rotateSecret,
 * test, and `eventTypes.list`). They live in the store, so every instance on it sends to them;
 * the signing secret is shown once, when it is made.
 */
export function registerWebhookRoutes(app: FastifyInstance, deps: WebhookRoutesDeps): void {
  app.get('/v1/webhook_event_types', async () => ({ object: 'list' as const, data: [...WEBHOOK_EVENT_TYPES] }));

  const { records } = deps;
  if (!records) {
    const refuse = async (): Promise<never> => {
      throw new ApiError(
        'webhooks_unsupported',
        "This server's response store keeps no records, so it keeps no webhook endpoints made through the API; set PTC_WEBHOOK_URLS instead.",
      );
    };
    for (const path of ['/v1/webhook_endpoints', '/v1/webhook_endpoints/*']) app.all(path, refuse);
    return;
  }

  const endpointOf = async (id: string): Promise<StoredWebhookEndpoint> => {
    const endpoint = await records.get<StoredWebhookEndpoint>('webhook_endpoint', id);
    if (!endpoint) throw new ApiError('webhook_endpoint_not_found', `Webhook endpoint with id '${id}' not found.`, 'webhook_endpoint_id');
    return endpoint;
  };
  const allowedUrl = (url: string): string => {
    if (deps.allowedUrls.length > 0 && !deps.allowedUrls.some((prefix) => url.startsWith(prefix))) {
      throw new ApiError(
        'invalid_value',
        `Invalid value for 'url': ${url} does not start with any of this emulator's PTC_WEBHOOK_ALLOWED_URLS (${deps.allowedUrls.join(', ')}).`,
        'url',
      );
    }
    return url;
  };
  /** The endpoint as create and rotate_secret return it: with its new secret, this once. */
  const withSecret = (endpoint: StoredWebhookEndpoint) => ({ ...publicEndpoint(endpoint), signing_secret: endpoint.secrets[0]!.secret });

  app.post('/v1/webhook_endpoints', async (request) => {
    const body = parseOrThrow(WebhookCreateParams, request.body ?? {});
    allowedUrl(body.url);
    const limit = FIXED_LIMITS.webhookEndpoints.value;
    if ((await records.list('webhook_endpoint')).length >= limit) {
      throw new ApiError('too_many_webhook_endpoints', `This server keeps at most ${limit} webhook endpoints (webhookEndpoints); delete one first.`);
    }
    const now = Math.floor(Date.now() / 1000);
    const secret = newSigningSecret();
    const endpoint: StoredWebhookEndpoint = {
      id: newSortableId('whe'),
      object: 'webhook_endpoint',
      created_at: now,
      updated_at: now,
      event_types: [...new Set(body.event_types)],
      name: body.name,
      url: body.url,
      signing_secret_hint: signingSecretHint(secret),
      secrets: [{ secret, expires_at: null }],
    };
    await records.put('webhook_endpoint', endpoint.id, endpoint);
    return withSecret(endpoint);
  });
  app.get('/v1/webhook_endpoints', async (request) => {
    const query = parseOrThrow(WebhookListQuery, request.query ?? {});
    const endpoints = (await records.list<StoredWebhookEndpoint>('webhook_endpoint')).map(publicEndpoint);
    // Newest first, as the SDK documents.
    return cursorPage<WebhookEndpoint>(endpoints, { ...query, order: 'desc' }, 'webhook endpoint', true);
  });
  app.get<EndpointParams>('/v1/webhook_endpoints/:webhook_endpoint_id', async (request) =>
    publicEndpoint(await endpointOf(request.params.webhook_endpoint_id)),
  );
  app.post<EndpointParams>('/v1/webhook_endpoints/:webhook_endpoint_id', async (request) => {
    const body = parseOrThrow(WebhookUpdateParams, request.body ?? {});
    const endpoint = await endpointOf(request.params.webhook_endpoint_id);
    const changed: StoredWebhookEndpoint = {
      ...endpoint,
      ...(body.event_types ? { event_types: [...new Set(body.event_types)] } : {}),
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.url !== undefined ? { url: allowedUrl(body.url) } : {}),
    };
    // An unchanged update does not advance `updated_at` (the SDK's types say so).
    const same = changed.name === endpoint.name && changed.url === endpoint.url && changed.event_types.join() === endpoint.event_types.join();
    if (same) return publicEndpoint(endpoint);
    const updated = { ...changed, updated_at: Math.floor(Date.now() / 1000) };
    await records.put('webhook_endpoint', updated.id, updated);
    return publicEndpoint(updated);
  });
  app.delete<EndpointParams>('/v1/webhook_endpoints/:webhook_endpoint_id', async (request) => {
    const endpoint = await endpointOf(request.params.webhook_endpoint_id);
    await records.delete('webhook_endpoint', endpoint.id);
    return { id: endpoint.id, deleted: true, object: 'webhook_endpoint.deleted' as const };
  });
  app.post<EndpointParams>('/v1/webhook_endpoints/:webhook_endpoint_id/rotate_secret', async (request) => {
    const body = parseOrThrow(WebhookRotateSecretParams, request.body ?? {});
    const endpoint = await endpointOf(request.params.webhook_endpoint_id);
    const now = Date.now();
    const secret = newSigningSecret();
    // Kept, the old secret signs beside the new one for 24 hours; otherwise it stops at once.
    const kept = body.keep_old_secret_active_for_24_hours === true ? liveSecrets(endpoint, now).slice(0, 1) : [];
    const rotated: StoredWebhookEndpoint = {
      ...endpoint,
      updated_at: Math.floor(now / 1000),
      signing_secret_hint: signingSecretHint(secret),
      secrets: [{ secret, expires_at: null }, ...kept.map((old) => ({ secret: old, expires_at: now + OLD_SECRET_GRACE_MS }))],
    };
    await records.put('webhook_endpoint', rotated.id, rotated);
    return withSecret(rotated);
  });
  app.post<EndpointParams>('/v1/webhook_endpoints/:webhook_endpoint_id/test', async (request) => {
    const body = parseOrThrow(WebhookTestParams, request.body ?? {});
    const endpoint = await endpointOf(request.params.webhook_endpoint_id);
    const result = await deps.sender.test(body.event_type, targetOf(endpoint));
    if (result.status === 0) {
      throw new ApiError('webhook_test_failed', `The test delivery to ${endpoint.url} got no answer: ${result.error ?? 'unknown failure'}.`);
    }
    return {
      event_type: body.event_type,
      object: 'webhook_endpoint.test' as const,
      status_code: result.status,
      success: true as const,
      webhook_endpoint_id: endpoint.id,
    };
  });
}
