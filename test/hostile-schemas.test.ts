import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { inlineProgram, programOutputOf } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// Schemas that cost ajv far more than their size: each strict schema must be within the hosted
// API's limits (a linear walk, a 400 at once), all of a request's come to at most
// PTC_MAX_SCHEMA_BYTES, and within those ajv compiles them beside the server's loop within
// PTC_SCHEMA_COMPILE_TIMEOUT_MS to at most 8 MiB of code: a 400 naming the schema, never a frozen server.

function strictTool(name: string, parameters: Record<string, unknown>): OpenAI.Responses.FunctionTool {
  return { type: 'function', name, parameters, strict: true, allowed_callers: ['programmatic'] };
}

const HUGE_ENUM = { type: 'object', properties: { code: { enum: Array.from({ length: 60_000 }, (_, index) => `code-${index}`) } } };

const names = (count: number, name: (index: number) => string = (index) => `p${index}`): string[] => Array.from({ length: count }, (_, index) => name(index));
const objectOf = (keys: readonly string[], schema: (key: string) => unknown = () => ({ type: 'string' })): Record<string, unknown> => ({
  type: 'object',
  properties: Object.fromEntries(keys.map((key) => [key, schema(key)])),
});

/** Objects nested `levels` deep, one property `a` each, around `leaf`. */
function nested(levels: number, leaf: unknown = { type: 'string' }): Record<string, unknown> {
  let schema = leaf;
  for (let level = 0; level < levels; level++) schema = { type: 'object', properties: { a: schema } };
  return schema as Record<string, unknown>;
}

/** A property of twelve keywords. */
const denseProperty = (index: number): Record<string, unknown> => ({
  type: ['string', 'number', 'array', 'object'],
  minLength: 1,
  maxLength: 9,
  minimum: 0,
  maximum: index,
  multipleOf: 3,
  minItems: 1,
  maxItems: 4,
  uniqueItems: true,
  minProperties: 1,
  maxProperties: 3,
  pattern: 'a',
});

/** 3,000 dense properties, 640 KB: ajv takes about 2 s of CPU time to write 12.7 MiB of code for them. */
const DENSE = { type: 'object', properties: Object.fromEntries(names(3000).map((key, index) => [key, denseProperty(index)])) };

let server: RunningServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

it("a 60,000-value enum is refused at once, past the hosted API's limit of 1,000 enum values, and the server answers others meanwhile", async () => {
  const { client } = server;
  const hostile = rejectionOf(
    client.responses.create({ model: 'm', input: 'hi', tools: [{ type: 'programmatic_tool_calling' }, strictTool('pick', HUGE_ENUM)] }),
  );
  const honest = await client.responses.create({
    model: 'm',
    store: false,
    input: inlineProgram('text("still here")'),
    tools: [{ type: 'programmatic_tool_calling' }],
  });
  expect(programOutputOf(honest)).toMatchObject({ status: 'completed', result: 'still here' });
  expectSdkError(await hostile, {
    code: 'invalid_function_parameters',
    param: 'tools[1].parameters',
    mentions: ["'pick'", '1000 enum values', '/properties/code/enum'],
  });
});

describe("each of the hosted API's limits on a strict schema is a 400 naming it, for parameters and output_schema", () => {
  const cases: [string, Record<string, unknown>, readonly string[]][] = [
    ['13 levels of nesting', nested(13), ['more than 10 levels', `11 at ${'/properties/a'.repeat(11)}`]],
    [
      '11 levels through array items',
      nested(5, { type: 'array', items: nested(5, { type: 'array', items: { type: 'string' } }) }),
      ['more than 10 levels', '/items/properties/a'],
    ],
    ['5,001 object properties', { type: 'object', properties: { a: objectOf(names(2500)), b: objectOf(names(2499)) } }, ['5000 object properties', '5001']],
    ['1,001 enum values over two properties', objectOf(['x', 'y'], (key) => ({ enum: names(key === 'x' ? 600 : 401) })), ['1000 enum values', '1001']],
    ['120,000 characters of names and values', objectOf(names(100, (index) => `${index}`.padEnd(1201, 'n'))), ['120000 characters']],
    [
      'a string enum of 251 values in 15,060 characters',
      objectOf(['code'], () => ({ enum: names(251, (index) => `${index}`.padEnd(60, 'v')) })),
      ['15060 characters', '15000', 'more than 250 values', '/properties/code/enum'],
    ],
    [
      '501 patternProperties',
      { type: 'object', patternProperties: Object.fromEntries(names(501, (index) => `^x${index}$`).map((pattern) => [pattern, { type: 'string' }])) },
      ['500 patternProperties'],
    ],
    // Hidden where a walk of schema keywords alone would not look: ajv compiles what a $ref points at, data or not.
    [
      'patternProperties in a default a $ref points into',
      {
        type: 'object',
        properties: { a: { $ref: '#/default' } },
        default: {
          type: 'object',
          patternProperties: Object.fromEntries(names(501, (index) => `^x${index}$`).map((pattern) => [pattern, { type: 'string' }])),
        },
      },
      ['500 patternProperties', '/default/patternProperties'],
    ],
    [
      'an enum in a dependency named default',
      { type: 'object', dependencies: { default: { enum: names(1001) } } },
      ['1000 enum values', '/dependencies/default/enum'],
    ],
    [
      'a large enum with a null among its strings',
      objectOf(['code'], () => ({ enum: [null, ...names(251, (index) => `${index}`.padEnd(60, 'v'))] })),
      ['15060 characters', 'more than 250 values'],
    ],
  ];
  for (const [label, schema, mentions] of cases) {
    it(`${label}`, async () => {
      const { client } = server;
      const asParameters = await rejectionOf(
        client.responses.create({ model: 'm', input: 'hi', tools: [{ type: 'programmatic_tool_calling' }, strictTool('over', schema)] }),
      );
      expectSdkError(asParameters, { code: 'invalid_function_parameters', param: 'tools[1].parameters', mentions: ["'over'", ...mentions] });
      const asOutput = await rejectionOf(
        client.responses.create({
          model: 'm',
          input: 'hi',
          tools: [
            { type: 'programmatic_tool_calling' },
            { type: 'function', name: 'out', parameters: null, strict: null, output_schema: schema, allowed_callers: ['programmatic'] },
          ],
        }),
      );
      expectSdkError(asOutput, { code: 'invalid_function_parameters', param: 'tools[1].output_schema', mentions: ["'out'", ...mentions] });
      // Not strict, parameters are not checked, and not limited.
      const loose = await client.responses.create({
        model: 'm',
        store: false,
        input: 'hi',
        tools: [{ type: 'programmatic_tool_calling' }, { ...strictTool('loose', schema), strict: false }],
      });
      expect(loose.status).toBe('completed');
    });
  }
});

it("the limits hold for a strict function only the model may call, and ajv's list of a schema's faults is cut short", async () => {
  const { client } = server;
  const direct = await rejectionOf(
    client.responses.create({ model: 'm', input: 'hi', tools: [{ type: 'function', name: 'pick', parameters: HUGE_ENUM, strict: true }] }),
  );
  expectSdkError(direct, { code: 'invalid_function_parameters', param: 'tools[0].parameters', mentions: ["'pick'", '1000 enum values'] });
  // 150,000 faults (each entry of `required` must be a string) in a schema wide enough that ajv
  // checks every keyword: its message would list them all, megabytes.
  const wideAndFaulty = { ...objectOf(names(1001)), required: Array.from({ length: 150_000 }, () => 0) };
  const faulty = await rejectionOf(
    client.responses.create({ model: 'm', input: 'hi', tools: [{ type: 'programmatic_tool_calling' }, strictTool('faulty', wideAndFaulty)] }),
  );
  expectSdkError(faulty, { code: 'invalid_function_parameters', param: 'tools[1].parameters', mentions: ["'faulty'", 'must be string', 'characters in all'] });
  expect((faulty as Error).message.length).toBeLessThan(2000);
});

it("a schema at every limit at once is accepted, and checks a program's arguments", async () => {
  // 10 levels (`deep` within `deep`); 5,000 properties (4,990 at the root, 10 `deep`); 1,000
  // enum values, all in one string enum of 15,000 characters.
  let schema: Record<string, unknown> = { type: 'string', enum: names(1000, (index) => `${index}`.padStart(15, 'v')) };
  for (let level = 10; level >= 1; level--)
    schema = { type: 'object', properties: { ...(level === 1 ? (objectOf(names(4990)).properties as object) : {}), deep: schema } };
  const code = `try { await tools.wide({ ${'deep: { '.repeat(9)}deep: "nope"${' }'.repeat(9)}, p4989: "ok" }); } catch (error) { text(error.message); }`;
  const response = await server.client.responses.create({
    model: 'm',
    store: false,
    input: inlineProgram(code),
    tools: [{ type: 'programmatic_tool_calling' }, strictTool('wide', schema)],
  });
  expect(programOutputOf(response)).toMatchObject({ status: 'completed' });
  expect(String(programOutputOf(response)?.result)).toContain(`arguments${'.deep'.repeat(10)} must be one of`);
}, 60_000);

it('a definition used at a thousand places compiles once, not once per use', async () => {
  // Ajv copies a $ref's definition into each use unless told not to: 999 copies of 4,000 properties ran it out of 4 GB.
  const schema = {
    type: 'object',
    $defs: { big: objectOf(names(4000, (index) => `q${index}`)) },
    properties: Object.fromEntries(names(999, (index) => `r${index}`).map((key) => [key, { $ref: '#/$defs/big' }])),
  };
  const code = 'try { await tools.refs({ r998: { q3999: 5 } }); } catch (error) { text(error.message); }';
  const response = await server.client.responses.create({
    model: 'm',
    store: false,
    input: inlineProgram(code),
    tools: [{ type: 'programmatic_tool_calling' }, strictTool('refs', schema)],
  });
  expect(programOutputOf(response)).toMatchObject({ status: 'completed' });
  expect(String(programOutputOf(response)?.result)).toContain('arguments.r998.q3999 must be string');
}, 60_000);

it('a schema within the limits that ajv cannot compile within PTC_SCHEMA_COMPILE_TIMEOUT_MS is refused with schema_too_complex, and schemas are checked as before after it', async () => {
  // DENSE takes ajv seconds of CPU time; the deadline is 150 ms of it, and the small schema after it takes a few.
  const server = await startServer({ config: { schemaCompileTimeoutMs: 150 } });
  try {
    const error = await rejectionOf(
      server.client.responses.create({ model: 'm', input: 'hi', tools: [{ type: 'programmatic_tool_calling' }, strictTool('dense', DENSE)] }),
    );
    expectSdkError(error, { code: 'schema_too_complex', param: 'tools[1].parameters', mentions: ["'dense'", 'PTC_SCHEMA_COMPILE_TIMEOUT_MS'] });
    const tools: OpenAI.Responses.Tool[] = [
      { type: 'programmatic_tool_calling' },
      strictTool('lookup', { type: 'object', properties: { sku: { type: 'string', pattern: '^[A-Z]{3}$' } }, required: ['sku'], additionalProperties: false }),
    ];
    const response = await server.client.responses.create({
      model: 'm',
      store: false,
      tools,
      input: inlineProgram('try { await tools.lookup({ sku: "abc" }); } catch (error) { text(error.message); }'),
    });
    expect(programOutputOf(response)).toMatchObject({ status: 'completed' });
    expect(String(programOutputOf(response)?.result)).toMatch(/sku.*pattern/);
  } finally {
    await server.close();
  }
}, 60_000);

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

it('a schema within the limits whose validator comes to megabytes of code is refused with schema_too_complex, whatever time it is given', async () => {
  const server = await startServer({ config: { schemaCompileTimeoutMs: 60_000 } });
  try {
    const error = await rejectionOf(
      server.client.responses.create({ model: 'm', input: 'hi', tools: [{ type: 'programmatic_tool_calling' }, strictTool('dense', DENSE)] }),
    );
    expectSdkError(error, { code: 'schema_too_complex', param: 'tools[1].parameters', mentions: ["'dense'", 'MiB of code'] });
  } finally {
    await server.close();
  }
}, 120_000);

it('a schema that runs ajv out of memory ends its thread, not the server: schema_too_complex', async () => {
  // 5,000 properties within the limits, each an anyOf of ten dense ones, 10 MiB (PTC_MAX_SCHEMA_BYTES and PTC_MAX_BODY_VALUES raised to let it in): ajv would need gigabytes.
  const schema = {
    type: 'object',
    properties: Object.fromEntries(names(5000).map((key, index) => [key, { anyOf: Array.from({ length: 10 }, (_, branch) => denseProperty(index + branch)) }])),
  };
  const server = await startServer({ config: { schemaCompileTimeoutMs: 600_000, maxSchemaBytes: 16 * 2 ** 20, maxBodyValues: 10_000_000 } });
  try {
    const error = await rejectionOf(
      server.client.responses.create({ model: 'm', input: 'hi', tools: [{ type: 'programmatic_tool_calling' }, strictTool('huge', schema)] }),
    );
    expectSdkError(error, { code: 'schema_too_complex', param: 'tools[1].parameters', mentions: ["'huge'", 'MiB of heap'] });
    const after = await server.client.responses.create({
      model: 'm',
      store: false,
      input: inlineProgram('text("alive")'),
      tools: [{ type: 'programmatic_tool_calling' }],
    });
    expect(programOutputOf(after)).toMatchObject({ status: 'completed', result: 'alive' });
  } finally {
    await server.close();
  }
}, 300_000);
