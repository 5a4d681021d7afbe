import { randomUUID } from 'node:crypto';
import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { resolveLimits } from '../../runtime/limits.ts';
import { agentLoop } from '../support/agent-loop.ts';
import { expectSdkError, rejectionOf, type ExpectedApiError } from '../support/api-errors.ts';
import { functionCallsOf, inlineProgram, programOutputOf } from '../support/programs.ts';
import { startServer, type RunningServer } from '../support/server.ts';

// A weather tool as a careful user declares it: strict parameters and an output_schema.
const WEATHER: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string', minLength: 2 }, units: { enum: ['c', 'f'] }, days: { type: 'array', items: { type: 'integer' } } },
    required: ['city'],
    additionalProperties: false,
  },
  strict: true,
  output_schema: {
    type: 'object',
    properties: { temp: { type: 'number' }, sky: { type: 'object', properties: { cover: { type: 'integer', maximum: 8 } } } },
    required: ['temp'],
  },
  allowed_callers: ['programmatic'],
};
const TOOLS: OpenAI.Responses.Tool[] = [WEATHER, { type: 'programmatic_tool_calling' }];

async function expectApiError(request: PromiseLike<unknown>, expected: ExpectedApiError): Promise<void> {
  expectSdkError(await rejectionOf(request), expected);
}

/** A program that tries each of `args` and reports what each call gave or threw. */
function tryEach(args: readonly string[]): string {
  return `const seen = [];
for (const args of [${args.join(', ')}]) {
  try { seen.push(JSON.stringify(await tools.get_weather(args))) } catch (e) { seen.push(e.name + ': ' + e.message) }
}
text(seen.join('\\n'))`;
}

let server: RunningServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

describe('strict parameters', () => {
  it('throw a TypeError naming the field inside the program, and the call never reaches the client', async () => {
    const calls: unknown[] = [];
    const code = tryEach([
      '{}',
      '{ city: 7 }',
      '{ city: "P" }',
      '{ city: "Paris", wind: true }',
      '{ city: "Paris", days: [1, 2.5] }',
      '{ city: "Paris", units: "k" }',
      '{ city: "Paris" }',
    ]);
    const { text } = await agentLoop(
      server.client,
      { model: 'm', input: inlineProgram(code), tools: TOOLS },
      {
        functions: { get_weather: (args) => (calls.push(args), { temp: 21 }) },
      },
    );
    expect(text.split('\n')).toEqual([
      "TypeError: tools.get_weather: arguments is missing the required property 'city'",
      'TypeError: tools.get_weather: arguments.city must be string',
      'TypeError: tools.get_weather: arguments.city must NOT have fewer than 2 characters',
      "TypeError: tools.get_weather: arguments has the property 'wind', which the schema does not allow",
      'TypeError: tools.get_weather: arguments.days[1] must be integer',
      'TypeError: tools.get_weather: arguments.units must be one of ["c","f"]',
      '{"temp":21}',
    ]);
    expect(calls).toEqual([{ city: 'Paris' }]);
  });

  it('are not checked when strict is false', async () => {
    const loose: OpenAI.Responses.Tool[] = [{ ...WEATHER, strict: false }, { type: 'programmatic_tool_calling' }];
    const { text } = await agentLoop(
      server.client,
      { model: 'm', input: inlineProgram(tryEach(['{ city: 7 }'])), tools: loose },
      {
        functions: { get_weather: (args) => ({ temp: args.city }) },
      },
    );
    expect(text).toBe('{"temp":7}');
  });

  it('are checked again on the host: a program that fools its own check ends incomplete with arguments_invalid', async () => {
    const tags: OpenAI.Responses.Tool[] = [
      {
        type: 'function',
        name: 'tag',
        parameters: { type: 'object', properties: { tags: { type: 'array' } } },
        strict: true,
        allowed_callers: ['programmatic'],
      },
      { type: 'programmatic_tool_calling' },
    ];
    const code = 'const real = Array.isArray; Array.isArray = (v) => typeof v === "string" || real(v); await tools.tag({ tags: "not an array" })';
    const response = await server.client.responses.create({ model: 'm', input: inlineProgram(code), tools: tags });
    expect(functionCallsOf(response)).toEqual([]);
    expect(programOutputOf(response)).toMatchObject({ status: 'incomplete' });
    expect(JSON.parse(programOutputOf(response)!.result)).toEqual({ error: { code: 'arguments_invalid', message: 'tools.tag: arguments.tags must be array' } });
  });

  it("are checked again out of the program's reach but within its limits: a pattern that backtracks without end costs only the program", async () => {
    // The host's check runs in the program's isolate, in a context of its own: the program's step
    // deadline bounds it, and the server (here running isolates in its own process) keeps serving.
    const quick = await startServer({ config: { workers: 0, limits: resolveLimits({ stepWallTimeMs: 300 }) } });
    try {
      const evil: OpenAI.Responses.Tool[] = [
        {
          type: 'function',
          name: 'f',
          parameters: { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } },
          strict: true,
          allowed_callers: ['programmatic'],
        },
        { type: 'programmatic_tool_calling' },
      ];
      const code = "RegExp.prototype.test = function () { return true }; await tools.f({ s: 'a'.repeat(40) + '!' })";
      const response = await quick.client.responses.create({ model: 'm', input: inlineProgram(code), tools: evil });
      expect(functionCallsOf(response)).toEqual([]);
      expect(JSON.parse(programOutputOf(response)!.result)).toMatchObject({ error: { code: 'wall_time_exceeded' } });
      expect((await quick.client.responses.create({ model: 'm', input: 'still there?' })).status).toBe('completed');
    } finally {
      await quick.close();
    }
  });
});

describe('output_schema', () => {
  it('hands the program the parsed output, or a TypeError naming the field that breaks the schema', async () => {
    const outputs = [{ temp: 'warm' }, { temp: 3, sky: { cover: 9 } }, { sky: {} }, { temp: 3, sky: { cover: 2 } }];
    let next = 0;
    const code = tryEach(['{ city: "Oslo" }', '{ city: "Oslo" }', '{ city: "Oslo" }', '{ city: "Oslo" }']);
    const { text } = await agentLoop(
      server.client,
      { model: 'm', input: inlineProgram(code), tools: TOOLS },
      { functions: { get_weather: () => outputs[next++] } },
    );
    expect(text.split('\n')).toEqual([
      'TypeError: tools.get_weather returned output that does not match its output_schema: output.temp must be number',
      'TypeError: tools.get_weather returned output that does not match its output_schema: output.sky.cover must be <= 8',
      "TypeError: tools.get_weather returned output that does not match its output_schema: output is missing the required property 'temp'",
      '{"temp":3,"sky":{"cover":2}}',
    ]);
  });

  it('gives the same errors when a cold server replays the program, and through a worker process', async () => {
    const fingerprintKey = randomUUID();
    const live = await startServer({ config: { fingerprintKey } });
    const cold = await startServer({ config: { fingerprintKey, maxPausedPrograms: 0, workers: 1 } });
    try {
      const code = tryEach(['{ city: "Oslo" }', '{ city: 1 }', '{ city: "Rome" }', '{ city: "Lima" }']);
      const input: ResponseInputItem[] = [{ role: 'user', content: inlineProgram(code) }];
      const outputs = ['{"temp":"x"}', 'not json', '{"temp":30}'];
      for (let turn = 0; ; turn++) {
        const fromLive = await live.client.responses.create({ model: 'm', store: false, input, tools: TOOLS });
        if (turn > 0) {
          const fromCold = await cold.client.responses.create({ model: 'm', store: false, input, tools: TOOLS });
          expect(fromCold.output.filter((item) => item.type !== 'message')).toEqual(fromLive.output.filter((item) => item.type !== 'message'));
        }
        input.push(...toResponseInputItems(fromLive.output));
        const [call] = functionCallsOf(fromLive);
        if (!call) {
          expect(fromLive.output_text.split('\n')).toEqual([
            'TypeError: tools.get_weather returned output that does not match its output_schema: output.temp must be number',
            'TypeError: tools.get_weather: arguments.city must be string',
            'TypeError: tools.get_weather declares output_schema but its output is not JSON: "not json"',
            '{"temp":30}',
          ]);
          break;
        }
        input.push({ type: 'function_call_output', call_id: call.call_id, output: outputs[turn]!, caller: call.caller ?? null });
      }
    } finally {
      await live.close();
      await cold.close();
    }
  });
});

describe("required properties are the object's own", () => {
  // Names every object inherits from Object.prototype: a schema requiring them is not met by {}.
  const INHERITED = ['constructor', 'toString', 'valueOf'];
  const schema = { type: 'object', properties: {}, required: INHERITED };
  const tools: OpenAI.Responses.Tool[] = [
    { type: 'function', name: 'f', parameters: schema, strict: true, allowed_callers: ['programmatic'] },
    { type: 'function', name: 'g', parameters: { type: 'object' }, strict: false, output_schema: schema, allowed_callers: ['programmatic'] },
    { type: 'programmatic_tool_calling' },
  ];

  it('for strict parameters and for output_schema', async () => {
    const code = `const seen = [];
for (const call of [() => tools.f({}), () => tools.g({}), () => tools.f({ constructor: 1, toString: 2, valueOf: 3 })]) {
  try { seen.push(JSON.stringify(await call())) } catch (e) { seen.push(e.name + ': ' + e.message) }
}
text(seen.join('\\n'))`;
    const { text } = await agentLoop(server.client, { model: 'm', input: inlineProgram(code), tools }, { functions: { f: () => 'ok', g: () => ({}) } });
    expect(text.split('\n')).toEqual([
      "TypeError: tools.f: arguments is missing the required property 'constructor'",
      "TypeError: tools.g returned output that does not match its output_schema: output is missing the required property 'constructor'",
      '"ok"',
    ]);
  });
});

describe('schema dialects', () => {
  it("checks schemas in the 2020-12 dialect as zod's toJSONSchema writes them, and 2019-09 ones", async () => {
    const parameters = z.toJSONSchema(z.object({ city: z.string().min(2), tags: z.tuple([z.string()]).optional() }).strict());
    expect(parameters.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    const output_schema = {
      $schema: 'https://json-schema.org/draft/2019-09/schema',
      type: 'object',
      properties: { temp: { type: 'number' } },
      unevaluatedProperties: false,
    };
    const tools: OpenAI.Responses.Tool[] = [{ ...WEATHER, parameters, output_schema }, { type: 'programmatic_tool_calling' }];
    const code = `${tryEach(['{ city: "P" }', '{ city: "Paris", tags: ["a", "b"] }', '{ city: "Paris" }', '{ city: "Oslo" }'])}`;
    const { text } = await agentLoop(
      server.client,
      { model: 'm', input: inlineProgram(code), tools },
      {
        functions: { get_weather: ({ city }) => (city === 'Paris' ? { temp: 21 } : { temp: -3, wind: 9 }) },
      },
    );
    expect(text.split('\n')).toEqual([
      'TypeError: tools.get_weather: arguments.city must NOT have fewer than 2 characters',
      'TypeError: tools.get_weather: arguments.tags must NOT have more than 1 items',
      '{"temp":21}',
      'TypeError: tools.get_weather returned output that does not match its output_schema: output must NOT have unevaluated properties',
    ]);
  });

  it('refuses a dialect it does not check, naming it', async () => {
    await expectApiError(
      server.client.responses.create({
        model: 'm',
        input: 'hi',
        tools: [{ ...WEATHER, parameters: { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' } }, { type: 'programmatic_tool_calling' }],
      }),
      { code: 'invalid_function_parameters', param: 'tools[0].parameters', mentions: ['draft-04', 'draft-07, 2019-09 or 2020-12'] },
    );
  });
});

describe('schemas the emulator cannot use, and schemas that change', () => {
  it('rejects a parameters schema or output_schema ajv cannot compile with invalid_function_parameters', async () => {
    await expectApiError(
      server.client.responses.create({
        model: 'm',
        input: 'hi',
        tools: [{ ...WEATHER, parameters: { type: 'object', properties: { city: { type: 'text' } } } }, { type: 'programmatic_tool_calling' }],
      }),
      { code: 'invalid_function_parameters', param: 'tools[0].parameters', mentions: ["'get_weather'", 'properties/city/type'] },
    );
    await expectApiError(
      server.client.responses.create({
        model: 'm',
        input: 'hi',
        tools: [
          {
            type: 'namespace',
            name: 'wx',
            description: 'd',
            tools: [{ type: 'function', name: 'now', output_schema: { minimum: 'zero' }, allowed_callers: ['programmatic'] }],
          },
          { type: 'programmatic_tool_calling' },
        ],
      }),
      { code: 'invalid_function_parameters', param: 'tools[0].tools[0].output_schema', mentions: ["'wx.now'"] },
    );
  });

  it('rejects resuming a program with tools whose schemas changed or are gone, with tool_definitions_changed', async () => {
    const first = await server.client.responses.create({
      model: 'm',
      store: false,
      input: inlineProgram('text(JSON.stringify(await tools.get_weather({ city: "Oslo" })))'),
      tools: TOOLS,
    });
    const [call] = functionCallsOf(first);
    const input: ResponseInputItem[] = [
      { role: 'user', content: inlineProgram('text(JSON.stringify(await tools.get_weather({ city: "Oslo" })))') },
      ...toResponseInputItems(first.output),
      { type: 'function_call_output', call_id: call!.call_id, output: '{"temp":1}', caller: call!.caller ?? null },
    ];
    const changed: OpenAI.Responses.Tool[] = [{ ...WEATHER, output_schema: { type: 'object' } }, { type: 'programmatic_tool_calling' }];
    for (const tools of [changed, [{ type: 'programmatic_tool_calling' } as const]]) {
      await expectApiError(server.client.responses.create({ model: 'm', store: false, input, tools }), {
        code: 'tool_definitions_changed',
        param: 'tools',
        mentions: ['tools.get_weather', 'Resend the same tools'],
      });
    }
    const resumed = await server.client.responses.create({ model: 'm', store: false, input, tools: TOOLS });
    expect(programOutputOf(resumed)).toMatchObject({ status: 'completed', result: '{"temp":1}' });
  });
});
