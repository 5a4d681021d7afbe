import type OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { inlineProgram, programOutputOf } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// Schemas that cost ajv far more than their size (its enum code is quadratic: 60,000 values take
// seconds) are compiled beside the server's loop within PTC_SCHEMA_COMPILE_TIMEOUT_MS, and their
// size is bounded by PTC_MAX_SCHEMA_BYTES: a 400 naming the schema, never a frozen server.

function strictTool(name: string, parameters: Record<string, unknown>): OpenAI.Responses.FunctionTool {
  return { type: 'function', name, parameters, strict: true, allowed_callers: ['programmatic'] };
}

const HUGE_ENUM = { type: 'object', properties: { code: { enum: Array.from({ length: 60_000 }, (_, index) => `code-${index}`) } } };

let server: RunningServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

it('a schema ajv takes seconds over is refused with schema_too_complex, and the server answers others meanwhile', async () => {
  const { client } = server;
  const hostile = rejectionOf(
    client.responses.create({ model: 'm', input: 'hi', tools: [{ type: 'programmatic_tool_calling' }, strictTool('pick', HUGE_ENUM)] }),
  );
  // While ajv works on it, other requests are served: a program runs to its end.
  const honest = await client.responses.create({ model: 'm', store: false, input: inlineProgram('text("still here")'), tools: [{ type: 'programmatic_tool_calling' }] });
  expect(programOutputOf(honest)).toMatchObject({ status: 'completed', result: 'still here' });
  expectSdkError(await hostile, { code: 'schema_too_complex', param: 'tools[1].parameters', mentions: ["'pick'", 'PTC_SCHEMA_COMPILE_TIMEOUT_MS'] });
});

it('schemas over PTC_MAX_SCHEMA_BYTES together are refused with schema_too_large, naming the one that crossed it', async () => {
  const server = await startServer({ config: { maxSchemaBytes: 4096 } });
  try {
    const big = { type: 'object', properties: Object.fromEntries(Array.from({ length: 200 }, (_, index) => [`field${index}`, { type: 'string' }])) };
    const error = await rejectionOf(
      server.client.responses.create({
        model: 'm',
        input: 'hi',
        tools: [{ type: 'programmatic_tool_calling' }, strictTool('small', { type: 'object' }), strictTool('large', big)],
      }),
    );
    expectSdkError(error, { code: 'schema_too_large', param: 'tools[2].parameters', mentions: ["'large'", '4096', 'PTC_MAX_SCHEMA_BYTES'] });
  } finally {
    await server.close();
  }
});

it('after a schema was given up on, strict schemas are checked as before', async () => {
  const { client } = server;
  const tools: OpenAI.Responses.Tool[] = [
    { type: 'programmatic_tool_calling' },
    strictTool('lookup', { type: 'object', properties: { sku: { type: 'string', pattern: '^[A-Z]{3}$' } }, required: ['sku'], additionalProperties: false }),
  ];
  const response = await client.responses.create({
    model: 'm',
    store: false,
    tools,
    input: inlineProgram('try { await tools.lookup({ sku: "abc" }); } catch (error) { text(error.message); }'),
  });
  expect(programOutputOf(response)).toMatchObject({ status: 'completed' });
  expect(String(programOutputOf(response)?.result)).toMatch(/sku.*pattern/);
});

it('a schema whose validator comes to megabytes of code is refused with schema_too_complex, whatever time it is given', async () => {
  // One subschema at every level of 13: ajv inlines it 8,192 times, 10 MiB of code from 656 KB.
  let deep: Record<string, unknown> = { type: 'string', description: 'leaf 1' };
  for (let level = 0; level < 13; level++) deep = { type: 'object', properties: { a: deep, b: deep } };
  const server = await startServer({ config: { schemaCompileTimeoutMs: 60_000 } });
  try {
    const error = await rejectionOf(server.client.responses.create({ model: 'm', input: 'hi', tools: [{ type: 'programmatic_tool_calling' }, strictTool('deep', deep)] }));
    expectSdkError(error, { code: 'schema_too_complex', param: 'tools[1].parameters', mentions: ["'deep'", 'MiB of code'] });
  } finally {
    await server.close();
  }
}, 120_000);
