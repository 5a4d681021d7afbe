import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentLoop } from '../support/agent-loop.ts';
import { expectSdkError, rejectionOf } from '../support/api-errors.ts';
import { startServer, type RunningServer } from '../support/server.ts';

// A travel agent with many tools, most deferred: the model searches, then a program uses what loaded.
const WEATHER: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
  defer_loading: true,
  allowed_callers: ['programmatic'],
};
const TOOLS: OpenAI.Responses.Tool[] = [
  { type: 'tool_search' },
  WEATHER,
  {
    type: 'function',
    name: 'book_hotel',
    description: 'Books a hotel room',
    parameters: null,
    strict: false,
    defer_loading: true,
    allowed_callers: ['programmatic'],
  },
  { type: 'function', name: 'get_time', description: 'The local time', parameters: null, strict: false, allowed_callers: ['programmatic'] },
  {
    type: 'namespace',
    name: 'maps',
    description: 'Maps',
    tools: [
      { type: 'function', name: 'distance', description: 'Distance between cities', allowed_callers: ['programmatic'] },
      { type: 'function', name: 'traffic', description: 'Road traffic', allowed_callers: ['programmatic'], defer_loading: true },
    ],
  },
  { type: 'programmatic_tool_calling' },
];

const PROBE = 'text(JSON.stringify({ top: Object.keys(tools), maps: Object.keys(tools.maps) }))';
const USE_WEATHER = 'const w = await tools.get_weather({ city: "Lisbon" }); text(`${w} / ${typeof tools.book_hotel}`)';

const SCENARIOS = {
  rules: [
    { match: { user: 'probe' }, program: PROBE },
    { match: { user: 'weather, no search' }, program: USE_WEATHER },
    { match: { user: 'weather' }, search: 'weather forecast', program: USE_WEATHER },
    { match: { user: 'traffic' }, search: 'traffic', program: 'text(await tools.maps.traffic({}))' },
    { match: { user: 'order' }, search: 'order lookup', program: 'text(await tools.lookup_order({ id: 7 }))' },
    { match: { user: 'crm' }, search: 'crm', program: 'text(JSON.stringify(Object.keys(tools.crm ?? {})))' },
  ],
};

let server: RunningServer;
let clientSearch: RunningServer;
beforeAll(async () => {
  [server, clientSearch] = await Promise.all([startServer({ scenarios: SCENARIOS }), startServer({ scenarios: SCENARIOS })]);
});
afterAll(async () => {
  await Promise.all([server.close(), clientSearch.close()]);
});

describe('deferred tools', () => {
  it('are absent from programs until a search loads them, and a program cannot search', async () => {
    const { text } = await agentLoop(server.client, { model: 'm', input: 'probe', tools: TOOLS }, {});
    expect(JSON.parse(text)).toEqual({ top: ['get_time', 'maps'], maps: ['distance'] });
  });

  for (const [label, options] of [
    ['store: false, plain create', { store: false }],
    ['previous_response_id, the stream helper', { store: true, stream: true }],
  ] as const) {
    it(`load through a search the emulator runs, and a program in the same response uses them (${label})`, async () => {
      const { text, responses } = await agentLoop(
        server.client,
        { model: 'm', input: 'weather in Lisbon?', tools: TOOLS },
        { functions: { get_weather: ({ city }) => `sunny in ${city}` } },
        options,
      );
      expect(text).toBe('sunny in Lisbon / undefined');
      const first = responses[0]!.output;
      expect(first.map((item) => item.type)).toEqual(['tool_search_call', 'tool_search_output', 'program', 'function_call']);
      expect(first[0]).toEqual({
        type: 'tool_search_call',
        id: expect.stringMatching(/^tsc_/),
        call_id: null,
        arguments: { query: 'weather forecast' },
        execution: 'server',
        status: 'completed',
      });
      expect(first[1]).toEqual({
        type: 'tool_search_output',
        id: expect.stringMatching(/^tso_/),
        call_id: null,
        tools: [WEATHER],
        execution: 'server',
        status: 'completed',
      });
    });
  }

  it('stay loaded for the rest of the conversation, and a namespace member loads alone', async () => {
    const first = await server.client.responses.create({ model: 'm', input: 'traffic please', tools: TOOLS });
    expect(first.output.find((item) => item.type === 'tool_search_output')).toMatchObject({
      tools: [{ type: 'namespace', name: 'maps', tools: [{ name: 'traffic' }] }],
    });
    const [call] = first.output.filter((item) => item.type === 'function_call');
    const second = await server.client.responses.create({
      model: 'm',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call!.call_id, output: 'jammed', caller: call!.caller ?? null }],
      tools: TOOLS,
    });
    expect(second.output_text).toBe('jammed');
    const probe = await server.client.responses.create({ model: 'm', previous_response_id: second.id, input: 'probe', tools: TOOLS });
    expect(JSON.parse(probe.output_text)).toEqual({ top: ['get_time', 'maps'], maps: ['distance', 'traffic'] });
  });

  it('refuse, with a message, a search the request has no tool_search for', async () => {
    const response = await server.client.responses.create({ model: 'm', input: 'weather in Lisbon?', tools: TOOLS.slice(1) });
    expect(response.output_text).toContain('no {"type": "tool_search"} entry');
  });
});

describe('a search the client runs', () => {
  const CLIENT_TOOLS: OpenAI.Responses.Tool[] = [{ type: 'tool_search', execution: 'client' }, ...TOOLS.slice(1)];
  const LOOKUP: OpenAI.Responses.FunctionTool = { type: 'function', name: 'lookup_order', parameters: null, strict: false, allowed_callers: ['programmatic'] };

  it('ends the response at a tool_search_call; the tools its tool_search_output returns reach the next program', async () => {
    const first = await clientSearch.client.responses.create({ model: 'm', store: false, input: 'where is my order?', tools: CLIENT_TOOLS });
    expect(first.output).toEqual([
      {
        type: 'tool_search_call',
        id: expect.stringMatching(/^tsc_/),
        call_id: expect.stringMatching(/^call_/),
        arguments: { query: 'order lookup' },
        execution: 'client',
        status: 'completed',
      },
    ]);
    const call = first.output[0] as OpenAI.Responses.ResponseToolSearchCall;
    const input: ResponseInputItem[] = [
      { role: 'user', content: 'where is my order?' },
      ...toResponseInputItems(first.output),
      { type: 'tool_search_output', call_id: call.call_id, execution: 'client', status: 'completed', tools: [LOOKUP] },
    ];
    const { text } = await agentLoop(
      clientSearch.client,
      { model: 'm', input, tools: CLIENT_TOOLS },
      { functions: { lookup_order: ({ id }) => `order ${id} shipped` } },
    );
    expect(text).toBe('order 7 shipped');
  });

  it('rejects the next request when the tool_search_output is missing', async () => {
    const first = await clientSearch.client.responses.create({ model: 'm', store: false, input: 'where is my order?', tools: CLIENT_TOOLS });
    expectSdkError(
      await rejectionOf(
        clientSearch.client.responses.create({
          model: 'm',
          store: false,
          input: [{ role: 'user', content: 'where is my order?' }, ...toResponseInputItems(first.output)],
          tools: CLIENT_TOOLS,
        }),
      ),
      { code: 'tool_output_missing', param: 'input[1]', mentions: ['tool_search_output', 'tool_search_call'] },
    );
  });

  it('checks a tool_search_output like any output: it must answer a search that came before it, once', async () => {
    const first = await clientSearch.client.responses.create({ model: 'm', store: false, input: 'where is my order?', tools: CLIENT_TOOLS });
    const call = first.output[0] as OpenAI.Responses.ResponseToolSearchCall & { call_id: string };
    const user: ResponseInputItem = { role: 'user', content: 'where is my order?' };
    const output = (callId: string): ResponseInputItem => ({
      type: 'tool_search_output',
      call_id: callId,
      execution: 'client',
      status: 'completed',
      tools: [LOOKUP],
    });
    const send = (input: ResponseInputItem[], headers: Record<string, string> = {}) =>
      clientSearch.client.responses.create({ model: 'm', store: false, input, tools: CLIENT_TOOLS }, { headers });

    expectSdkError(await rejectionOf(send([user, ...toResponseInputItems(first.output), output(call.call_id), output('call_nope')])), {
      code: 'tool_output_unknown_call',
      param: 'input[3].call_id',
      mentions: ['call_nope', 'tool_search_call'],
    });
    expectSdkError(await rejectionOf(send([user, ...toResponseInputItems(first.output), output(call.call_id), output(call.call_id)])), {
      code: 'tool_output_duplicate',
      param: 'input[3]',
      mentions: [call.call_id],
    });
    expectSdkError(await rejectionOf(send([user, output(call.call_id), ...toResponseInputItems(first.output)])), {
      code: 'items_out_of_order',
      param: 'input[1]',
      mentions: [call.call_id, 'before its tool_search_call'],
    });
    // Lenient checks let an unanswering output through, and its tools load.
    const lenient = await send([user, ...toResponseInputItems(first.output), output(call.call_id), output('call_nope')], { 'x-ptc-client-checks': 'lenient' });
    expect(lenient.output.map((item) => item.type)).toEqual(['program', 'function_call']);
  });

  it('merges namespace members a search returns into the namespace of that name, searches after searches', async () => {
    const CRM_TOOLS: OpenAI.Responses.Tool[] = [
      { type: 'tool_search', execution: 'client' },
      { type: 'namespace', name: 'crm', description: 'CRM', tools: [{ type: 'function', name: 'lookup_order', allowed_callers: ['programmatic'] }] },
      { type: 'programmatic_tool_calling' },
    ];
    const member = (name: string) => ({ type: 'function' as const, name, allowed_callers: ['programmatic' as const] });
    const searchOf = async (input: ResponseInputItem[]) => {
      const response = await clientSearch.client.responses.create({ model: 'm', store: false, input, tools: CRM_TOOLS });
      expect(response.output.map((item) => item.type)).toEqual(['tool_search_call']);
      return response.output[0] as OpenAI.Responses.ResponseToolSearchCall & { call_id: string };
    };
    const loaded = (call: OpenAI.Responses.ResponseToolSearchCall & { call_id: string }, names: string[]): ResponseInputItem[] => [
      ...toResponseInputItems([call]),
      {
        type: 'tool_search_output',
        call_id: call.call_id,
        execution: 'client',
        status: 'completed',
        tools: [{ type: 'namespace', name: 'crm', description: 'CRM', tools: names.map(member) }],
      },
    ];
    const input: ResponseInputItem[] = [{ role: 'user', content: 'crm' }];
    input.push(...loaded(await searchOf(input), ['lookup_order', 'refund_order']));
    const first = await clientSearch.client.responses.create({ model: 'm', store: false, input, tools: CRM_TOOLS });
    expect(JSON.parse(first.output_text)).toEqual(['lookup_order', 'refund_order']);
    input.push(...toResponseInputItems(first.output), { role: 'user', content: 'crm again' });
    input.push(...loaded(await searchOf(input), ['refund_order', 'close_ticket']));
    const second = await clientSearch.client.responses.create({ model: 'm', store: false, input, tools: CRM_TOOLS });
    expect(JSON.parse(second.output_text)).toEqual(['lookup_order', 'refund_order', 'close_ticket']);
  });

  it('refuses a loaded function whose schema ajv cannot compile where it comes in, programs enabled or not', async () => {
    const first = await clientSearch.client.responses.create({ model: 'm', store: false, input: 'where is my order?', tools: CLIENT_TOOLS });
    const call = first.output[0] as OpenAI.Responses.ResponseToolSearchCall & { call_id: string };
    const bad: OpenAI.Responses.FunctionTool = {
      type: 'function',
      name: 'bad',
      parameters: { type: 'object', properties: { a: { type: 'nope' } } },
      strict: true,
      allowed_callers: ['programmatic'],
    };
    const input: ResponseInputItem[] = [
      { role: 'user', content: 'where is my order?' },
      ...toResponseInputItems(first.output),
      { type: 'tool_search_output', call_id: call.call_id, execution: 'client', status: 'completed', tools: [bad] },
    ];
    for (const tools of [CLIENT_TOOLS, CLIENT_TOOLS.filter((tool) => tool.type === 'tool_search')]) {
      expectSdkError(await rejectionOf(clientSearch.client.responses.create({ model: 'm', store: false, input, tools })), {
        code: 'invalid_function_parameters',
        param: 'input[2].tools[0].parameters',
        mentions: ["'bad'"],
      });
    }
  });

  it('keeps a built-in tool (named by its type) the request has when a search returns it again', async () => {
    const tools: OpenAI.Responses.Tool[] = [
      { type: 'tool_search', execution: 'client' },
      { type: 'apply_patch', allowed_callers: ['programmatic'] },
      { type: 'programmatic_tool_calling' },
    ];
    const input: ResponseInputItem[] = [{ role: 'user', content: 'crm' }];
    for (let search = 0; search < 2; search++) {
      const response = await clientSearch.client.responses.create({ model: 'm', store: false, input, tools });
      const call = response.output.find((item) => item.type === 'tool_search_call') as OpenAI.Responses.ResponseToolSearchCall & { call_id: string };
      input.push(...toResponseInputItems(response.output), {
        type: 'tool_search_output',
        call_id: call.call_id,
        execution: 'client',
        status: 'completed',
        tools: [{ type: 'apply_patch' }],
      });
      const answered = await clientSearch.client.responses.create({ model: 'm', store: false, input, tools });
      expect(answered.status).toBe('completed');
      input.push(...toResponseInputItems(answered.output), { role: 'user', content: 'crm again' });
    }
  });

  it('keeps what a search loaded out of programs once a request turns programs off, without refusing it', async () => {
    const first = await server.client.responses.create({ model: 'm', input: 'weather in Lisbon?', tools: TOOLS });
    const [call] = first.output.filter((item) => item.type === 'function_call');
    const second = await server.client.responses.create({
      model: 'm',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call!.call_id, output: 'sunny', caller: call!.caller ?? null }],
      tools: TOOLS,
    });
    expect(second.output_text).toBe('sunny / undefined');
    const chat = await server.client.responses.create({ model: 'm', previous_response_id: second.id, input: 'thanks!' });
    expect(chat.status).toBe('completed');
  });
});

describe('a deferred tool', () => {
  it('is checked with the request, before any search: programs enabled, schemas compilable', async () => {
    const deferred = (extra: Partial<OpenAI.Responses.FunctionTool>): OpenAI.Responses.Tool[] => [
      { type: 'tool_search' },
      { type: 'function', name: 'later', parameters: null, strict: false, defer_loading: true, allowed_callers: ['programmatic'], ...extra },
    ];
    expectSdkError(await rejectionOf(server.client.responses.create({ model: 'm', input: 'hi', tools: deferred({}) })), {
      code: 'programmatic_tool_calling_not_enabled',
      param: 'tools[1].allowed_callers',
    });
    expectSdkError(
      await rejectionOf(
        server.client.responses.create({
          model: 'm',
          input: 'hi',
          tools: [...deferred({ parameters: { type: 'object', properties: { a: { type: 'nope' } } }, strict: true }), { type: 'programmatic_tool_calling' }],
        }),
      ),
      { code: 'invalid_function_parameters', param: 'tools[1].parameters' },
    );
  });
});
