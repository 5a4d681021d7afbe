import { fileURLToPath } from 'node:url';
import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { Response, ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from './support/server.ts';

// The seed guide's tools and client implementations, verbatim.
const implementations: Record<string, (args: { sku: string }) => Promise<unknown>> = {
  get_inventory: async ({ sku }) => ({ sku, available_units: 42 }),
  get_demand: async ({ sku }) => ({ sku, requested_units: 31 }),
};

const tools: OpenAI.Responses.Tool[] = [
  {
    type: 'function',
    name: 'get_inventory',
    description: 'Return an object with sku (string) and available_units (number).',
    parameters: {
      type: 'object',
      properties: { sku: { type: 'string' } },
      required: ['sku'],
      additionalProperties: false,
    },
    output_schema: {
      type: 'object',
      properties: {
        sku: { type: 'string' },
        available_units: { type: 'number' },
      },
      required: ['sku', 'available_units'],
      additionalProperties: false,
    },
    allowed_callers: ['programmatic'],
    strict: true,
  },
  {
    type: 'function',
    name: 'get_demand',
    description: 'Return an object with sku (string) and requested_units (number).',
    parameters: {
      type: 'object',
      properties: { sku: { type: 'string' } },
      required: ['sku'],
      additionalProperties: false,
    },
    output_schema: {
      type: 'object',
      properties: {
        sku: { type: 'string' },
        requested_units: { type: 'number' },
      },
      required: ['sku', 'requested_units'],
      additionalProperties: false,
    },
    allowed_callers: ['programmatic'],
    strict: true,
  },
  { type: 'programmatic_tool_calling' },
];

const EXPECTED_RESULT = '{"sku":"sku_123","available_units":42,"requested_units":31,"shortage_units":0}';

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ scenarios: fileURLToPath(new URL('./fixtures/seed-scenario.yaml', import.meta.url)) });
});
afterAll(() => server.close());

/** The seed's store: false loop, with console.log swapped for a return and every response kept. */
async function seedLoopStateless(client: OpenAI): Promise<{ text: string; responses: Response[] }> {
  const responses: Response[] = [];
  const input: ResponseInputItem[] = [
    {
      role: 'user',
      content: 'Compare inventory with demand for sku_123.',
    },
  ];

  while (true) {
    const response = await client.responses.create({
      model: 'YOUR_MODEL_ID',
      store: false,
      input,
      tools,
    });
    responses.push(response);

    if (response.status !== 'completed') {
      throw new Error(`Response ended with status ${response.status}`);
    }

    // Preserve replayable output, including program and reasoning items.
    input.push(...toResponseInputItems(response.output));

    const calls = response.output.filter((item) => item.type === 'function_call');

    if (calls.length === 0) {
      const message = response.output.find((item) => item.type === 'message');
      if (message) {
        const refusal = message.content.find((part) => part.type === 'refusal');
        return { text: response.output_text || refusal?.refusal || '', responses };
      }
      continue;
    }

    const outputs = await Promise.all(
      calls.map(async (call) => {
        const run = implementations[call.name];
        if (!run) throw new Error(`Unknown tool: ${call.name}`);

        const result = await run(JSON.parse(call.arguments));
        return {
          type: 'function_call_output' as const,
          call_id: call.call_id,
          output: JSON.stringify(result),
          // Preserve caller so the runtime can resume the correct program.
          caller: call.caller,
        };
      }),
    );

    input.push(...outputs);
  }
}

/** The same loop continuing stored responses with previous_response_id, as the guide describes. */
async function seedLoopStored(client: OpenAI): Promise<{ text: string; responses: Response[] }> {
  const responses: Response[] = [];
  let input: ResponseInputItem[] = [{ role: 'user', content: 'Compare inventory with demand for sku_123.' }];
  let previousResponseId: string | undefined;
  while (true) {
    const response = await client.responses.create({
      model: 'YOUR_MODEL_ID',
      input,
      tools,
      ...(previousResponseId ? { previous_response_id: previousResponseId } : {}),
    });
    responses.push(response);
    if (response.status !== 'completed') throw new Error(`Response ended with status ${response.status}`);
    previousResponseId = response.id;
    const calls = response.output.filter((item) => item.type === 'function_call');
    if (calls.length === 0) {
      const message = response.output.find((item) => item.type === 'message');
      if (message) return { text: response.output_text, responses };
      input = [];
      continue;
    }
    input = await Promise.all(
      calls.map(async (call) => ({
        type: 'function_call_output' as const,
        call_id: call.call_id,
        output: JSON.stringify(await implementations[call.name]!(JSON.parse(call.arguments))),
        caller: call.caller,
      })),
    );
  }
}

describe.each([
  ['store: false, resending every item', seedLoopStateless],
  ['store: true, continuing with previous_response_id', seedLoopStored],
])('the seed client loop (%s)', (_, loop) => {
  it('reaches the final message with the expected program result', async () => {
    const { text, responses } = await loop(server.client);
    expect(text).toBe(EXPECTED_RESULT);
    expect(responses).toHaveLength(2);

    const [paused, finished] = responses as [Response, Response];
    expect(paused.output.map((item) => item.type)).toEqual(['program', 'function_call', 'function_call']);
    const [program, inventory, demand] = paused.output as [
      OpenAI.Responses.ResponseOutputItem.Program,
      OpenAI.Responses.ResponseFunctionToolCall,
      OpenAI.Responses.ResponseFunctionToolCall,
    ];
    expect(program.code).toContain('tools.get_inventory');
    expect(program.fingerprint).toMatch(/^ptcfp3\./);
    // Promise.all: both calls in one batch, in the order the program made them.
    expect([inventory.name, demand.name]).toEqual(['get_inventory', 'get_demand']);
    for (const call of [inventory, demand]) {
      expect(call.arguments).toBe('{"sku":"sku_123"}');
      expect(call.caller).toEqual({ type: 'program', caller_id: program.call_id });
    }

    expect(finished.output.map((item) => item.type)).toEqual(['program_output', 'message']);
    expect(finished.output[0]).toMatchObject({ type: 'program_output', call_id: program.call_id, status: 'completed', result: EXPECTED_RESULT });
  });

  it('emits items that toResponseInputItems passes through unchanged', async () => {
    const { responses } = await loop(server.client);
    for (const response of responses) {
      expect(toResponseInputItems(response.output)).toEqual(response.output);
    }
  });
});
