import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_BODY, postJson, secondRequestFor, sequentialConversation } from '../bench/load-client.ts';
import { spawnBenchServer, workerPids, type BenchServer } from '../bench/load-server.ts';

/**
 * bench:floor's bare server must speak the seed conversation as the emulator does, its program run
 * by the engine: a floor that answered wrongly, or without running the program, would make the
 * bench compare the server with nothing. The load client's checks are the bench's own.
 */
describe("bench:floor's bare server", () => {
  let server: BenchServer;
  const agent = new http.Agent({ keepAlive: true });

  beforeAll(async () => {
    server = await spawnBenchServer({ PTC_WORKERS: '1', PTC_WORKER_CPU_PINNING: 'off' }, ['bench/floor-server.ts']);
  }, 60_000);

  afterAll(async () => {
    agent.destroy();
    await server?.stop();
  });

  it('runs the seed conversation on its worker, pausing on both calls and completing with their outputs', async () => {
    expect(await workerPids(server.origin)).toHaveLength(1);
    // The conversation's checks throw on any difference from the seed's items and result.
    for (let round = 0; round < 3; round++) await sequentialConversation(agent, server.origin);
  }, 60_000);

  it("hands the program the outputs the client sent: its result is the program's own", async () => {
    const first = await postJson(agent, server.origin, '/v1/responses', FIRST_BODY, 30_000);
    const { body } = secondRequestFor(first.text);
    // Fewer units in stock than asked for: the program computes a shortage the seed never has.
    const sent = JSON.parse(body) as { input: { type?: string; output?: string }[] };
    for (const item of sent.input)
      if (item.type === 'function_call_output' && item.output?.includes('available_units')) item.output = '{"sku":"sku_123","available_units":5}';
    const second = await postJson(agent, server.origin, '/v1/responses', JSON.stringify(sent), 30_000);
    const output = (JSON.parse(second.text) as { output: { type: string; result?: string }[] }).output;
    expect(output.find((item) => item.type === 'program_output')?.result).toBe(
      '{"sku":"sku_123","available_units":5,"requested_units":31,"shortage_units":26}',
    );
  }, 60_000);
});
