// Entry point of `npm run bench:agents`: what one turn costs through the Agents API's harness
// against the same turn driven by hand on the Responses API (its baseline, in this run). The
// turn: a program that calls two client-owned tools at once, then answers. The Agents API adds a
// session, its event stream and one post per tool result; the harness makes the same two stored
// responses the Responses loop makes. No thresholds: this reports, and fails only on a wrong answer.
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import type { ResponseInputItem, Tool } from 'openai/resources/responses/responses';
import { buildServer } from '../server/app.ts';
import { describeEnvironment } from './environment.ts';
import type { MeasureOptions } from './measure.ts';
import { measureInRounds, ratioTable, type BenchCase } from './rounds.ts';
import { positiveNumberFromEnv } from './settings.ts';

/** BENCH_AGENTS_SCALE multiplies every iteration count (e.g. 0.1 for a quick look). */
const factor = positiveNumberFromEnv('BENCH_AGENTS_SCALE', 1);
const options = (warmup: number, iterations: number): MeasureOptions => ({
  warmup: Math.max(1, Math.round(warmup * factor)),
  iterations: Math.max(1, Math.round(iterations * factor)),
});

const app = await buildServer({ logger: false, config: { workers: 0, store: 'memory' } });
await app.listen({ host: '127.0.0.1', port: 0 });
const { port } = app.server.address() as AddressInfo;
const client = new OpenAI({ apiKey: process.env['PTC_API_KEY'] || 'bench-key', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });

const sku = { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] };
const AGENT_TOOLS = [
  { type: 'function' as const, name: 'get_price', description: 'Unit price of a SKU.', parameters: sku },
  { type: 'function' as const, name: 'get_stock', description: 'Units in stock of a SKU.', parameters: sku },
];
/** The Responses tools the harness gives an agent with these tools (PTC on). */
const RESPONSE_TOOLS: Tool[] = [
  ...AGENT_TOOLS.map((tool): Tool => ({ ...tool, strict: false, allowed_callers: ['direct', 'programmatic'] })),
  { type: 'programmatic_tool_calling' },
];
const PROGRAM =
  "Value it:\n```js\nconst [p, s] = await Promise.all([tools.get_price({ sku: 'a' }), tools.get_stock({ sku: 'a' })]);\ntext({ value: JSON.parse(p).price * JSON.parse(s).units });\n```";
const EXPECTED = '{"value":42}';
const answer = (name: string): string => JSON.stringify(name === 'get_price' ? { price: 7 } : { units: 6 });

function expectAnswer(text: string): void {
  if (text !== EXPECTED) throw new Error(`expected ${EXPECTED}, got ${JSON.stringify(text)}`);
}

/** The Responses API by hand: store: true, the outputs (with their caller) continuing by previous_response_id. */
async function responsesTurn(): Promise<void> {
  let response = await client.responses.create({ model: 'bench', input: PROGRAM, tools: RESPONSE_TOOLS });
  for (;;) {
    const calls = response.output.filter((item) => item.type === 'function_call');
    if (calls.length === 0) return expectAnswer(response.output_text);
    const input = calls.map(
      (call): ResponseInputItem => ({ type: 'function_call_output', call_id: call.call_id, output: answer(call.name), caller: call.caller ?? null }),
    );
    response = await client.responses.create({ model: 'bench', previous_response_id: response.id, tools: RESPONSE_TOOLS, input });
  }
}

const agent = await client.beta.agents.create({ model: 'bench', tools: AGENT_TOOLS });

/** The Agents API by hand: a session, its event stream, the message, one post per tool result. */
async function agentsTurnByHand(): Promise<void> {
  const session = await client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
  const stream = await client.beta.agents.sessions.events.stream(session.id);
  await client.beta.agents.sessions.events.create(session.id, {
    events: [{ type: 'agent.session.input.message', input: [{ role: 'user', content: [{ type: 'input_text', text: PROGRAM }] }] }],
  });
  let text = '';
  for await (const event of stream) {
    if (event.type === 'agent.session.turn.item.added' && event.item.type === 'function_call') {
      const call = event.item;
      await client.beta.agents.sessions.events.create(session.id, {
        events: [{ type: 'agent.session.input.tool_result', turn_id: call.turn_id, call_id: call.call_id, success: true, output: answer(call.name) }],
      });
    }
    if (event.type === 'agent.session.turn.item.done' && event.item.type === 'message') text = event.item.content.map((part) => part.text).join('');
    if (event.type === 'agent.session.idle' && text !== '') break;
  }
  expectAnswer(text);
}

/** The SDK's own loop: sessions.stream() with toolHandlers. */
async function agentsTurnWithHelper(): Promise<void> {
  const session = await client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
  const result = await client.beta.agents.sessions
    .stream(session.id, { input: PROGRAM, toolHandlers: { get_price: () => ({ price: 7 }), get_stock: () => ({ units: 6 }) } })
    .finalResult();
  expectAnswer(result.output_text);
}

const cases: BenchCase[] = [
  { name: 'Responses API by hand: 2 requests (baseline)', run: responsesTurn, options: options(20, 200) },
  { name: 'Agents API by hand: session, stream, message, 2 results', run: agentsTurnByHand, options: options(20, 200) },
  { name: 'Agents API, sessions.stream() with toolHandlers', run: agentsTurnWithHelper, options: options(20, 200) },
];

for (const line of describeEnvironment()) console.log(line);
console.log(
  "Sequential, one turn at a time, responses and records in memory, isolates in the server's process; times in ms; ratios divide medians measured in this run.\n",
);

let results;
try {
  results = await measureInRounds(cases);
} finally {
  await app.close();
}
console.log(ratioTable(cases, results, 'turn', 'x Responses by hand'));
