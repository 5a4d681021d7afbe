import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { Response, ResponseInputItem } from 'openai/resources/responses/responses';
import { SEED_TOOLS as SEED_TOOL_DECLARATIONS } from '../fixtures/seed-tools.ts';

// The seed guide's client implementations, verbatim, and its tools (test/seed-loop.test.ts and the
// model backend's test run its loop).
export const seedImplementations: Record<string, (args: { sku: string }) => Promise<unknown>> = {
  get_inventory: async ({ sku }) => ({ sku, available_units: 42 }),
  get_demand: async ({ sku }) => ({ sku, requested_units: 31 }),
};

/** The seed's tool declarations (test/fixtures/seed-tools.ts), as the SDK's mutable list. */
export const SEED_TOOLS: OpenAI.Responses.Tool[] = [...SEED_TOOL_DECLARATIONS];

/** The seed's store: false loop, with console.log swapped for a return and every response kept. */
export async function seedLoopStateless(client: OpenAI): Promise<{ text: string; responses: Response[] }> {
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
      tools: SEED_TOOLS,
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
        const run = seedImplementations[call.name];
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
export async function seedLoopStored(client: OpenAI): Promise<{ text: string; responses: Response[] }> {
  const responses: Response[] = [];
  let input: ResponseInputItem[] = [{ role: 'user', content: 'Compare inventory with demand for sku_123.' }];
  let previousResponseId: string | undefined;
  while (true) {
    const response = await client.responses.create({
      model: 'YOUR_MODEL_ID',
      input,
      tools: SEED_TOOLS,
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
        output: JSON.stringify(await seedImplementations[call.name]!(JSON.parse(call.arguments))),
        caller: call.caller,
      })),
    );
  }
}
