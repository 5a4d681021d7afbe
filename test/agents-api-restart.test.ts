import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type OpenAI from 'openai';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { AGENT_TOOLS, answerOf, PRICING_PROGRAM, PRICING_SCENARIOS } from './support/agents-api.ts';
import { startTestRedis } from './support/redis.ts';
import { spawnServer, type ServerProcess } from './support/server-process.ts';

type AgentSessionEvent = OpenAI.Beta.Agents.AgentSessionEvent;

const redis = await startTestRedis();
const running: ServerProcess[] = [];
const directories: string[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.kill()));
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});
afterAll(async () => {
  await redis?.stop();
});

async function start(env: Record<string, string>): Promise<ServerProcess> {
  const server = await spawnServer(env);
  running.push(server);
  return server;
}

/** A data directory holding the scenario file (direct calls for PTC off) and, for SQLite, the store. */
function setUp(store: 'sqlite' | 'redis'): Record<string, string> {
  const directory = mkdtempSync(join(tmpdir(), 'ptc-agents-restart-'));
  directories.push(directory);
  const scenarios = join(directory, 'scenarios.json');
  writeFileSync(scenarios, JSON.stringify(PRICING_SCENARIOS));
  const env = { PTC_DATA_DIR: directory, PTC_SCENARIOS: scenarios };
  if (store === 'sqlite') return { ...env, PTC_STORE: 'sqlite' };
  // The same fingerprint key after the restart, as a deployment keeps its key.
  return { ...env, PTC_STORE: 'redis', REDIS_URL: redis!.url, PTC_REDIS_PREFIX: redis!.keyPrefix, PTC_FINGERPRINT_KEY: randomUUID() };
}

/** Reads `stream` up to and with the first event `last` accepts. */
async function readUntil(stream: AsyncIterable<AgentSessionEvent>, last: (event: AgentSessionEvent) => boolean): Promise<AgentSessionEvent[]> {
  const seen: AgentSessionEvent[] = [];
  for await (const event of stream) {
    seen.push(event);
    if (last(event)) break;
  }
  return seen;
}

const cases = [
  { store: 'sqlite' as const, ptc: 'on' as const },
  { store: 'sqlite' as const, ptc: 'off' as const },
  { store: 'redis' as const, ptc: 'on' as const },
  { store: 'redis' as const, ptc: 'off' as const },
];

describe('an agent session waiting on tool results survives a restart (kill -9) of the server', () => {
  it.each(cases)('store $store, programmatic tool calling $ptc', async ({ store, ptc }) => {
    if (store === 'redis' && !redis) return;
    const env = setUp(store);
    const first = await start(env);
    const tools = ptc === 'on' ? AGENT_TOOLS : [...AGENT_TOOLS, { type: 'programmatic_tool_calling' as const, enabled: false }];
    const agent = await first.client.beta.agents.create({ model: 'gpt-6-astra', tools });
    const session = await first.client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
    const before = await first.client.beta.agents.sessions.events.stream(session.id);
    const text = ptc === 'on' ? PRICING_PROGRAM : 'What is the value of stock directly?';
    await first.client.beta.agents.sessions.events.create(session.id, {
      events: [{ type: 'agent.session.input.message', input: [{ role: 'user', content: [{ type: 'input_text', text }] }] }],
    });
    const paused = await readUntil(before, (event) => event.type === 'agent.session.requires_action');
    const calls = paused.flatMap((event) => (event.type === 'agent.session.turn.item.added' && event.item.type === 'function_call' ? [event.item] : []));
    expect(calls.map((call) => call.name)).toEqual(['get_price', 'get_stock']);
    await first.kill();

    const second = await start(env);
    const waiting = await second.client.beta.agents.sessions.retrieve(session.id);
    expect(waiting.status).toBe('requires_action');
    expect(waiting.required_actions.map((action) => action.type === 'function_call' && action.call_id)).toEqual(calls.map((call) => call.call_id));
    const after = await second.client.beta.agents.sessions.events.stream(session.id);
    for (const call of calls) {
      await second.client.beta.agents.sessions.events.create(session.id, {
        events: [{ type: 'agent.session.input.tool_result', turn_id: call.turn_id, call_id: call.call_id, success: true, output: answerOf(call.name) }],
      });
    }
    let turnEnded = false;
    const rest = await readUntil(after, (event) => {
      if (event.type === 'agent.session.turn.completed' || event.type === 'agent.session.turn.failed') turnEnded = true;
      return turnEnded && event.type === 'agent.session.idle';
    });
    expect(rest.find((event) => event.type === 'agent.session.turn.completed')).toMatchObject({ turn: { status: 'completed' } });
    const items = await second.client.beta.agents.sessions.items.list(session.id, { order: 'asc' });
    const final = items.data.at(-1);
    expect(final?.type === 'message' && final.content).toEqual([
      { type: 'output_text', text: ptc === 'on' ? '{"value":42}' : 'Outputs: ["{\\"price\\":7}","{\\"units\\":6}"]' },
    ]);
    expect(items.data.map((item) => item.type)).toEqual([
      'message',
      'function_call',
      'function_call',
      'function_call_output',
      'function_call_output',
      'message',
    ]);
    // Paged from the store, two at a time, either way.
    for (const order of ['asc', 'desc'] as const) {
      const paged = [];
      for await (const item of second.client.beta.agents.sessions.items.list(session.id, { order, limit: 2 })) paged.push(item.id);
      const ids = items.data.map((item) => item.id);
      expect(paged).toEqual(order === 'asc' ? ids : ids.reverse());
    }
  });
});
