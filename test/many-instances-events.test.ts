import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_TOOLS, answerOf, PRICING_PROGRAM } from './support/agents-api.ts';
import { startTestRedis } from './support/redis.ts';
import { spawnServer, type ServerProcess } from './support/server-process.ts';

type AgentSessionEvent = OpenAI.Beta.Agents.AgentSessionEvent;

// Two server processes on one real Redis (PTC_STORE=redis): the Agents API's session events
// reach the streams of both, whichever made them, and a background response running on one
// streams whole from the other. Every process started here is killed after, however the tests end.

const redis = await startTestRedis();
const processes: ServerProcess[] = [];

/** The same settings on every instance, as a deployment of several instances has. */
const env = {
  PTC_STORE: 'redis',
  REDIS_URL: redis?.url ?? '',
  PTC_REDIS_PREFIX: redis?.keyPrefix ?? '',
  PTC_FINGERPRINT_KEY: randomUUID(),
  PTC_DATA_DIR: '/nonexistent',
};

async function start(): Promise<ServerProcess> {
  const server = await spawnServer(env);
  processes.push(server);
  return server;
}

afterAll(async () => {
  await Promise.all(processes.splice(0).map((server) => server.kill()));
  await redis?.stop();
});
// A test worker that dies without running afterAll leaves no server behind.
process.once('exit', () => {
  for (const server of processes) server.process.kill('SIGKILL');
});

const message = (text: string) => ({
  type: 'agent.session.input.message' as const,
  input: [{ role: 'user' as const, content: [{ type: 'input_text' as const, text }] }],
});

/** Reads events from `events` up to and with the first one `last` accepts; an end before it fails. */
async function readUntil(events: AsyncIterator<AgentSessionEvent>, last: (event: AgentSessionEvent) => boolean): Promise<AgentSessionEvent[]> {
  const seen: AgentSessionEvent[] = [];
  for (;;) {
    const next = await events.next();
    if (next.done) throw new Error(`the event stream ended after ${seen.map((event) => event.type).join(', ') || 'nothing'}`);
    seen.push(next.value);
    if (last(next.value)) return seen;
  }
}

/** The end of a turn: it ended (any way), then the session went idle. */
function turnOver(): (event: AgentSessionEvent) => boolean {
  let ended = false;
  return (event) => {
    if (event.type === 'agent.session.turn.completed' || event.type === 'agent.session.turn.failed' || event.type === 'agent.session.turn.cancelled')
      ended = true;
    return ended && event.type === 'agent.session.idle';
  };
}

/** Opens a session's event stream on `server`: resolved once its headers are in (it delivers from then on). */
async function openStream(server: ServerProcess, sessionId: string): Promise<AsyncIterator<AgentSessionEvent>> {
  const stream = await server.client.beta.agents.sessions.events.stream(sessionId);
  return stream[Symbol.asyncIterator]();
}

describe.skipIf(!redis)('two instances on one Redis: agent session events reach the streams of both', () => {
  let a: ServerProcess;
  let b: ServerProcess;
  beforeAll(async () => {
    a = await start();
    b = await start();
  });

  it('a session made on A, streams open on B and A, a message on A, tool results on B: both streams see every event, in one order, with the same ids', async () => {
    const agent = await a.client.beta.agents.create({ model: 'gpt-6-astra', name: 'pricing', tools: AGENT_TOOLS });
    const session = await a.client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
    const onB = await openStream(b, session.id);
    const onA = await openStream(a, session.id);
    await a.client.beta.agents.sessions.events.create(session.id, { events: [message(PRICING_PROGRAM)] });

    // The program runs on A; B's stream shows its calls.
    const pausedOnB = await readUntil(onB, (event) => event.type === 'agent.session.requires_action');
    const calls = pausedOnB.flatMap((event) => (event.type === 'agent.session.turn.item.added' && event.item.type === 'function_call' ? [event.item] : []));
    expect(calls.map((call) => call.name)).toEqual(['get_price', 'get_stock']);
    for (const call of calls) {
      await b.client.beta.agents.sessions.events.create(session.id, {
        events: [{ type: 'agent.session.input.tool_result', turn_id: call.turn_id, call_id: call.call_id, success: true, output: answerOf(call.name) }],
      });
    }

    const seenOnB = [...pausedOnB, ...(await readUntil(onB, turnOver()))];
    const seenOnA = await readUntil(onA, turnOver());
    for (const seen of [seenOnA, seenOnB]) {
      expect(seen[0]).toMatchObject({ type: 'agent.session.in_progress' });
      expect(seen.find((event) => event.type === 'agent.session.turn.completed')).toMatchObject({ turn: { status: 'completed' } });
      expect(seen.at(-1)).toMatchObject({ type: 'agent.session.idle', session: { status: 'idle', required_actions: [] } });
      const done = seen.findLast((event) => event.type === 'agent.session.turn.item.done' && event.item.type === 'message');
      expect(done).toMatchObject({ item: { role: 'assistant', content: [{ type: 'output_text', text: '{"value":42}' }] } });
      expect(new Set(seen.map((event) => event.event_id)).size).toBe(seen.length);
    }
    // The same events, whole, in the same order: made on A (the turn, its calls, its answer) and on B (the results).
    expect(seenOnA).toEqual(seenOnB);
    expect(
      seenOnA
        .filter((event) => event.type === 'agent.session.turn.item.added')
        .map((event) => event.type === 'agent.session.turn.item.added' && event.item.type),
    ).toEqual(['message', 'function_call', 'function_call', 'function_call_output', 'function_call_output', 'message']);
    for (const stream of [onA, onB]) await stream.return?.();
    expect((await b.client.beta.agents.sessions.retrieve(session.id)).status).toBe('idle');
  });

  it('a session deleted on B: its streams on A and B hear agent.session.failed, then end', async () => {
    const agent = await b.client.beta.agents.create({ model: 'gpt-6-astra', tools: AGENT_TOOLS });
    const session = await b.client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
    const streams = [await openStream(a, session.id), await openStream(b, session.id)];
    await b.client.beta.agents.sessions.delete(session.id);
    for (const stream of streams) {
      const seen = await readUntil(stream, (event) => event.type === 'agent.session.failed');
      expect(seen.map((event) => event.type)).toEqual(['agent.session.failed']);
      expect(seen[0]).toMatchObject({ session: { id: session.id, status: 'failed', error: 'The session was deleted.' } });
      expect((await stream.next()).done).toBe(true);
    }
  });

  it('sessions.create with stream: true on B and a program calling tools, answered on A: the stream ends once the turn has ended', async () => {
    const agent = await a.client.beta.agents.create({ model: 'gpt-6-astra', tools: AGENT_TOOLS });
    const created = await b.client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' }, input: PRICING_PROGRAM, stream: true });
    const events = created[Symbol.asyncIterator]();
    const first = await readUntil(events, (event) => event.type === 'agent.session.requires_action');
    expect(first[0]).toMatchObject({ type: 'agent.session.created' });
    const sessionId = (first[0] as Extract<AgentSessionEvent, { type: 'agent.session.created' }>).session.id;
    const calls = first.flatMap((event) => (event.type === 'agent.session.turn.item.added' && event.item.type === 'function_call' ? [event.item] : []));
    await a.client.beta.agents.sessions.events.create(sessionId, {
      events: calls.map((call) => ({
        type: 'agent.session.input.tool_result' as const,
        turn_id: call.turn_id,
        call_id: call.call_id,
        success: true,
        output: answerOf(call.name),
      })),
    });
    const rest = await readUntil(events, turnOver());
    expect(rest.find((event) => event.type === 'agent.session.turn.completed')).toBeDefined();
    expect((await events.next()).done).toBe(true);
  });

  it('GET /v1/responses/{id}?stream=true on B streams a background response running on A, once it has finished, whole', async () => {
    const queued = await a.client.responses.create({ model: 'gpt-6-astra', input: 'hello', background: true }, { headers: { 'x-ptc-delay-ms': '1000' } });
    const events: ResponseStreamEvent[] = [];
    for await (const event of await b.client.responses.retrieve(queued.id, { stream: true })) events.push(event);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    expect(events.slice(0, 3).map((event) => event.type)).toEqual(['response.created', 'response.queued', 'response.in_progress']);
    expect(events.at(-1)?.type).toBe('response.completed');
    const terminal = events.at(-1) as Extract<ResponseStreamEvent, { type: 'response.completed' }>;
    const { output_text: _, ...stored } = await a.client.responses.retrieve(queued.id);
    expect(terminal.response).toEqual(stored);
    expect(terminal.response.status).toBe('completed');
  });

  it('a background response running on A, cancelled on B: A stops it, and the cancellation stands', async () => {
    // Held 4 s before its turn begins: the cancel on B, sent at once, arrives while A's job waits.
    const queued = await a.client.responses.create({ model: 'gpt-6-astra', input: 'hello', background: true }, { headers: { 'x-ptc-delay-ms': '4000' } });
    const cancelled = await b.client.responses.cancel(queued.id);
    expect(cancelled.status).toBe('cancelled');
    // A's job has ended once A journals how: cancelled, not completed over the cancellation.
    let outcome: string | undefined;
    while (outcome === undefined) {
      const journal = (await (await fetch(`${a.baseURL}/emulator/journal?limit=1000`)).json()) as {
        data: { method: string; response_id?: string; response_status?: string }[];
      };
      outcome = journal.data.find((entry) => entry.method === 'BACKGROUND' && entry.response_id === queued.id)?.response_status;
      if (outcome === undefined) await sleep(50);
    }
    expect(outcome).toBe('cancelled');
    expect((await a.client.responses.retrieve(queued.id)).status).toBe('cancelled');
    expect((await b.client.responses.retrieve(queued.id)).status).toBe('cancelled');
  });

  it('a background response that finished on A before a cancel on B reached it: the cancel returns it as it finished', async () => {
    const done = await a.client.responses.create({ model: 'gpt-6-astra', input: 'hello', background: true });
    while ((await a.client.responses.retrieve(done.id)).status !== 'completed') await sleep(20);
    expect((await b.client.responses.cancel(done.id)).status).toBe('completed');
    expect((await a.client.responses.retrieve(done.id)).status).toBe('completed');
  });

  it('an instance closing (SIGTERM) while a client waits on it for a background response running on A: the wait ends 503 shutting_down, and the instance exits', async () => {
    const c = await start();
    const queued = await a.client.responses.create({ model: 'gpt-6-astra', input: 'hello', background: true }, { headers: { 'x-ptc-delay-ms': '600000' } });
    const waiting = c.client.responses.retrieve(queued.id, { stream: true }).then(
      () => undefined,
      (error: unknown) => error,
    );
    // Under way on C (its log says so) before C is told to close.
    while (!c.output().includes(`/v1/responses/${queued.id}?stream=true`)) await sleep(10);
    const exited = new Promise<number | null>((resolve) => c.process.once('exit', (code) => resolve(code)));
    await c.stop();
    // 0: closed in full; a close held up by the wait would have exited 1 at its deadline.
    expect(await exited).toBe(0);
    expect(await waiting).toMatchObject({ status: 503, code: 'shutting_down' });
    expect((await a.client.responses.cancel(queued.id)).status).toBe('cancelled');
  });

  it('an instance closing (SIGTERM) with streams open ends them and its reader, and exits', async () => {
    const c = await start();
    const agent = await c.client.beta.agents.create({ model: 'gpt-6-astra', tools: AGENT_TOOLS });
    const session = await c.client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
    const streams = [await openStream(c, session.id), await openStream(c, session.id)];
    const exited = new Promise<number | null>((resolve) => c.process.once('exit', (code) => resolve(code)));
    await c.stop();
    expect(await exited).toBe(0);
    // Ended, or its connection dropped with it: either way the stream is over.
    for (const stream of streams)
      expect(
        await stream.next().then(
          (next) => next.done,
          () => true,
        ),
      ).toBe(true);
    // The other instances go on serving the session.
    expect((await a.client.beta.agents.sessions.retrieve(session.id)).status).toBe('idle');
  });
});
