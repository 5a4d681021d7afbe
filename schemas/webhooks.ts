import { z } from 'zod';

/**
 * Webhooks (`client.webhooks`, openai 7.60): the endpoints `/v1/webhook_endpoints…` manage, and
 * the events the emulator sends them, as the SDK's types (resources/webhooks/webhooks.d.ts) say.
 */

/** Every event type an endpoint may subscribe to, as `WebhookCreateParams.event_types` lists them. */
export const WEBHOOK_EVENT_TYPES = [
  'batch.completed',
  'batch.failed',
  'batch.expired',
  'batch.cancelled',
  'response.completed',
  'response.failed',
  'response.cancelled',
  'response.incomplete',
  'eval.run.succeeded',
  'eval.run.failed',
  'eval.run.canceled',
  'fine_tuning.job.succeeded',
  'fine_tuning.job.failed',
  'fine_tuning.job.cancelled',
  'realtime.call.incoming',
  'video.completed',
  'video.failed',
  'agent.environment.ready',
  'agent.environment.failed',
  'agent.environment.suspended',
  'agent.environment.expired',
  'agent.session.created',
  'agent.session.action_required',
  'agent.session.in_progress',
  'agent.session.idle',
  'agent.session.failed',
  'safety.alert.created',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * The event types the emulator sends: a background response's outcome, and an agent session's
 * status changes. The others (batches, evals, fine-tuning, …) name work it does not do; an
 * endpoint may subscribe to them and `test` sends a sample of any of them.
 */
export const WEBHOOK_EVENT_TYPES_SENT = [
  'response.completed',
  'response.failed',
  'response.cancelled',
  'response.incomplete',
  'agent.session.created',
  'agent.session.action_required',
  'agent.session.in_progress',
  'agent.session.idle',
  'agent.session.failed',
] as const satisfies readonly WebhookEventType[];
export type SentWebhookEventType = (typeof WEBHOOK_EVENT_TYPES_SENT)[number];

/**
 * `data.required_action` of `agent.session.action_required`: a session here waits only on
 * function calls (no approvals, no environment to connect).
 */
export const SESSION_REQUIRED_ACTION = { type: 'function_call' } as const;

const EventTypes = z.array(z.enum(WEBHOOK_EVENT_TYPES)).min(1, 'an endpoint subscribes to at least one event type');
const Name = z.string().min(1).max(256);
/** http as well as https: an emulator's receivers are often on localhost (docs/DEVIATIONS.md). */
const Url = z
  .string()
  .max(2048, 'a URL of at most 2048 characters')
  .pipe(z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }))
  // A delivery cannot carry credentials in its URL (fetch refuses it), and they would show wherever the URL does.
  .refine((url) => !/^[a-z]+:\/\/[^/]*@/i.test(url), 'expected a URL without a user name or password');

export const WebhookCreateParams = z.strictObject({ event_types: EventTypes, name: Name, url: Url });
export const WebhookUpdateParams = z.strictObject({ event_types: EventTypes.optional(), name: Name.optional(), url: Url.optional() });
export const WebhookListQuery = z.strictObject({
  after: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});
export const WebhookRotateSecretParams = z.strictObject({ keep_old_secret_active_for_24_hours: z.boolean().optional() });
export const WebhookTestParams = z.strictObject({ event_type: z.enum(WEBHOOK_EVENT_TYPES) });

/** `WebhookEndpoint`: what retrieve, update and list return (never the secret). */
export interface WebhookEndpoint {
  id: string;
  object: 'webhook_endpoint';
  created_at: number;
  updated_at: number;
  event_types: string[];
  name: string;
  url: string;
  signing_secret_hint: string | null;
}

/** An event as it is sent: the body of one webhook delivery (`UnwrapWebhookEvent`). */
export interface WebhookEvent {
  id: string;
  object: 'event';
  created_at: number;
  type: WebhookEventType;
  data: Record<string, unknown>;
}
