import { execFileSync } from 'node:child_process';
import { expect, it } from 'vitest';
import { FIXED_LIMITS } from '../schemas/fixed-limits.ts';
import { compileToolSchemas, SchemaThreadBusyError } from '../runtime/index.ts';
import { apiErrorFor } from '../server/api/http/error-handler.ts';
import { OFF_LOOP_JSON_BYTES, parseOffLoop } from '../server/api/http/json-body.ts';
import { ITEM_OVERHEAD_TOKENS } from '../server/engine/usage.ts';
import { OFF_LOOP_TOKEN_CHARS, offLoopCounter } from '../server/engine/usage-off-loop.ts';
import { ApiError } from '../server/platform/api-error.ts';
import { startServer } from './support/server.ts';

// Work a request's size sets is done in threads beside the server's loop (large bodies parsed,
// long texts counted), behind queues of declared bounds: past one, a 429 server_busy with retry-after.

const PROSE = 'Le renard brun saute par-dessus le chien paresseux; 東京タワー, 12,345 fois! ';
const prose = (chars: number, salt: number): string => `${salt}: ${PROSE.repeat(Math.ceil(chars / PROSE.length))}`.slice(0, chars);

async function outcomes(promises: readonly Promise<unknown>[]): Promise<{ busy: Error[]; done: number }> {
  const settled = await Promise.allSettled(promises);
  const busy = settled.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason as Error] : []));
  return { busy, done: settled.length - busy.length };
}

it('large bodies wait for the JSON thread at most FIXED_LIMITS.jsonBodyQueue at once; one more is a 429 server_busy with retry-after', async () => {
  const queue = FIXED_LIMITS.jsonBodyQueue.value;
  const body = (index: number) => Buffer.from(JSON.stringify({ index, filler: 'x'.repeat(OFF_LOOP_JSON_BYTES) }));
  // All asked for in one step of the loop: none is answered before the last is asked.
  const { busy, done } = await outcomes(Array.from({ length: queue + 8 }, (_, index) => parseOffLoop(body(index), { values: 1_000 })));
  expect(done).toBe(queue);
  expect(busy).toHaveLength(8);
  for (const error of busy) {
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ code: 'server_busy', status: 429, headers: { 'retry-after': '1' } });
  }
  // The queue drains: the next body is parsed.
  await expect(parseOffLoop(body(-1), { values: 1_000 })).resolves.toMatchObject({ index: -1 });
}, 120_000);

it('requests wait for the token thread at most FIXED_LIMITS.tokenCountQueue at once; one more is a 429 server_busy, and each request is one job whatever its texts', async () => {
  const queue = FIXED_LIMITS.tokenCountQueue.value;
  // One request with more long texts than the queue holds is one job: it is counted.
  const many = Array.from({ length: queue + 4 }, (_, index) => prose(OFF_LOOP_TOKEN_CHARS, index));
  const counter = await offLoopCounter((count) => {
    for (const text of many) count(text);
  });
  expect(many.every((text) => counter(text) > 0)).toBe(true);
  // Requests past the queue are refused.
  const requests = Array.from({ length: queue + 8 }, (_, index) => offLoopCounter((count) => count(prose(OFF_LOOP_TOKEN_CHARS, 1_000 + index))));
  const { busy, done } = await outcomes(requests);
  expect(done).toBeGreaterThanOrEqual(queue);
  expect(busy.length).toBeGreaterThanOrEqual(7);
  for (const error of busy) expect(error).toMatchObject({ code: 'server_busy', status: 429, headers: { 'retry-after': '1' } });
}, 120_000);

it('jobs wait for the schema thread at most FIXED_LIMITS.schemaJobQueue at once; one more is SchemaThreadBusyError, which a request is answered as a 429 server_busy', async () => {
  const queue = FIXED_LIMITS.schemaJobQueue.value;
  // Schemas none of which was compiled before (each is a job of its own), all asked for in one step of the loop.
  const schema = (index: number) => ({ type: 'object', properties: { [`p${index}_${Date.now()}`]: { type: 'string' } } });
  const { busy, done } = await outcomes(Array.from({ length: queue + 8 }, (_, index) => compileToolSchemas([schema(index)])));
  expect(done).toBe(queue);
  expect(busy).toHaveLength(8);
  for (const error of busy) expect(error).toBeInstanceOf(SchemaThreadBusyError);
  expect(apiErrorFor(busy[0]!, 1)).toMatchObject({ code: 'server_busy', status: 429, headers: { 'retry-after': '1' } });
}, 120_000);

it("a long text's tokens counted in the thread are the ones counted on a loop, in a response's usage and the input_tokens route", async () => {
  const text = prose(300_000, 7);
  // Counted in a process of its own: in this one, a count on the loop would be remembered and the thread never asked.
  const onALoop = Number(
    execFileSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `const { countTokens } = await import(${JSON.stringify(new URL('../server/engine/usage.ts', import.meta.url).href)});
        let text = ''; for await (const chunk of process.stdin) text += chunk; process.stdout.write(String(countTokens(text)));`,
      ],
      { input: text, encoding: 'utf8' },
    ),
  );
  expect(onALoop).toBeGreaterThan(50_000);
  const server = await startServer();
  try {
    const response = await server.client.responses.create({ model: 'm', input: text, store: false });
    expect(response.usage!.input_tokens).toBe(onALoop + ITEM_OVERHEAD_TOKENS);
    const counted = await server.client.responses.inputTokens.count({ model: 'm', input: `${text}!` });
    expect(counted.input_tokens).toBeGreaterThanOrEqual(onALoop + ITEM_OVERHEAD_TOKENS);
    expect(counted.input_tokens).toBeLessThanOrEqual(onALoop + ITEM_OVERHEAD_TOKENS + 1);
  } finally {
    await server.close();
  }
}, 120_000);
