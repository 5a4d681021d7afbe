import type { Tool } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentLoop } from './support/agent-loop.ts';
import { inlineProgram, programTools } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

/**
 * One contract, run against both engines a server can have: isolates in its own process
 * (`workers: 0`, what most suites use because it starts fast) and the worker pool `serve` runs
 * (`workers: 1`). What a client sees through the SDK, the Responses API and the Agents API,
 * must not depend on which ran its programs.
 */

const SKU = { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'], additionalProperties: false } as const;
const GUIDE_TOOLS: Tool[] = [
  {
    type: 'function',
    name: 'get_inventory',
    parameters: SKU,
    output_schema: { type: 'object', properties: { available_units: { type: 'number' } }, required: ['available_units'] },
    allowed_callers: ['programmatic'],
    strict: true,
  },
  {
    type: 'function',
    name: 'get_demand',
    parameters: SKU,
    output_schema: { type: 'object', properties: { requested_units: { type: 'number' } }, required: ['requested_units'] },
    allowed_callers: ['programmatic'],
    strict: true,
  },
  { type: 'programmatic_tool_calling' },
];
const GUIDE_HANDLERS = {
  functions: {
    get_inventory: ({ sku }: { sku: string }) => ({ sku, available_units: 42 }),
    get_demand: ({ sku }: { sku: string }) => ({ sku, requested_units: 31 }),
  },
};

describe.each([
  ['in process', 0],
  ['in a worker pool', 1],
])('the engine %s', (_, workers) => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ config: { workers } });
  });
  afterAll(() => server.close());

  it.each([
    ['store: false', { store: false }],
    ['previous_response_id, streamed', { store: true, stream: true }],
  ])("runs the guide's loop (%s): one batch of two calls, then the program's output and the message", async (_, options) => {
    const result = await agentLoop(
      server.client,
      { model: 'm', input: 'Compare inventory with demand for sku_123.', tools: GUIDE_TOOLS },
      GUIDE_HANDLERS,
      options,
    );
    expect(result.responses.map((response) => response.output.map((item) => item.type))).toEqual([
      ['reasoning', 'program', 'function_call', 'function_call'],
      ['program_output', 'message'],
    ]);
    expect(result.text).toBe('get_inventory returned available_units 42; get_demand returned requested_units 31.');
  });

  it('pauses a program three times and resumes it each time, ending with its result', async () => {
    const code = 'let total = 0; for (const n of [1, 2, 3]) total += Number(await tools.add({ n })); text(total);';
    const result = await agentLoop(
      server.client,
      { model: 'm', input: inlineProgram(code), tools: programTools('add') },
      { functions: { add: ({ n }: { n: number }) => String(n * 10) } },
    );
    expect(result.responses.map((response) => response.output.filter((item) => item.type === 'function_call').length)).toEqual([1, 1, 1, 0]);
    expect(result.text).toBe('60');
  });

  it('ends a program that crosses a limit incomplete with its code, and goes on serving', async () => {
    const response = await server.client.responses.create({ model: 'm', input: inlineProgram('for (;;) {}'), tools: programTools() });
    const output = response.output.find((item) => item.type === 'program_output');
    expect(output).toMatchObject({ status: 'incomplete' });
    expect(JSON.parse(output!.type === 'program_output' ? output!.result : '{}').error.code).toBe('wall_time_exceeded');
    const next = await server.client.responses.create({ model: 'm', input: inlineProgram('text("still here")'), tools: programTools() });
    expect(next.output_text).toBe('still here');
  });

  it('runs an Agents API turn: the program calls both tools, the SDK answers them, the turn ends with the message', async () => {
    const agent = await server.client.beta.agents.create({
      model: 'm',
      tools: [
        { type: 'function', name: 'get_price', description: 'Unit price of a SKU.', parameters: SKU },
        { type: 'function', name: 'get_stock', description: 'Units in stock of a SKU.', parameters: SKU },
      ],
    });
    const session = await server.client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
    const result = await server.client.beta.agents.sessions
      .stream(session.id, {
        input: 'What are the price and the stock of sku_5?',
        toolHandlers: { get_price: () => ({ price: 3 }), get_stock: () => ({ units: 9 }) },
      })
      .finalResult();
    expect(result.output_text).toBe('get_price returned price 3; get_stock returned units 9.');
  });
});
