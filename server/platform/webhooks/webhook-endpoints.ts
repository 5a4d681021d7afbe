import type { WebhookEndpoint, WebhookEventType } from '../../../schemas/webhooks.ts';
import { WEBHOOK_EVENT_TYPES_SENT } from '../../../schemas/webhooks.ts';
import type { RecordStore } from '../stores/record-store.ts';

/** One secret an endpoint signs with; an old one kept by a rotation lapses at `expires_at` (ms). */
export interface EndpointSecret {
  readonly secret: string;
  readonly expires_at: number | null;
}

/** An endpoint as the store keeps it: what the API shows, and the secrets it never shows again. */
export interface StoredWebhookEndpoint extends WebhookEndpoint {
  secrets: EndpointSecret[];
}

/** Where one event goes: an endpoint's address and the secrets its deliveries are signed with. */
export interface WebhookTarget {
  readonly id: string;
  readonly url: string;
  readonly secrets: readonly string[];
}

/** Endpoints set by `PTC_WEBHOOK_URLS`: every event the emulator sends, signed with `PTC_WEBHOOK_SECRET`. */
export interface ConfiguredEndpoints {
  readonly urls: readonly string[];
  readonly secret: string;
}

/** The API's view of a stored endpoint: without its secrets. */
export function publicEndpoint({ secrets: _secrets, ...endpoint }: StoredWebhookEndpoint): WebhookEndpoint {
  return endpoint;
}

/** The secrets still in force at `now`, newest first. */
export function liveSecrets(endpoint: StoredWebhookEndpoint, now = Date.now()): string[] {
  return endpoint.secrets.filter((entry) => entry.expires_at === null || entry.expires_at > now).map((entry) => entry.secret);
}

/** Where a stored endpoint's deliveries go at `now`, signed with the secrets then in force. */
export function targetOf(endpoint: StoredWebhookEndpoint, now = Date.now()): WebhookTarget {
  return { id: endpoint.id, url: endpoint.url, secrets: liveSecrets(endpoint, now) };
}

/**
 * The endpoints an event goes to: those of the settings, and those made through the API (kept in
 * the store, so every instance on it sends to the same ones) that subscribe to its type.
 */
export class WebhookEndpoints {
  readonly #records: RecordStore | undefined;
  readonly #configured: WebhookTarget[];

  constructor(records: RecordStore | undefined, configured: ConfiguredEndpoints) {
    this.#records = records;
    this.#configured = configured.urls.map((url, index) => ({ id: `whe_configured_${index}`, url, secrets: [configured.secret] }));
  }

  /** Whether any endpoint could receive an event (so that one is built only when it can go somewhere). */
  get any(): boolean {
    return this.#configured.length > 0 || this.#records !== undefined;
  }

  /**
   * An endpoint as it is now, for the next attempt of a delivery to it: its URL and secrets may
   * have changed since the event was made (update, rotate_secret); undefined when it was deleted
   * or no longer takes events of `type`.
   */
  async current(id: string, type: WebhookEventType): Promise<WebhookTarget | undefined> {
    const configured = this.#configured.find((target) => target.id === id);
    if (configured) return configured;
    const endpoint = await this.#records?.get<StoredWebhookEndpoint>('webhook_endpoint', id);
    if (!endpoint?.event_types.includes(type)) return undefined;
    return targetOf(endpoint);
  }

  async targetsFor(type: WebhookEventType): Promise<WebhookTarget[]> {
    const targets = (WEBHOOK_EVENT_TYPES_SENT as readonly string[]).includes(type) ? [...this.#configured] : [];
    if (this.#records) {
      const now = Date.now();
      for (const endpoint of await this.#records.list<StoredWebhookEndpoint>('webhook_endpoint')) {
        if (endpoint.event_types.includes(type)) targets.push(targetOf(endpoint, now));
      }
    }
    return targets;
  }
}
