import type { FastifyBaseLogger } from 'fastify';
import { FIXED_LIMITS } from '../../../schemas/fixed-limits.ts';
import { SESSION_REQUIRED_ACTION, type WebhookEvent, type WebhookEventType } from '../../../schemas/webhooks.ts';
import { newId } from '../ids.ts';
import type { WebhookEndpoints, WebhookTarget } from './webhook-endpoints.ts';
import { signDelivery } from './webhook-signature.ts';

/** How long closing lets the attempts under way finish before it aborts them. */
const CLOSE_GRACE_MS = 2_000;

/** One attempt at delivering an event to an endpoint, as the journal keeps it. */
export interface WebhookAttempt {
  readonly event: WebhookEvent;
  /** The `webhook-id` header: the same on every attempt of one delivery. */
  readonly webhookId: string;
  readonly endpointId: string;
  readonly url: string;
  /** 1 for the first; 0 for a delivery dropped before any attempt. */
  readonly attempt: number;
  /** The endpoint's HTTP status; 0 when it gave none (refused, timed out, dropped). */
  readonly status: number;
  readonly durationMs: number;
  /** `delivered` (2xx), `retrying` (another attempt is due in `retryInMs`), `failed` (no more attempts) or `dropped`. */
  readonly outcome: 'delivered' | 'retrying' | 'failed' | 'dropped';
  readonly retryInMs?: number;
  /** Why it did not succeed, when it did not. */
  readonly error?: string;
}

export interface WebhookSenderOptions {
  readonly endpoints: WebhookEndpoints;
  /** Attempts per delivery, the first included. */
  readonly maxAttempts: number;
  /** The wait before the second attempt; each later one waits twice the one before, up to webhookRetryCapMs. */
  readonly retryMs: number;
  readonly onAttempt: (attempt: WebhookAttempt) => void;
  readonly log: FastifyBaseLogger;
}

/** What one POST to an endpoint came to. */
interface PostResult {
  readonly status: number;
  readonly error?: string;
}

/** A new event of `type` about `data`, as its endpoints receive it. */
function eventOf(type: WebhookEventType, data: Record<string, unknown>): WebhookEvent {
  return { id: newId('evt'), object: 'event', created_at: Math.floor(Date.now() / 1000), type, data };
}

/**
 * Sends events to the endpoints subscribed to them: each delivery signed as
 * `client.webhooks.unwrap()` verifies (a new timestamp and signature per attempt, one
 * `webhook-id` for all of them), retried with exponential backoff until the endpoint answers
 * 2xx or the attempts run out. Deliveries are this process's: the instance that made an event
 * delivers it, and retries still due when it stops are not made (docs/DEVIATIONS.md). At most
 * webhookPendingDeliveries are under way at once; one more is dropped, and journaled so.
 */
export class WebhookSender {
  readonly #options: WebhookSenderOptions;
  /** Deliveries under way (posting, or waiting for their next attempt). */
  #pending = 0;
  readonly #timers = new Set<NodeJS.Timeout>();
  /** Aborts the attempts under way once closing has given them their grace. */
  readonly #closing = new AbortController();
  #closed = false;
  /** Events whose endpoints are being read, and attempts whose POST is under way. */
  #posting = 0;

  constructor(options: WebhookSenderOptions) {
    this.#options = options;
  }

  /** Sends an event of `type` about `data` to every endpoint subscribed to it; never throws, never waits. */
  send(type: WebhookEventType, data: Record<string, unknown>): void {
    if (!this.#options.endpoints.any || this.#closed) return;
    const event = eventOf(type, data);
    this.#posting += 1;
    this.#options.endpoints
      .targetsFor(type)
      .then(
        (targets) => {
          for (const target of targets) this.#deliver(event, target);
        },
        (error: unknown) => this.#options.log.warn({ err: error, event: event.id }, `webhook ${type} not sent: its endpoints could not be read`),
      )
      .finally(() => {
        this.#posting -= 1;
      });
  }

  /** One attempt, no retry: `client.webhooks.test()`. The endpoint's status, or why it gave none. */
  async test(type: WebhookEventType, target: WebhookTarget): Promise<PostResult> {
    const event = eventOf(type, sampleData(type));
    const webhookId = newId('wh');
    const started = performance.now();
    const result = await this.#post(event, webhookId, target);
    this.#report(event, webhookId, target, 1, result, started, result.status >= 200 && result.status < 300 ? 'delivered' : 'failed');
    return result;
  }

  /**
   * Stops: no retry is made, and no new event sent; attempts under way get `graceMs` to finish
   * (a background response the shutdown failed tells of it), then they are aborted.
   */
  async close(graceMs = CLOSE_GRACE_MS): Promise<void> {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    const deadline = Date.now() + graceMs;
    while (this.#posting > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    this.#closing.abort();
  }

  #deliver(event: WebhookEvent, target: WebhookTarget): void {
    const webhookId = newId('wh');
    if (this.#pending >= FIXED_LIMITS.webhookPendingDeliveries.value) {
      this.#options.onAttempt({
        event,
        webhookId,
        endpointId: target.id,
        url: target.url,
        attempt: 0,
        status: 0,
        durationMs: 0,
        outcome: 'dropped',
        error: `${FIXED_LIMITS.webhookPendingDeliveries.value} deliveries are already under way (webhookPendingDeliveries)`,
      });
      return;
    }
    this.#pending += 1;
    const attempt = async (number: number, current: WebhookTarget): Promise<void> => {
      const started = performance.now();
      const result = await this.#post(event, webhookId, current);
      if (this.#closing.signal.aborted || (this.#closed && result.status === 0)) {
        this.#pending -= 1;
        return;
      }
      const delivered = result.status >= 200 && result.status < 300;
      // No retry is scheduled once closing has begun: its timers are already cleared.
      if (delivered || number >= this.#options.maxAttempts || this.#closed) {
        this.#pending -= 1;
        this.#report(event, webhookId, target, number, result, started, delivered ? 'delivered' : 'failed');
        return;
      }
      const retryInMs = Math.min(this.#options.retryMs * 2 ** (number - 1), FIXED_LIMITS.webhookRetryCapMs.value);
      this.#report(event, webhookId, target, number, result, started, 'retrying', retryInMs);
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        void this.#retry(event, webhookId, target, number + 1, attempt);
      }, retryInMs);
      timer.unref();
      this.#timers.add(timer);
    };
    void attempt(1, target);
  }

  /**
   * The next attempt, to the endpoint as it is now: an update or a rotation since the event was
   * made applies to it, and a deleted endpoint (or one no longer taking the event) gets none.
   */
  async #retry(
    event: WebhookEvent,
    webhookId: string,
    target: WebhookTarget,
    number: number,
    attempt: (number: number, current: WebhookTarget) => Promise<void>,
  ): Promise<void> {
    this.#posting += 1;
    let current: WebhookTarget | undefined;
    try {
      current = await this.#options.endpoints.current(target.id, event.type);
    } catch (error) {
      // The store cannot say: the attempt goes where the last one went.
      this.#options.log.warn({ err: error, event: event.id }, 'a webhook endpoint could not be read again before a retry');
      current = target;
    } finally {
      this.#posting -= 1;
    }
    if (current === undefined) {
      this.#pending -= 1;
      this.#report(
        event,
        webhookId,
        target,
        number,
        { status: 0, error: 'the endpoint was deleted, or no longer takes this event, before this attempt' },
        performance.now(),
        'failed',
      );
      return;
    }
    await attempt(number, current);
  }

  async #post(event: WebhookEvent, webhookId: string, target: WebhookTarget): Promise<PostResult> {
    const payload = JSON.stringify(event);
    this.#posting += 1;
    try {
      const reply = await fetch(target.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'ptc-emulator-webhooks', ...signDelivery(webhookId, payload, target.secrets) },
        body: payload,
        // A redirect is a failed delivery, as it is for the hosted sender: the endpoint's URL is what was configured.
        redirect: 'manual',
        signal: AbortSignal.any([AbortSignal.timeout(FIXED_LIMITS.webhookDeliveryTimeoutMs.value), this.#closing.signal]),
      });
      // What the endpoint says back is not read: its status is the answer.
      await reply.body?.cancel();
      return reply.status >= 200 && reply.status < 300 ? { status: reply.status } : { status: reply.status, error: `the endpoint answered ${reply.status}` };
    } catch (error) {
      // A refused connection's code may sit on the cause, or on the first of its attempts (IPv4 and IPv6).
      const causeOf = (error as { cause?: { code?: string; message?: string; errors?: { code?: string }[] } }).cause;
      const cause = causeOf?.code ?? causeOf?.errors?.[0]?.code ?? causeOf?.message;
      const timedOut = (error as Error).name === 'TimeoutError';
      return {
        status: 0,
        error: timedOut ? `no answer within ${FIXED_LIMITS.webhookDeliveryTimeoutMs.value} ms` : `${(error as Error).message}${cause ? ` (${cause})` : ''}`,
      };
    } finally {
      this.#posting -= 1;
    }
  }

  #report(
    event: WebhookEvent,
    webhookId: string,
    target: WebhookTarget,
    attempt: number,
    result: PostResult,
    started: number,
    outcome: WebhookAttempt['outcome'],
    retryInMs?: number,
  ): void {
    this.#options.onAttempt({
      event,
      webhookId,
      endpointId: target.id,
      url: target.url,
      attempt,
      status: result.status,
      durationMs: performance.now() - started,
      outcome,
      ...(retryInMs === undefined ? {} : { retryInMs }),
      ...(result.error === undefined ? {} : { error: result.error }),
    });
  }
}

/** What a sample event of `type` is about: an id of the kind its real events carry, naming nothing. */
function sampleData(type: WebhookEventType): Record<string, unknown> {
  const [resource] = type.split('.');
  switch (resource) {
    case 'response':
      return { id: newId('resp') };
    case 'agent':
      return type.startsWith('agent.session.')
        ? { id: newId('sess'), environment_type: 'none', ...(type === 'agent.session.action_required' ? { required_action: SESSION_REQUIRED_ACTION } : {}) }
        : { id: newId('env') };
    case 'batch':
      return { id: newId('batch') };
    case 'fine_tuning':
      return { id: newId('ftjob') };
    case 'eval':
      return { id: newId('evalrun') };
    case 'realtime':
      // RealtimeCallIncomingWebhookEvent.Data: the call and its SIP headers (none in a sample).
      return { call_id: newId('rtc'), sip_headers: [] };
    default:
      return { id: newId(resource ?? 'obj') };
  }
}
