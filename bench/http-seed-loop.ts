import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { buildServer } from '../server/app.ts';
import { SEED_TOOLS } from '../test/fixtures/seed-tools.ts';
import { SEED_IMPLEMENTATIONS, SEED_SCENARIO_PATH, SEED_USER_MESSAGE } from './seed.ts';

export interface SeedHttpServer {
  /** One full seed loop (two requests); resolves to the final message's text. */
  runSeedLoop(): Promise<string>;
  close(): Promise<void>;
}

/**
 * The emulator on an ephemeral loopback port with the seed scenario, and the real SDK client
 * pointed at it. Started once per run: the case measures requests, not server start-up.
 * `workers`: isolates in this process (0) or in that many worker processes.
 */
export async function startSeedServer(workers: number): Promise<SeedHttpServer> {
  const app = await buildServer({ logger: false, scenarios: SEED_SCENARIO_PATH, config: { workers, store: 'memory' } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  // No retries: a failed request must fail the bench, not be hidden inside a slow sample.
  // The key only matters when PTC_API_KEY is set in the environment the server reads.
  const client = new OpenAI({ apiKey: process.env['PTC_API_KEY'] || 'bench-key', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
  return { runSeedLoop: () => seedLoop(client), close: () => app.close() };
}

/**
 * The seed's `store: false` loop unrolled into its two requests, with the shape of each response
 * checked so that a regression cannot turn into a fast-but-wrong sample:
 * 1. the user message → `program` + two `function_call`s (one Promise.all batch);
 * 2. every item resent + one `function_call_output` per call, `caller` copied → `program_output` + `message`.
 */
async function seedLoop(client: OpenAI): Promise<string> {
  const input: ResponseInputItem[] = [{ role: 'user', content: SEED_USER_MESSAGE }];
  const paused = await client.responses.create({ model: 'ptc-emulator', store: false, input, tools: [...SEED_TOOLS] });
  const calls = paused.output.filter((item) => item.type === 'function_call');
  if (paused.output[0]?.type !== 'program' || calls.length !== 2) {
    throw new Error(`First response: expected program + 2 function_calls, got ${paused.output.map((item) => item.type).join(', ')}`);
  }
  input.push(...toResponseInputItems(paused.output));

  const outputs = await Promise.all(
    calls.map(async (call) => {
      const run = SEED_IMPLEMENTATIONS[call.name];
      if (!run) throw new Error(`Unknown tool: ${call.name}`);
      return {
        type: 'function_call_output' as const,
        call_id: call.call_id,
        output: JSON.stringify(await run(JSON.parse(call.arguments) as { sku: string })),
        caller: call.caller,
      };
    }),
  );
  input.push(...outputs);

  const finished = await client.responses.create({ model: 'ptc-emulator', store: false, input, tools: [...SEED_TOOLS] });
  const types = finished.output.map((item) => item.type).join(', ');
  if (types !== 'program_output, message') throw new Error(`Second response: expected program_output, message, got ${types}`);
  return finished.output_text;
}
