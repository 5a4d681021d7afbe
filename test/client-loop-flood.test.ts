import { afterAll, beforeAll, expect, it } from 'vitest';
import { SETTINGS } from '../server/platform/config.ts';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { MAX_TOLERATED_NOTES } from '../server/engine/conversation/client-loop.ts';
import { functionCallsOf, inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// Any client may ask for lenient checks. A resume flooded with outputs for calls that never
// existed costs the server time linear in the flood, and its notes stay bounded: with a scan
// of the later items for each one (as before), 100,000 of them took minutes of the event loop.
// The server here lets that many in; by default PTC_MAX_INPUT_ITEMS refuses them up front.
const FLOOD = 100_000;
const TOOLS = programTools('lookup');

let server: RunningServer;
beforeAll(async () => {
  // Both bounds a flood meets raised: its items, and the JSON values they hold (four each).
  server = await startServer({ config: { maxInputItems: 2 * FLOOD, maxBodyValues: 8 * FLOOD } });
});
afterAll(() => server.close());

it(`a lenient resume carrying ${FLOOD} outputs for unknown calls is answered, its notes bounded`, async () => {
  const { client } = server;
  const first = await client.responses.create({ model: 'm', input: inlineProgram('text(await tools.lookup({}))'), tools: TOOLS });
  const [call] = functionCallsOf(first);
  const flood = Array.from({ length: FLOOD }, (_, index) => ({ type: 'function_call_output' as const, call_id: `call_unknown_${index}`, output: 'x' }));
  const resumed = await client.responses.create(
    {
      model: 'm',
      tools: TOOLS,
      previous_response_id: first.id,
      input: [...flood, { type: 'function_call_output', call_id: call!.call_id, output: 'found', caller: call!.caller }],
    },
    { headers: { 'x-ptc-client-checks': 'lenient' }, timeout: 120_000 },
  );
  expect(programOutputOf(resumed)).toMatchObject({ status: 'completed', result: 'found' });

  const journal = (await (await fetch(`${server.baseURL}/emulator/journal?limit=1`)).json()) as { data: { client_loop?: { tolerated: string[] } }[] };
  const tolerated = journal.data[0]!.client_loop!.tolerated;
  expect(tolerated).toHaveLength(MAX_TOLERATED_NOTES + 1);
  expect(tolerated[0]).toMatch(/^tool_output_unknown_call: No tool call found for function call output with call_id call_unknown_0 /);
  expect(tolerated.at(-1)).toBe(`… and ${FLOOD - MAX_TOLERATED_NOTES} more mistakes let through`);
}, 180_000);

it('by default, a request carrying more items than PTC_MAX_INPUT_ITEMS is refused before they are read', async () => {
  const limit = Number(SETTINGS.PTC_MAX_INPUT_ITEMS.default);
  const defaults = await startServer();
  try {
    const input = Array.from({ length: limit + 1 }, (_, index) => ({ type: 'function_call_output' as const, call_id: `call_unknown_${index}`, output: 'x' }));
    const error = await rejectionOf(defaults.client.responses.create({ model: 'm', input }, { headers: { 'x-ptc-client-checks': 'lenient' } }));
    expectSdkError(error, { code: 'too_many_input_items', param: 'input', mentions: [String(limit + 1), String(limit), 'PTC_MAX_INPUT_ITEMS'] });
  } finally {
    await defaults.close();
  }
});
