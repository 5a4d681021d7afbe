import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type OpenAI from 'openai';
import type { UnwrapWebhookEvent } from 'openai/resources/webhooks/webhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { AGENT_TOOLS, answerOf, PRICING_PROGRAM } from './support/agents-api.ts';
import { FIXED_LIMITS } from '../schemas/fixed-limits.ts';
import type { ModelFunction } from '../server/engine/stand-ins/model-decision.ts';
import { unusedLoopbackUrl } from './support/mcp-servers.ts';
import { startServer, type RunningServer } from './support/server.ts';
import { storeWithoutRecords } from './support/store-without-records.ts';

// Webhooks, through openai 7.60's `client.webhooks`: endpoints made through the API and by
// setting, each delivery verified with `client.webhooks.unwrap()`, retries, rotation, tests.

/** One POST an endpoint received: the raw body and headers, as `unwrap()` takes them. */
interface Delivery {
  readonly body: string;
  readonly headers: IncomingHttpHeaders;
}

/** A receiver on a loopback port: it keeps every delivery and answers each with the next status of `statuses` (200 once they run out). */
class Receiver {
  readonly deliveries: Delivery[] = [];
  statuses: number[] = [];
  readonly #server: Server;
  readonly #waiters: (() => void)[] = [];

  constructor() {
    this.#server = createServer((request, reply) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        this.deliveries.push({ body: Buffer.concat(chunks).toString('utf8'), headers: request.headers });
        reply.statusCode = this.statuses.shift() ?? 200;
        reply.end('ok');
        for (const wake of this.#waiters.splice(0)) wake();
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/hooks`;
  }

  /** Waits until a delivery `matches` (by its parsed body) has arrived, and returns the deliveries so far that do. */
  async until(matches: (event: { type: string; data: Record<string, unknown> }) => boolean, count = 1): Promise<Delivery[]> {
    for (;;) {
      const found = this.deliveries.filter((delivery) => matches(JSON.parse(delivery.body)));
      if (found.length >= count) return found;
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

/** Verifies a delivery as a receiver would, with the SDK; returns the event. */
async function unwrap(client: OpenAI, delivery: Delivery, secret: string): Promise<UnwrapWebhookEvent> {
  return client.webhooks.unwrap(delivery.body, delivery.headers as Record<string, string>, secret);
}

const ofType = (type: string, id?: string) => (event: { type: string; data: Record<string, unknown> }) =>
  event.type === type && (id === undefined || event.data.id === id);

const ALL_SENT = [
  'response.completed',
  'response.failed',
  'response.cancelled',
  'response.incomplete',
  'agent.session.created',
  'agent.session.action_required',
  'agent.session.in_progress',
  'agent.session.idle',
  'agent.session.failed',
] as const;

interface WebhookEntry {
  method: string;
  status: number;
  webhook?: { attempt: number; outcome: string; retry_in_ms?: number; data: Record<string, unknown> };
}

/** The journal's webhook entries, oldest first. */
async function webhookEntries(baseURL: string): Promise<WebhookEntry[]> {
  const journal = (await (await fetch(`${baseURL}/emulator/journal?limit=1000`)).json()) as { data: WebhookEntry[] };
  return journal.data.filter((entry) => entry.method === 'WEBHOOK').reverse();
}

/** Waits for the first journaled webhook attempt `matches` accepts (an attempt is journaled once the endpoint answered). */
async function journalEntry(baseURL: string, matches: (entry: WebhookEntry) => boolean): Promise<WebhookEntry> {
  for (;;) {
    const found = (await webhookEntries(baseURL)).find(matches);
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const receivers: Receiver[] = [];
const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

async function receiver(): Promise<{ receiver: Receiver; url: string }> {
  const made = new Receiver();
  receivers.push(made);
  return { receiver: made, url: await made.listen() };
}

/** A stand-in that fails a turn whose message says so (a fault inside a background response), and answers at length when asked. */
const standIn: ModelFunction = (context) => {
  if (context.lastUserText === 'explode') throw new Error('the stand-in failed on purpose');
  if (context.lastUserText === 'say something long') return { type: 'message', text: 'word '.repeat(200) };
  return undefined;
};

async function server(env: Record<string, string> = {}): Promise<RunningServer> {
  const started = await startServer({ env: { PTC_WEBHOOK_RETRY_MS: '20', ...env }, model: standIn });
  servers.push(started);
  return started;
}

describe('webhooks of background responses and agent sessions, verified with client.webhooks.unwrap()', () => {
  it('an endpoint made with client.webhooks.create gets every outcome of a background response, signed with its secret', async () => {
    const { receiver: hooks, url } = await receiver();
    const { client } = await server();
    const endpoint = await client.webhooks.create({ name: 'ci', url, event_types: [...ALL_SENT] });
    expect(endpoint).toMatchObject({ object: 'webhook_endpoint', name: 'ci', url, event_types: [...ALL_SENT] });
    expect(endpoint.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(endpoint.signing_secret_hint).toMatch(/^whsec_…/);

    const completed = await client.responses.create({ model: 'm', input: 'hello', background: true });
    const incomplete = await client.responses.create({ model: 'm', input: 'say something long', background: true, max_output_tokens: 16 });
    const failed = await client.responses.create({ model: 'm', input: 'explode', background: true });
    const cancelled = await client.responses.create({ model: 'm', input: 'hello', background: true }, { headers: { 'x-ptc-delay-ms': '60000' } });
    await client.responses.cancel(cancelled.id);

    for (const [type, id] of [
      ['response.completed', completed.id],
      ['response.incomplete', incomplete.id],
      ['response.failed', failed.id],
      ['response.cancelled', cancelled.id],
    ] as const) {
      const [delivery] = await hooks.until(ofType(type, id));
      const event = await unwrap(client, delivery!, endpoint.signing_secret);
      expect(event).toMatchObject({ type, object: 'event', data: { id } });
      expect(event.id).toMatch(/^evt_/);
      expect(delivery!.headers['webhook-id']).toMatch(/^wh_/);
      // What the receiver is told has happened, has: the response reads as the event says.
      expect((await client.responses.retrieve(id)).status).toBe(type.slice('response.'.length));
    }
    // A response that was not in the background sends none.
    const foreground = await client.responses.create({ model: 'm', input: 'hello' });
    await client.responses.create({ model: 'm', input: 'hello', background: true }).then((marker) => hooks.until(ofType('response.completed', marker.id)));
    expect(hooks.deliveries.map((delivery) => JSON.parse(delivery.body).data.id)).not.toContain(foreground.id);

    // Another secret does not verify.
    await expect(unwrap(client, hooks.deliveries[0]!, 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=')).rejects.toThrow(/signature/);
  });

  it("an agent session's status changes: created, in_progress, action_required, idle, and failed once deleted", async () => {
    const { receiver: hooks, url } = await receiver();
    const { client } = await server();
    const types = [
      'agent.session.created',
      'agent.session.action_required',
      'agent.session.in_progress',
      'agent.session.idle',
      'agent.session.failed',
    ] as const;
    const { signing_secret: secret } = await client.webhooks.create({ name: 'sessions', url, event_types: [...types] });

    const agent = await client.beta.agents.create({ model: 'm', name: 'pricing', tools: AGENT_TOOLS });
    const session = await client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
    await client.beta.agents.sessions.events.create(session.id, {
      events: [{ type: 'agent.session.input.message', input: [{ role: 'user', content: [{ type: 'input_text', text: PRICING_PROGRAM }] }] }],
    });
    await hooks.until(ofType('agent.session.action_required', session.id));
    const waiting = await client.beta.agents.sessions.retrieve(session.id);
    expect(waiting.status).toBe('requires_action');
    await client.beta.agents.sessions.events.create(session.id, {
      events: waiting.required_actions.flatMap((action) =>
        action.type === 'function_call'
          ? [
              {
                type: 'agent.session.input.tool_result' as const,
                turn_id: action.turn_id,
                call_id: action.call_id,
                success: true,
                output: answerOf(action.name),
              },
            ]
          : [],
      ),
    });
    await hooks.until(ofType('agent.session.idle', session.id));
    await client.beta.agents.sessions.delete(session.id);
    await hooks.until(ofType('agent.session.failed', session.id));

    const events = await Promise.all(hooks.deliveries.map((delivery) => unwrap(client, delivery, secret)));
    const mine = events.filter((event) => (event.data as { id: string }).id === session.id);
    const seen = mine.map((event) => event.type);
    expect(seen[0]).toBe('agent.session.created');
    expect(seen).toEqual(expect.arrayContaining([...types]));
    // In the order it happened.
    const at = (type: string) => seen.indexOf(type as (typeof seen)[number]);
    expect(at('agent.session.in_progress')).toBeLessThan(at('agent.session.action_required'));
    expect(at('agent.session.action_required')).toBeLessThan(seen.lastIndexOf('agent.session.in_progress'));
    expect(seen.lastIndexOf('agent.session.in_progress')).toBeLessThan(at('agent.session.idle'));
    expect(mine.find((event) => event.type === 'agent.session.action_required')!.data).toEqual({ id: session.id, required_action: { type: 'function_call' } });
    expect(mine.find((event) => event.type === 'agent.session.created')!.data).toEqual({ id: session.id, environment_type: 'none' });
  });

  it('endpoints set by PTC_WEBHOOK_URLS get every event, signed with PTC_WEBHOOK_SECRET (any string)', async () => {
    const first = await receiver();
    const second = await receiver();
    const secret = 'a secret set by hand';
    const { client } = await server({ PTC_WEBHOOK_URLS: `${first.url}, ${second.url}`, PTC_WEBHOOK_SECRET: secret });
    const done = await client.responses.create({ model: 'm', input: 'hello', background: true });
    for (const { receiver: hooks } of [first, second]) {
      const [delivery] = await hooks.until(ofType('response.completed', done.id));
      expect(await unwrap(client, delivery!, secret)).toMatchObject({ type: 'response.completed', data: { id: done.id } });
    }
    // They are configuration, not API resources.
    expect((await client.webhooks.list()).data).toEqual([]);
  });

  it('a delivery the endpoint refuses is retried with the same webhook-id and a fresh signature, and each attempt is journaled', async () => {
    const { receiver: hooks, url } = await receiver();
    hooks.statuses = [500, 503];
    const { client, baseURL } = await server();
    const { signing_secret: secret } = await client.webhooks.create({ name: 'flaky', url, event_types: ['response.completed'] });
    const done = await client.responses.create({ model: 'm', input: 'hello', background: true });
    const attempts = await hooks.until(ofType('response.completed', done.id), 3);
    expect(new Set(attempts.map((delivery) => delivery.headers['webhook-id'])).size).toBe(1);
    for (const delivery of attempts) await unwrap(client, delivery, secret);

    // Each attempt is journaled once the endpoint answered it: the last may still be on its way.
    await journalEntry(baseURL, (entry) => entry.webhook?.outcome === 'delivered');
    const oldestFirst = await webhookEntries(baseURL);
    expect(oldestFirst.map((entry) => [entry.status, entry.webhook?.attempt, entry.webhook?.outcome])).toEqual([
      [500, 1, 'retrying'],
      [503, 2, 'retrying'],
      [200, 3, 'delivered'],
    ]);
    // The backoff doubles: 20 ms, then 40 ms (PTC_WEBHOOK_RETRY_MS=20).
    expect(oldestFirst.map((entry) => entry.webhook?.retry_in_ms)).toEqual([20, 40, undefined]);
  });

  it('each retry goes to the endpoint as it is then: a new URL and a rotated secret apply, a deleted endpoint gets no more', async () => {
    const first = await receiver();
    const second = await receiver();
    // The first receiver refuses everything; retries are 20 ms, then 40, 80, … apart.
    first.receiver.statuses = Array.from({ length: 100 }, () => 500);
    const { client, baseURL } = await server({ PTC_WEBHOOK_RETRY_MS: '200' });
    const made = await client.webhooks.create({ name: 'moving', url: first.url, event_types: ['response.completed'] });
    const done = await client.responses.create({ model: 'm', input: 'hello', background: true });
    await first.receiver.until(ofType('response.completed', done.id));
    const rotated = await client.webhooks.rotateSecret(made.id);
    await client.webhooks.update(made.id, { url: second.url });
    const [moved] = await second.receiver.until(ofType('response.completed', done.id));
    // Same delivery (webhook-id), now signed with the new secret only.
    expect(moved!.headers['webhook-id']).toBe(first.receiver.deliveries[0]!.headers['webhook-id']);
    await unwrap(client, moved!, rotated.signing_secret);
    await expect(unwrap(client, moved!, made.signing_secret)).rejects.toThrow(/signature/);

    // Deleted while a delivery to it waits for its next attempt: that attempt is not made.
    second.receiver.statuses = Array.from({ length: 100 }, () => 500);
    const again = await client.responses.create({ model: 'm', input: 'hello', background: true });
    await second.receiver.until(ofType('response.completed', again.id));
    await client.webhooks.delete(made.id);
    const last = await journalEntry(baseURL, (entry) => entry.webhook?.outcome === 'failed' && entry.webhook.data.id === again.id);
    expect(last.webhook).toMatchObject({ attempt: 2, error: expect.stringContaining('deleted') });
    expect(second.receiver.deliveries.filter((delivery) => JSON.parse(delivery.body).data.id === again.id)).toHaveLength(1);
  });

  it('gives up after PTC_WEBHOOK_MAX_ATTEMPTS', async () => {
    const { receiver: hooks, url } = await receiver();
    hooks.statuses = [500, 500, 500, 500];
    const { client, baseURL } = await server({ PTC_WEBHOOK_MAX_ATTEMPTS: '2' });
    await client.webhooks.create({ name: 'down', url, event_types: ['response.completed'] });
    const done = await client.responses.create({ model: 'm', input: 'hello', background: true });
    await hooks.until(ofType('response.completed', done.id), 2);
    // The second attempt is the last: the journal says it failed, with no retry due.
    const last = await journalEntry(baseURL, (entry) => entry.webhook?.outcome === 'failed');
    expect(last).toMatchObject({ status: 500, webhook: { attempt: 2, outcome: 'failed', data: { id: done.id } } });
    expect(last.webhook).not.toHaveProperty('retry_in_ms');
    // A later event's delivery arriving after it shows the first was not tried a third time meanwhile.
    hooks.statuses = [];
    const later = await client.responses.create({ model: 'm', input: 'hello', background: true });
    await hooks.until(ofType('response.completed', later.id));
    expect(hooks.deliveries.filter((delivery) => JSON.parse(delivery.body).data.id === done.id)).toHaveLength(2);
  });

  it('a background response the shutdown stops tells of it: response.failed is delivered as the server closes', async () => {
    const { receiver: hooks, url } = await receiver();
    const running = await server();
    const { client } = running;
    const { signing_secret: secret } = await client.webhooks.create({ name: 'shutdown', url, event_types: ['response.failed'] });
    const held = await client.responses.create({ model: 'm', input: 'hello', background: true }, { headers: { 'x-ptc-delay-ms': '600000' } });
    await running.close();
    const [delivery] = await hooks.until(ofType('response.failed', held.id));
    expect(await unwrap(client, delivery!, secret)).toMatchObject({ type: 'response.failed', data: { id: held.id } });
  });

  it('rotate_secret: the new secret signs; with keep_old_secret_active_for_24_hours the old one verifies too', async () => {
    const { receiver: hooks, url } = await receiver();
    const { client } = await server();
    const made = await client.webhooks.create({ name: 'rotating', url, event_types: ['response.completed'] });
    const kept = await client.webhooks.rotateSecret(made.id, { keep_old_secret_active_for_24_hours: true });
    expect(kept.signing_secret).not.toBe(made.signing_secret);
    const first = await client.responses.create({ model: 'm', input: 'hello', background: true });
    const [delivery] = await hooks.until(ofType('response.completed', first.id));
    await unwrap(client, delivery!, made.signing_secret);
    await unwrap(client, delivery!, kept.signing_secret);

    const replaced = await client.webhooks.rotateSecret(made.id);
    const second = await client.responses.create({ model: 'm', input: 'hello', background: true });
    const [after] = await hooks.until(ofType('response.completed', second.id));
    await unwrap(client, after!, replaced.signing_secret);
    await expect(unwrap(client, after!, made.signing_secret)).rejects.toThrow(/signature/);
    await expect(unwrap(client, after!, kept.signing_secret)).rejects.toThrow(/signature/);
  });

  it('endpoints round-trip: retrieve, update, list newest first, delete; test() sends a signed sample', async () => {
    const { receiver: hooks, url } = await receiver();
    const { client } = await server();
    const a = await client.webhooks.create({ name: 'a', url, event_types: ['response.completed'] });
    const b = await client.webhooks.create({ name: 'b', url, event_types: ['batch.completed'] });
    const retrieved = await client.webhooks.retrieve(a.id);
    expect(retrieved).not.toHaveProperty('signing_secret');
    expect(retrieved).toMatchObject({ id: a.id, name: 'a', signing_secret_hint: a.signing_secret_hint });
    const unchanged = await client.webhooks.update(a.id, { name: 'a' });
    expect(unchanged.updated_at).toBe(retrieved.updated_at);
    const renamed = await client.webhooks.update(a.id, { name: 'renamed', event_types: ['response.failed', 'response.completed'] });
    expect(renamed).toMatchObject({ name: 'renamed', event_types: ['response.failed', 'response.completed'] });
    const listed = [];
    for await (const endpoint of client.webhooks.list({ limit: 1 })) listed.push(endpoint.id);
    expect(listed).toEqual([b.id, a.id]);

    const result = await client.webhooks.test(b.id, { event_type: 'batch.completed' });
    expect(result).toEqual({ event_type: 'batch.completed', object: 'webhook_endpoint.test', status_code: 200, success: true, webhook_endpoint_id: b.id });
    const [sample] = await hooks.until(ofType('batch.completed'));
    expect(await unwrap(client, sample!, b.signing_secret)).toMatchObject({ type: 'batch.completed', object: 'event' });
    hooks.statuses = [418];
    expect((await client.webhooks.test(b.id, { event_type: 'batch.completed' })).status_code).toBe(418);

    expect((await client.webhooks.eventTypes.list()).data).toEqual(expect.arrayContaining([...ALL_SENT]));
    expect(await client.webhooks.delete(a.id)).toEqual({ id: a.id, deleted: true, object: 'webhook_endpoint.deleted' });
    expectSdkError(await rejectionOf(client.webhooks.retrieve(a.id)), { code: 'webhook_endpoint_not_found', param: 'webhook_endpoint_id' });
  });

  it('refuses what it cannot keep or reach, naming it', async () => {
    const { url } = await receiver();
    const { client } = await server({ PTC_WEBHOOK_ALLOWED_URLS: 'http://127.0.0.1:' });
    expectSdkError(await rejectionOf(client.webhooks.create({ name: 'x', url: 'http://10.0.0.1/hooks', event_types: ['response.completed'] })), {
      code: 'invalid_value',
      param: 'url',
    });
    expectSdkError(await rejectionOf(client.webhooks.create({ name: 'x', url, event_types: ['nope' as 'response.completed'] })), {
      code: 'invalid_value',
      param: 'event_types[0]',
    });
    expectSdkError(await rejectionOf(client.webhooks.create({ name: 'x', url: 'ftp://127.0.0.1/x', event_types: ['response.completed'] })), {
      code: 'invalid_value',
      param: 'url',
    });
    const withPassword = await rejectionOf(
      client.webhooks.create({ name: 'x', url: 'http://user:secret@127.0.0.1:9/hooks', event_types: ['response.completed'] }),
    );
    expectSdkError(withPassword, { code: 'invalid_value', param: 'url', mentions: ['without a user name or password'] });
    expect((withPassword as Error).message).not.toContain('secret@');
    const tooLong = await rejectionOf(client.webhooks.create({ name: 'x', url: `http://127.0.0.1/${'x'.repeat(3000)}`, event_types: ['response.completed'] }));
    expectSdkError(tooLong, { code: 'invalid_value', param: 'url', mentions: ['2048 characters'] });
    const closed = await client.webhooks.create({ name: 'gone', url: await unusedLoopbackUrl(), event_types: ['response.completed'] });
    expectSdkError(await rejectionOf(client.webhooks.test(closed.id, { event_type: 'response.completed' })), {
      code: 'webhook_test_failed',
      mentions: ['ECONNREFUSED'],
    });
    // A sample of the SDK's shape for its type.
    const { receiver: hooks, url: hooksUrl } = await receiver();
    const calls = await client.webhooks.create({ name: 'calls', url: hooksUrl, event_types: ['realtime.call.incoming'] });
    await client.webhooks.test(calls.id, { event_type: 'realtime.call.incoming' });
    const [sample] = await hooks.until(ofType('realtime.call.incoming'));
    expect(await unwrap(client, sample!, calls.signing_secret)).toMatchObject({ data: { call_id: expect.any(String), sip_headers: [] } });
  });
});

describe('webhook endpoints the server cannot keep', () => {
  it(`at most webhookEndpoints (${FIXED_LIMITS.webhookEndpoints.value}): one more is a 400 too_many_webhook_endpoints`, async () => {
    const { url } = await receiver();
    const { client } = await server();
    for (let made = 0; made < FIXED_LIMITS.webhookEndpoints.value; made++) {
      await client.webhooks.create({ name: `e${made}`, url, event_types: ['response.completed'] });
    }
    const refused = await rejectionOf(client.webhooks.create({ name: 'one more', url, event_types: ['response.completed'] }));
    expectSdkError(refused, { code: 'too_many_webhook_endpoints' });
  });

  it('a store of its own without records: the endpoint routes answer 400 webhooks_unsupported, PTC_WEBHOOK_URLS still delivers', async () => {
    const store = storeWithoutRecords();
    const { receiver: hooks, url } = await receiver();
    const started = await startServer({ store, env: { PTC_WEBHOOK_URLS: url, PTC_WEBHOOK_SECRET: 'by hand' } });
    servers.push(started);
    const { client } = started;
    expectSdkError(await rejectionOf(client.webhooks.list()), { code: 'webhooks_unsupported' });
    expectSdkError(await rejectionOf(client.webhooks.create({ name: 'x', url, event_types: ['response.completed'] })), { code: 'webhooks_unsupported' });
    expect((await client.webhooks.eventTypes.list()).data).toContain('response.completed');
    const done = await client.responses.create({ model: 'm', input: 'hello', background: true });
    const [delivery] = await hooks.until(ofType('response.completed', done.id));
    await unwrap(client, delivery!, 'by hand');
  });
});

describe('webhook settings', () => {
  it('PTC_WEBHOOK_URLS without PTC_WEBHOOK_SECRET is refused at start, saying why', async () => {
    await expect(startServer({ env: { PTC_WEBHOOK_URLS: 'http://127.0.0.1:1/x' } })).rejects.toThrow(/PTC_WEBHOOK_SECRET must be set/);
    await expect(startServer({ env: { PTC_WEBHOOK_URLS: 'not a url', PTC_WEBHOOK_SECRET: 's' } })).rejects.toThrow(/PTC_WEBHOOK_URLS must list/);
  });
});
