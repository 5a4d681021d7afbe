import { describe, expect, it } from 'vitest';
import { functionCallsOf, inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';
import { serverStores } from './support/store-cases.ts';

const { stores, configFor } = await serverStores('ptc-stores-http-');

describe.each(stores)('the Responses API on the %s store', (store, available) => {
  it.skipIf(!available)('keeps responses, chains, input items and deletes alike', async () => {
    const server: RunningServer = await startServer({ config: configFor(store) });
    try {
      const tools = programTools('get');
      const first = await server.client.responses.create({ model: 'm', input: inlineProgram('text(await tools.get({}))'), tools, metadata: { run: store } });
      const [call] = functionCallsOf(first);
      const second = await server.client.responses.create({
        model: 'm',
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: call!.call_id, output: `from ${store}`, caller: call!.caller ?? null }],
        tools,
      });
      expect(programOutputOf(second)?.result).toBe(`from ${store}`);

      const { output_text: _, ...stored } = await server.client.responses.retrieve(first.id);
      const { output_text: __, ...original } = first;
      expect(stored).toEqual(original);
      const items = await server.client.responses.inputItems.list(second.id, { order: 'asc' });
      expect(items.data).toEqual([expect.objectContaining({ type: 'function_call_output', call_id: call!.call_id })]);

      await server.client.responses.delete(first.id);
      await expect(server.client.responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 });
      // The chain through a deleted response is gone too.
      await expect(server.client.responses.create({ model: 'm', previous_response_id: second.id, input: 'more' })).rejects.toMatchObject({
        status: 400,
        code: 'previous_response_not_found',
      });
    } finally {
      await server.close();
    }
  });
});
