// Entry point of `npm run bench:tools`: what a program's tool call costs by who owns the tool.
// A server-owned MCP call is made by the emulator while the program waits, inside one HTTP
// request; a client-owned function call suspends the program and costs the client a round trip
// and the emulator a resume. Baseline: the same MCP tool called by a bare MCP SDK client on an
// open session, measured in this run against the same local MCP server. No thresholds: this
// reports, it never fails on speed, only on a wrong answer.
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import OpenAI from 'openai';
import type { Response, ResponseInputItem, Tool } from 'openai/resources/responses/responses';
import { buildServer } from '../server/app.ts';
import { startStreamableMcpServer } from '../test/support/mcp-servers.ts';
import { describeEnvironment } from './environment.ts';
import type { MeasureOptions } from './measure.ts';
import { measureInRounds, ratioTable, type BenchCase } from './rounds.ts';
import { formatTable } from './table.ts';
import { positiveNumberFromEnv } from './settings.ts';

/** BENCH_TOOLS_SCALE multiplies every iteration count (e.g. 0.1 for a quick look). */
const factor = positiveNumberFromEnv('BENCH_TOOLS_SCALE', 1);
const options = (warmup: number, iterations: number): MeasureOptions => ({
  warmup: Math.max(1, Math.round(warmup * factor)),
  iterations: Math.max(1, Math.round(iterations * factor)),
});

/** Calls per program in the many-calls cases. */
const CALLS = 10;

const mcp = await startStreamableMcpServer();
const app = await buildServer({ logger: false, config: { workers: 0, store: 'memory' } });
await app.listen({ host: '127.0.0.1', port: 0 });
const { port } = app.server.address() as AddressInfo;
const client = new OpenAI({ apiKey: process.env['PTC_API_KEY'] || 'bench-key', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });

const MCP_TOOLS: Tool[] = [
  { type: 'mcp', server_label: 'calc', server_url: mcp.url, require_approval: 'never', allowed_callers: ['programmatic'] },
  { type: 'programmatic_tool_calling' },
];
const FUNCTION_TOOLS: Tool[] = [
  {
    type: 'function',
    name: 'add',
    parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
    strict: false,
    allowed_callers: ['programmatic'],
  },
  { type: 'programmatic_tool_calling' },
];

const inline = (code: string): string => `Run this:\n\`\`\`js\n${code}\n\`\`\``;
const sequential = (count: number): string =>
  `let total = 0;\nfor (let i = 0; i < ${count}; i++) total = JSON.parse(await tools.calc.add({ a: total, b: 1 })).sum;\ntext(total);`;
const parallel = (count: number): string =>
  `const sums = await Promise.all(Array.from({ length: ${count} }, (_, i) => tools.calc.add({ a: i, b: 1 })));\ntext(sums.map((s) => JSON.parse(s).sum).reduce((x, y) => x + y, 0));`;
const sequentialFunctions = (count: number): string =>
  `let total = 0;\nfor (let i = 0; i < ${count}; i++) total = Number(await tools.add({ a: total, b: 1 }));\ntext(total);`;

/** Fails the bench on a wrong answer: a fast sample that is wrong must not count. */
function expectResult(response: Response, expected: string): void {
  const programOutput = response.output.find((item) => item.type === 'program_output');
  if (programOutput?.type !== 'program_output' || programOutput.status !== 'completed' || programOutput.result !== expected) {
    throw new Error(`expected the program to complete with ${expected}, got ${JSON.stringify(response.output)}`);
  }
}

/** One request whose program's MCP calls the emulator makes itself (listing the server first, as a fresh conversation does). */
async function mcpRequest(code: string, expected: string): Promise<void> {
  const response = await client.responses.create({ model: 'bench', store: false, input: inline(code), tools: MCP_TOOLS });
  expectResult(response, expected);
}

/** The client loop for client-owned calls: one request per call, every item resent (`store: false`). */
async function functionLoop(code: string, expected: string): Promise<void> {
  let input: ResponseInputItem[] = [{ role: 'user', content: inline(code) }];
  for (;;) {
    const response = await client.responses.create({ model: 'bench', store: false, input, tools: FUNCTION_TOOLS });
    const calls = response.output.filter((item) => item.type === 'function_call');
    if (calls.length === 0) return expectResult(response, expected);
    const outputs = calls.map((call): ResponseInputItem => {
      const args = JSON.parse(call.arguments) as { a: number; b: number };
      return { type: 'function_call_output', call_id: call.call_id, output: String(args.a + args.b), caller: call.caller ?? null };
    });
    input = [...input, ...(response.output as ResponseInputItem[]), ...outputs];
  }
}

const bare = new Client({ name: 'bench', version: '1.0.0' });
await bare.connect(new StreamableHTTPClientTransport(new URL(mcp.url)));

const sum = (count: number): string => String(Array.from({ length: count }, (_, i) => i + 1).reduce((x, y) => x + y, 0));
const cases: BenchCase[] = [
  {
    name: 'bare MCP client: one tools/call (baseline)',
    options: options(50, 500),
    run: async () => {
      const result = await bare.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
      if (JSON.stringify(result.structuredContent) !== '{"sum":5}') throw new Error(`bare call answered ${JSON.stringify(result)}`);
    },
  },
  {
    name: 'program, no tools',
    options: options(20, 200),
    run: async () =>
      expectResult(
        await client.responses.create({ model: 'bench', store: false, input: inline('text(0)'), tools: [{ type: 'programmatic_tool_calling' }] }),
        '0',
      ),
  },
  { name: 'program, no call (MCP server listed)', options: options(20, 200), run: () => mcpRequest('text(0)', '0') },
  { name: 'program, 1 MCP call', options: options(20, 200), run: () => mcpRequest(sequential(1), '1') },
  { name: `program, ${CALLS} MCP calls one after another`, options: options(10, 100), run: () => mcpRequest(sequential(CALLS), String(CALLS)) },
  { name: `program, ${CALLS} MCP calls in Promise.all`, options: options(10, 100), run: () => mcpRequest(parallel(CALLS), sum(CALLS)) },
  { name: 'program, 1 client function call (2 requests)', options: options(20, 200), run: () => functionLoop(sequentialFunctions(1), '1') },
  {
    name: `program, ${CALLS} client function calls (${CALLS + 1} requests)`,
    options: options(5, 50),
    run: () => functionLoop(sequentialFunctions(CALLS), String(CALLS)),
  },
];

for (const line of describeEnvironment()) console.log(line);
console.log(
  `Sequential, one request at a time, store: false, isolates in the server's process; a local Streamable HTTP MCP server; times in ms; ratios divide medians measured in this run.\n`,
);

let results;
try {
  results = await measureInRounds(cases);
} finally {
  await bare.close();
  await app.close();
  await mcp.close();
}
console.log(ratioTable(cases, results, 'case', 'x bare MCP call'));

const baseline = results.get(cases[0]!.name)!;
const ms = (value: number): string => value.toFixed(3);

// What one more call adds, from the slope between 1 and CALLS calls: the request's fixed cost cancels out.
const slope = (many: string, one: string): number => (results.get(many)!.medianMs - results.get(one)!.medianMs) / (CALLS - 1);
const mcpPerCall = slope(cases[4]!.name, cases[3]!.name);
const parallelPerCall = (results.get(cases[5]!.name)!.medianMs - results.get(cases[2]!.name)!.medianMs) / CALLS;
const functionPerCall = slope(cases[7]!.name, cases[6]!.name);
console.log(
  `\n${formatTable(
    [
      { header: 'one more call', align: 'left' },
      { header: 'ms', align: 'right' },
      { header: 'x bare MCP call', align: 'right' },
    ],
    [
      ['MCP call, sequential (emulator makes it)', ms(mcpPerCall), `${(mcpPerCall / baseline.medianMs).toFixed(2)}x`],
      ['MCP call, in Promise.all', ms(parallelPerCall), `${(parallelPerCall / baseline.medianMs).toFixed(2)}x`],
      ['client function call (round trip + resume)', ms(functionPerCall), `${(functionPerCall / baseline.medianMs).toFixed(2)}x`],
    ],
  )}`,
);
