import { fileURLToPath } from 'node:url';
import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { Response } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedLoopStateless, seedLoopStored } from './support/seed-loop.ts';
import { startServer, type RunningServer } from './support/server.ts';

const EXPECTED_RESULT = '{"sku":"sku_123","available_units":42,"requested_units":31,"shortage_units":0}';

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ scenarios: fileURLToPath(new URL('./fixtures/seed-scenario.yaml', import.meta.url)) });
});
afterAll(() => server.close());

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
