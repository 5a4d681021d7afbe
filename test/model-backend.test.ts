import type OpenAI from 'openai';
import type { Response } from 'openai/resources/responses/responses';
import { afterEach, describe, expect, it } from 'vitest';
import type { Tool } from '../schemas/tools.ts';
import { readToolSet } from '../server/engine/conversation/tool-set.ts';
import type { ModelBackendConfig } from '../server/platform/config.ts';
import { toolDeclarations } from '../server/engine/stand-ins/backend/tool-declarations.ts';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { chatError, chatMessage, chatToolCalls, startScriptedChat, type ScriptedChat, type ScriptedReply } from './support/scripted-chat.ts';
import { SEED_TOOLS, seedLoopStateless, seedLoopStored } from './support/seed-loop.ts';
import { startServer, type RunningServer } from './support/server.ts';

/** What a model would write for the seed's task: both calls at once, the comparison as the result. */
const SEED_PROGRAM = [
  'const [inventory, demand] = await Promise.all([',
  "  tools.get_inventory({ sku: 'sku_123' }),",
  "  tools.get_demand({ sku: 'sku_123' }),",
  ']);',
  'text(JSON.stringify({',
  "  sku: 'sku_123',",
  '  available_units: inventory.available_units,',
  '  requested_units: demand.requested_units,',
  '  shortage_units: Math.max(0, demand.requested_units - inventory.available_units),',
  '}));',
].join('\n');
const SEED_RESULT = '{"sku":"sku_123","available_units":42,"requested_units":31,"shortage_units":0}';
const FINAL = 'sku_123 has 42 units available against 31 requested: no shortage.';
const fenced = (code: string): string => `\`\`\`js\n${code}\n\`\`\``;

let backend: ScriptedChat | undefined;
let server: RunningServer | undefined;
afterEach(async () => {
  await server?.close();
  await backend?.close();
  server = backend = undefined;
});

/** A scripted backend and an emulator that uses it. */
async function withBackend(script: readonly ScriptedReply[], settings: Partial<ModelBackendConfig> = {}): Promise<{ backend: ScriptedChat; client: OpenAI }> {
  backend = await startScriptedChat(script);
  server = await startServer({ config: { modelBackend: { url: backend.url, timeoutMs: 30_000, retries: 2, ...settings } } });
  return { backend, client: server.client };
}

async function seedDeclarations(): Promise<string> {
  return (await toolDeclarations(readToolSet(SEED_TOOLS as Tool[]).summaries)).text;
}

describe.each([
  ['store: false, resending every item', seedLoopStateless],
  ['store: true, continuing with previous_response_id', seedLoopStored],
])('the seed client loop with a model backend (%s)', (_, loop) => {
  it('runs the program the backend wrote and returns the final message it wrote from the result', async () => {
    const { backend, client } = await withBackend([
      chatMessage(`I'll compare both in one program.\n\n${fenced(SEED_PROGRAM)}`, { prompt_tokens: 412, completion_tokens: 96 }),
      chatMessage(FINAL, { prompt_tokens: 530, completion_tokens: 18 }),
    ]);
    const { text, responses } = await loop(client);
    expect(text).toBe(FINAL);
    expect(responses).toHaveLength(2);
    const [paused, finished] = responses as [Response, Response];
    expect(paused.output.map((item) => item.type)).toEqual(['program', 'function_call', 'function_call']);
    const program = paused.output[0] as OpenAI.Responses.ResponseOutputItem.Program;
    expect(program.code).toBe(SEED_PROGRAM);
    for (const call of paused.output.slice(1) as OpenAI.Responses.ResponseFunctionToolCall[]) {
      expect(call.arguments).toBe('{"sku":"sku_123"}');
      expect(call.caller).toEqual({ type: 'program', caller_id: program.call_id });
    }
    expect(finished.output.map((item) => item.type)).toEqual(['program_output', 'message']);
    expect(finished.output[0]).toMatchObject({ status: 'completed', result: SEED_RESULT });

    // What the backend was shown: the rules and the seed's tools as TypeScript, then the task.
    expect(backend.received).toHaveLength(2);
    const [asked, askedFinal] = backend.received.map((request) => request.body);
    expect(asked!.model).toBe('YOUR_MODEL_ID');
    expect(asked!.tools).toBeUndefined(); // both tools are programmatic only
    const system = asked!.messages[0]!;
    expect(system.role).toBe('system');
    expect(system.content).toContain(`\`\`\`ts\n${await seedDeclarations()}\n\`\`\``);
    expect(system.content).toContain('no `require`, `import`, `process`, `fetch`');
    expect(asked!.messages.slice(1)).toEqual([{ role: 'user', content: 'Compare inventory with demand for sku_123.' }]);
    // After the program: its code and result, and the request for the final message.
    const shown = askedFinal!.messages.map((message) => message.content ?? '').join('\n');
    expect(shown).toContain(SEED_PROGRAM);
    expect(shown).toContain(SEED_RESULT);
    expect(askedFinal!.messages.at(-1)).toMatchObject({ role: 'user', content: expect.stringContaining('final message') });
    expect(askedFinal!.tools).toBeUndefined();

    // Usage is the backend's own count for each response.
    expect(paused.usage).toMatchObject({ input_tokens: 412, output_tokens: 96, total_tokens: 508 });
    expect(finished.usage).toMatchObject({ input_tokens: 530, output_tokens: 18, total_tokens: 548 });
  });
});

describe('tool declarations', () => {
  it('render parameters and output_schema as interfaces and the tools object as methods', async () => {
    const text = await seedDeclarations();
    expect(text).toContain('interface GetInventoryArguments {\n  sku: string\n}');
    expect(text).toContain('interface GetDemandOutput {\n  sku: string\n  requested_units: number\n}');
    expect(text).toContain('  get_inventory(args: GetInventoryArguments): Promise<GetInventoryOutput>;');
    expect(text).toContain('declare function text(value: unknown): void;');
  });

  it('cover namespaces, custom tools, tools without schemas and names that are not identifiers, and leave out direct-only tools', async () => {
    const tools: Tool[] = [
      {
        type: 'function',
        name: 'lookup',
        description: 'Finds things.\nTwo lines.',
        parameters: { type: 'object', properties: { q: { type: 'string' } } },
        allowed_callers: ['programmatic'],
        strict: false,
      },
      { type: 'function', name: 'direct_only', parameters: { type: 'object', properties: {} } },
      { type: 'custom', name: 'grep', allowed_callers: ['programmatic'] },
      { type: 'namespace', name: 'crm', description: 'CRM', tools: [{ type: 'function', name: 'get-customer', allowed_callers: ['programmatic'] }] },
      { type: 'programmatic_tool_calling' },
    ] as Tool[];
    const text = (await toolDeclarations(readToolSet(tools).summaries)).text;
    expect(text).toContain('  /**\n   * Finds things.\n   * Two lines.\n   */\n  lookup(args: LookupArguments): Promise<string>;');
    expect(text).toContain('  grep(input: string): Promise<string>;');
    expect(text).toContain('  crm: {\n    "get-customer"(args?: Record<string, unknown>): Promise<string>;\n  };');
    expect(text).not.toContain('direct_only');
  });

  it('resolve $refs inside a schema and never outside it', async () => {
    const inner: Tool[] = [
      {
        type: 'function',
        name: 'tag',
        parameters: {
          type: 'object',
          properties: { tags: { type: 'array', items: { $ref: '#/$defs/Tag' } } },
          $defs: { Tag: { type: 'object', title: 'Tag', properties: { n: { type: 'string' } } } },
        },
        allowed_callers: ['programmatic'],
        strict: false,
      },
      { type: 'programmatic_tool_calling' },
    ] as Tool[];
    expect((await toolDeclarations(readToolSet(inner).summaries)).text).toContain('tags?: TagArgumentsTag[]');
    const remote = [{ ...inner[0], parameters: { $ref: 'http://127.0.0.1:9/schema.json' } }, inner[1]] as Tool[];
    // Nothing is fetched: the model reads the schema itself.
    const text = (await toolDeclarations(readToolSet(remote).summaries)).text;
    expect(text).toContain('Not rendered as TypeScript (Unable to resolve $ref pointer');
    expect(text).toContain('type TagArguments = unknown;');
    expect(backend).toBeUndefined();
  });
});

/** The seed's first request, by hand: one turn. */
const seedRequest = { model: 'm', input: 'Compare inventory with demand for sku_123.', tools: SEED_TOOLS } as const;

describe('program extraction and the retry on a syntax error', () => {
  it('takes the first js block of the answer as the program, prose around it ignored', async () => {
    const { client } = await withBackend([chatMessage(`Here:\n\`\`\`js\ntext('hi')\n\`\`\`\nand \`\`\`js\ntext('second')\n\`\`\``), chatMessage('Said hi.')]);
    const response = await client.responses.create(seedRequest);
    expect(response.output.map((item) => item.type)).toEqual(['program', 'program_output', 'message']);
    expect((response.output[0] as { code: string }).code).toBe("text('hi')");
    expect(response.output_text).toBe('Said hi.');
  });

  it('sends a program that does not parse back with the error once, and runs the mended one', async () => {
    const { backend, client } = await withBackend([
      chatMessage(fenced('const x = ;'), { prompt_tokens: 100, completion_tokens: 10 }),
      chatMessage(fenced("text('mended')"), { prompt_tokens: 150, completion_tokens: 12 }),
      chatMessage('Done.', { prompt_tokens: 200, completion_tokens: 3 }),
    ]);
    const response = await client.responses.create(seedRequest);
    expect(response.output.map((item) => item.type)).toEqual(['program', 'program_output', 'message']);
    expect(response.output[1]).toMatchObject({ status: 'completed', result: 'mended' });
    const retry = backend.received[1]!.body.messages;
    expect(retry.at(-2)).toEqual({ role: 'assistant', content: fenced('const x = ;') });
    expect(retry.at(-1)!.content).toContain('the program does not parse: SyntaxError: Unexpected token');
    // Every backend call of the response is counted, the retry included.
    expect(response.usage).toMatchObject({ input_tokens: 450, output_tokens: 25 });
  });

  it('answers honestly, running nothing, when the second program does not parse either', async () => {
    const { client } = await withBackend([chatMessage(fenced('const x = ;')), chatMessage(fenced('import fs from "node:fs";'))]);
    const response = await client.responses.create(seedRequest);
    expect(response.output.map((item) => item.type)).toEqual(['message']);
    expect(response.output_text).toMatch(
      /^ptc-emulator: the model backend's answer could not be carried out, twice: the program does not parse: SyntaxError: .*Nothing was run\.$/,
    );
  });
});

describe('direct calls', () => {
  const weather: Tool[] = [
    {
      type: 'function',
      name: 'get_weather',
      description: 'Weather of a city.',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
      strict: true,
    },
    {
      type: 'namespace',
      name: 'crm',
      description: 'CRM',
      tools: [{ type: 'function', name: 'get_customer', parameters: { type: 'object', properties: { id: { type: 'string' } } }, strict: false }],
    },
  ] as Tool[];

  it('offers the tools callable directly as chat tools and emits the calls the backend makes; the final message follows the outputs', async () => {
    const { backend, client } = await withBackend([
      chatToolCalls([
        { name: 'get_weather', arguments: '{"city":"Lisbon"}' },
        { name: 'crm__get_customer', arguments: '{"id":"c-7"}' },
      ]),
      chatMessage('Sunny in Lisbon; c-7 is Ana.'),
    ]);
    const first = await client.responses.create({ model: 'm', input: 'Weather and customer c-7?', tools: weather as OpenAI.Responses.Tool[] });
    expect(backend.received[0]!.body.tools!.map((tool) => tool.function.name)).toEqual(['get_weather', 'crm__get_customer']);
    expect(backend.received[0]!.body.tools![0]!.function).toEqual({
      name: 'get_weather',
      description: 'Weather of a city.',
      parameters: weather[0]!.type === 'function' ? weather[0]!.parameters : null,
    });
    const calls = first.output as OpenAI.Responses.ResponseFunctionToolCall[];
    expect(calls.map((call) => [call.type, call.namespace ?? null, call.name, call.arguments])).toEqual([
      ['function_call', null, 'get_weather', '{"city":"Lisbon"}'],
      ['function_call', 'crm', 'get_customer', '{"id":"c-7"}'],
    ]);
    const second = await client.responses.create({
      model: 'm',
      previous_response_id: first.id,
      input: calls.map((call, index) => ({ type: 'function_call_output' as const, call_id: call.call_id, output: ['sunny', 'Ana'][index]! })),
      tools: weather as OpenAI.Responses.Tool[],
    });
    expect(second.output_text).toBe('Sunny in Lisbon; c-7 is Ana.');
    const shown = backend.received[1]!.body.messages;
    expect(shown.find((message) => message.role === 'assistant')!.tool_calls!.map((call) => call.function.name)).toEqual(['get_weather', 'crm__get_customer']);
    expect(shown.filter((message) => message.role === 'tool').map((message) => [message.tool_call_id, message.content])).toEqual([
      [calls[0]!.call_id, 'sunny'],
      [calls[1]!.call_id, 'Ana'],
    ]);
    // After the outputs the model may call again: the tools are offered again.
    expect(backend.received[1]!.body.tools!.map((tool) => tool.function.name)).toEqual(['get_weather', 'crm__get_customer']);
  });

  it("lets the model call again after its calls' outputs, round after round, before it answers", async () => {
    const { backend, client } = await withBackend([
      chatToolCalls([{ name: 'get_weather', arguments: '{"city":"Lisbon"}' }]),
      chatToolCalls([{ name: 'get_weather', arguments: '{"city":"Porto"}' }]),
      chatMessage('Lisbon sunny, Porto rain.'),
    ]);
    let response = await client.responses.create({ model: 'm', input: 'Weather in Lisbon, then Porto?', tools: weather as OpenAI.Responses.Tool[] });
    const asked: string[] = [];
    for (const answer of ['sunny', 'rain']) {
      const [call] = response.output as OpenAI.Responses.ResponseFunctionToolCall[];
      asked.push(call!.arguments);
      response = await client.responses.create({
        model: 'm',
        previous_response_id: response.id,
        input: [{ type: 'function_call_output', call_id: call!.call_id, output: answer }],
        tools: weather as OpenAI.Responses.Tool[],
      });
    }
    expect(asked).toEqual(['{"city":"Lisbon"}', '{"city":"Porto"}']);
    expect(response.output_text).toBe('Lisbon sunny, Porto rain.');
    expect(backend.received[2]!.body.messages.filter((message) => message.role === 'tool').map((message) => message.content)).toEqual(['sunny', 'rain']);
  });

  it('gives a call of a function it was not given back once', async () => {
    const { backend, client } = await withBackend([chatToolCalls([{ name: 'get_wether', arguments: '{}' }]), chatMessage('I cannot tell.')]);
    const response = await client.responses.create({ model: 'm', input: 'Weather?', tools: weather as OpenAI.Responses.Tool[] });
    expect(response.output_text).toBe('I cannot tell.');
    expect(backend.received[1]!.body.messages.at(-1)!.content).toContain('there is no function named "get_wether"');
  });
});

describe('backend failures', () => {
  it('retries a 429 and a 500, honouring retry-after-ms, then answers', async () => {
    const { backend, client } = await withBackend([chatError(429, 'slow down', { 'retry-after-ms': '10' }), chatError(500, 'oops'), chatMessage('Hello.')]);
    const response = await client.responses.create({ model: 'm', input: 'Hi' });
    expect(response.output_text).toBe('Hello.');
    expect(backend.received).toHaveLength(3);
  });

  it('answers 429 model_backend_rate_limited, passing retry-after on, when every try is rate limited', async () => {
    const { backend, client } = await withBackend([chatError(429, 'quota', { 'retry-after': '0' }), chatError(429, 'quota', { 'retry-after': '0' })], {
      retries: 1,
    });
    const error = await rejectionOf(client.responses.create({ model: 'm', input: 'Hi' }));
    expectSdkError(error, { code: 'model_backend_rate_limited', mentions: ['429 to 2 tries', 'quota'] });
    expect(error.headers?.get('retry-after')).toBe('0');
    expect(backend.received).toHaveLength(2);
  });

  it('answers 502 model_backend_error after the retries of a 500', async () => {
    const { backend, client } = await withBackend([chatError(500, 'boom'), chatError(503, 'down'), chatError(502, 'gateway')], { retries: 2 });
    const error = await rejectionOf(client.responses.create({ model: 'm', input: 'Hi' }));
    expectSdkError(error, { code: 'model_backend_error', mentions: ['failed 3 tries', '502 gateway'] });
    expect(backend.received).toHaveLength(3);
  });

  it('does not retry a 4xx, and never passes the key on, even when the backend echoes it', async () => {
    const { backend, client } = await withBackend([chatError(401, 'Incorrect API key provided: sk-backend-secret')], {
      apiKey: 'sk-backend-secret',
      model: 'served-model',
    });
    const error = await rejectionOf(client.responses.create({ model: 'm', input: 'Hi' }));
    expectSdkError(error, { code: 'model_backend_error', mentions: ['answered 401', 'Incorrect API key provided: [redacted]'] });
    expect(JSON.stringify(error.error)).not.toContain('sk-backend-secret');
    expect(backend.received).toHaveLength(1);
    expect(backend.received[0]!.headers.authorization).toBe('Bearer sk-backend-secret');
    expect(backend.received[0]!.body.model).toBe('served-model');
  });

  it('answers 504 model_backend_timeout when the backend does not answer in time', async () => {
    const { backend, client } = await withBackend([{ hangs: true }], { timeoutMs: 200, retries: 2 });
    const error = await rejectionOf(client.responses.create({ model: 'm', input: 'Hi' }));
    expectSdkError(error, { code: 'model_backend_timeout', mentions: ['200 ms'] });
    // A slow model is not asked again: a timeout is not retried.
    expect(backend.received).toHaveLength(1);
  });

  it('answers 502 when the backend cannot be reached or its answer is not a chat completion', async () => {
    const { client } = await withBackend([{ text: 'not json' }, { json: { object: 'list', data: [] } }], { retries: 0 });
    expectSdkError(await rejectionOf(client.responses.create({ model: 'm', input: 'Hi' })), { code: 'model_backend_error', mentions: ['not JSON: not json'] });
    expectSdkError(await rejectionOf(client.responses.create({ model: 'm', input: 'Hi' })), { code: 'model_backend_error', mentions: ['no choices'] });
    await backend!.close();
    expectSdkError(await rejectionOf(client.responses.create({ model: 'm', input: 'Hi' })), {
      code: 'model_backend_error',
      mentions: ['cannot reach', 'ECONNREFUSED'],
    });
  });
});
