import { randomUUID } from 'node:crypto';
import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { ResponseCustomToolCall, ResponseFunctionToolCall } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentLoop } from '../support/agent-loop.ts';
import { expectSdkError, rejectionOf, type ExpectedApiError } from '../support/api-errors.ts';
import { inlineProgram } from '../support/programs.ts';
import { startServer, type RunningServer } from '../support/server.ts';

// A ticket-triage agent: a free-form search tool (custom), a CRM namespace holding a function
// and a custom tool, and a function only the model may call directly.
const TOOLS: OpenAI.Responses.Tool[] = [
  { type: 'custom', name: 'search_logs', description: 'grep-like search over the logs', allowed_callers: ['programmatic'] },
  {
    type: 'namespace',
    name: 'crm',
    description: 'The customer database',
    tools: [
      {
        type: 'function',
        name: 'get_customer',
        parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'], additionalProperties: false },
        output_schema: { type: 'object' },
        allowed_callers: ['programmatic'],
      },
      { type: 'custom', name: 'add_note', allowed_callers: ['programmatic', 'direct'] },
      { type: 'function', name: 'delete_customer', allowed_callers: ['direct'] },
    ],
  },
  { type: 'function', name: 'escalate', parameters: { type: 'object', properties: {} }, strict: false },
  { type: 'programmatic_tool_calling' },
];

const PROGRAM = `
const [hits, customer] = await Promise.all([tools.search_logs('status:500 customer:c-7'), tools.crm.get_customer({ id: 'c-7' })]);
const note = await tools.crm.add_note(\`\${customer.name}: \${hits.split('\\n').length} errors\`);
text(JSON.stringify({ customer: customer.name, errors: hits.split('\\n').length, note }));
`;

const HANDLERS = {
  functions: { 'crm.get_customer': ({ id }: { id: string }) => ({ id, name: 'Ada' }) },
  custom: {
    search_logs: (input: string) => (input.includes('c-7') ? 'line 1\nline 2\nline 3' : ''),
    'crm.add_note': (input: string) => `noted(${input})`,
  },
};
const RESULT = { customer: 'Ada', errors: 3, note: 'noted(Ada: 3 errors)' };

async function expectApiError(request: PromiseLike<unknown>, expected: ExpectedApiError): Promise<void> {
  expectSdkError(await rejectionOf(request), expected);
}

let server: RunningServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

describe('custom tools and namespaces in a program', () => {
  for (const [label, options] of [
    ['store: false, plain create', { store: false }],
    ['previous_response_id, the stream helper', { store: true, stream: true }],
  ] as const) {
    it(`runs end to end with ${label}`, async () => {
      const { text, responses } = await agentLoop(server.client, { model: 'm', input: inlineProgram(PROGRAM), tools: TOOLS }, HANDLERS, options);
      expect(JSON.parse(text)).toEqual(RESULT);

      const [first, second] = responses;
      const program = first!.output.find((item) => item.type === 'program')!;
      // The stream helper adds its own `parsed_arguments` to function calls.
      const calls = first!.output
        .filter((item) => item.type === 'custom_tool_call' || item.type === 'function_call')
        .map((item) =>
          'parsed_arguments' in item ? (({ parsed_arguments: _parsed, ...call }) => call)(item as typeof item & { parsed_arguments: unknown }) : item,
        );
      expect(calls).toEqual([
        {
          type: 'custom_tool_call',
          id: expect.stringMatching(/^ctc_/),
          call_id: expect.stringMatching(/^call_/),
          name: 'search_logs',
          input: 'status:500 customer:c-7',
          caller: { type: 'program', caller_id: program.call_id },
        },
        {
          type: 'function_call',
          id: expect.stringMatching(/^fc_/),
          call_id: expect.stringMatching(/^call_/),
          name: 'get_customer',
          namespace: 'crm',
          arguments: '{"id":"c-7"}',
          // A program's call stays in_progress: its program waits on it.
          status: 'in_progress',
          caller: { type: 'program', caller_id: program.call_id },
        },
      ]);
      const note = second!.output.find((item): item is ResponseCustomToolCall => item.type === 'custom_tool_call');
      expect(note).toMatchObject({ name: 'add_note', namespace: 'crm', input: 'Ada: 3 errors' });
    });
  }

  it('replays a program that called custom tools on a server that never saw it', async () => {
    const fingerprintKey = randomUUID();
    const live = await startServer({ config: { fingerprintKey } });
    const cold = await startServer({ config: { fingerprintKey, maxPausedPrograms: 0 } });
    try {
      const onLive = await agentLoop(live.client, { model: 'm', input: inlineProgram(PROGRAM), tools: TOOLS }, HANDLERS);
      const onCold = await agentLoop(cold.client, { model: 'm', input: inlineProgram(PROGRAM), tools: TOOLS }, HANDLERS);
      expect(JSON.parse(onCold.text)).toEqual(RESULT);
      expect(onCold.text).toBe(onLive.text);
    } finally {
      await live.close();
      await cold.close();
    }
  });

  it('runs the same through a worker process', async () => {
    const pooled = await startServer({ config: { workers: 1 } });
    try {
      const { text } = await agentLoop(pooled.client, { model: 'm', input: inlineProgram(PROGRAM), tools: TOOLS }, HANDLERS);
      expect(JSON.parse(text)).toEqual(RESULT);
    } finally {
      await pooled.close();
    }
  });

  it('shows a program only the tools it may call, nested under their namespace', async () => {
    const probe = 'text(JSON.stringify({ top: Object.keys(tools), crm: Object.keys(tools.crm), frozen: Object.isFrozen(tools.crm) }))';
    const { text } = await agentLoop(server.client, { model: 'm', input: inlineProgram(probe), tools: TOOLS }, {});
    expect(JSON.parse(text)).toEqual({ top: ['search_logs', 'crm'], crm: ['get_customer', 'add_note'], frozen: true });
  });

  it('throws a TypeError inside the program when a custom tool is given anything but a string', async () => {
    const code = 'try { await tools.search_logs({ q: 1 }) } catch (e) { text(e.name + ": " + e.message) }';
    const { text } = await agentLoop(server.client, { model: 'm', input: inlineProgram(code), tools: TOOLS }, {});
    expect(text).toBe('TypeError: tools.search_logs expects one string of input, got an object');
  });

  it('rejects an edited custom tool input, namespace or name with program_item_altered', async () => {
    const first = await server.client.responses.create({ model: 'm', store: false, input: inlineProgram(PROGRAM), tools: TOOLS });
    const calls = first.output.filter(
      (item): item is ResponseCustomToolCall | ResponseFunctionToolCall => item.type === 'custom_tool_call' || item.type === 'function_call',
    );
    const answers = calls.map((call) =>
      call.type === 'custom_tool_call'
        ? { type: 'custom_tool_call_output' as const, call_id: call.call_id, output: 'x', caller: call.caller ?? null }
        : { type: 'function_call_output' as const, call_id: call.call_id, output: '{"name":"Ada"}', caller: call.caller ?? null },
    );
    const edits: [string, (item: any) => any][] = [
      ['input', (item) => (item.type === 'custom_tool_call' ? { ...item, input: 'status:200' } : item)],
      ['namespace', (item) => (item.type === 'function_call' ? { ...item, namespace: 'billing' } : item)],
      ['name', (item) => (item.type === 'custom_tool_call' ? { ...item, name: 'get_customer' } : item)],
    ];
    for (const [what, edit] of edits) {
      await expectApiError(
        server.client.responses.create({
          model: 'm',
          store: false,
          input: [{ role: 'user', content: inlineProgram(PROGRAM) }, ...first.output.map(edit), ...answers],
          tools: TOOLS,
        }),
        { code: 'program_item_altered', mentions: ['is not call', what] },
      );
    }
  });

  it('rejects a function_call_output answering a custom tool call, naming the item type to use', async () => {
    const first = await server.client.responses.create({ model: 'm', store: false, input: inlineProgram(PROGRAM), tools: TOOLS });
    const custom = first.output.find((item): item is ResponseCustomToolCall => item.type === 'custom_tool_call')!;
    const fn = first.output.find((item): item is ResponseFunctionToolCall => item.type === 'function_call')!;
    await expectApiError(
      server.client.responses.create({
        model: 'm',
        store: false,
        tools: TOOLS,
        input: [
          { role: 'user', content: inlineProgram(PROGRAM) },
          ...toResponseInputItems(first.output),
          { type: 'function_call_output', call_id: custom.call_id, output: 'x', caller: custom.caller ?? null },
          { type: 'function_call_output', call_id: fn.call_id, output: '{}', caller: fn.caller ?? null },
        ],
      }),
      { code: 'tool_output_unknown_call', param: 'input[4].type', mentions: ['custom_tool_call_output', custom.call_id] },
    );
  });
});

describe('direct calls of custom and namespaced tools', () => {
  let scripted: RunningServer;
  beforeAll(async () => {
    scripted = await startServer({
      model: (context) =>
        context.phase === 'user_turn' && context.lastUserText === 'note it'
          ? {
              type: 'function_calls',
              calls: [
                { name: 'add_note', namespace: 'crm', input: 'called directly' },
                { name: 'escalate', arguments: {} },
              ],
            }
          : context.phase === 'user_turn' && context.lastUserText === 'delete'
            ? { type: 'function_calls', calls: [{ name: 'get_customer', namespace: 'crm', arguments: { id: 'c-7' } }] }
            : undefined,
    });
  });
  afterAll(() => scripted.close());

  it('emits custom_tool_call and namespaced function_call items with caller direct, and summarises the outputs', async () => {
    const { text, responses } = await agentLoop(
      scripted.client,
      { model: 'm', input: 'note it', tools: TOOLS },
      {
        custom: { 'crm.add_note': (input) => `ok: ${input}` },
        functions: { escalate: () => 'escalated' },
      },
    );
    expect(responses[0]!.output).toEqual([
      {
        type: 'custom_tool_call',
        id: expect.stringMatching(/^ctc_/),
        call_id: expect.any(String),
        name: 'add_note',
        namespace: 'crm',
        input: 'called directly',
        caller: { type: 'direct' },
      },
      {
        type: 'function_call',
        id: expect.stringMatching(/^fc_/),
        call_id: expect.any(String),
        name: 'escalate',
        arguments: '{}',
        status: 'completed',
        caller: { type: 'direct' },
      },
    ]);
    // The autopilot states the outputs, as the model function leaves that turn to it.
    expect(text).toBe('crm.add_note returned ok: called directly; escalate returned escalated.');
  });

  it('never calls a programs-only namespace member directly', async () => {
    const response = await scripted.client.responses.create({ model: 'm', input: 'delete', tools: TOOLS });
    expect(response.output_text).toContain(`'crm.get_customer' directly, but its allowed_callers is ["programmatic"]`);
  });
});

describe('tool definitions that cannot work', () => {
  it('rejects a name with characters the API does not allow: a dot would make `namespace.name` ambiguous', async () => {
    for (const [tools, param] of [
      [[{ type: 'function', name: 'crm.get' }], 'tools[0].name'],
      [[{ type: 'custom', name: 'my tool' }], 'tools[0].name'],
      [[{ type: 'namespace', name: 'crm', description: 'd', tools: [{ type: 'function', name: 'a.b' }] }], 'tools[0].tools[0].name'],
      [[{ type: 'mcp', server_label: 'docs.v2', server_url: 'http://127.0.0.1:9/mcp' }], 'tools[0].server_label'],
    ] as [OpenAI.Responses.Tool[], string][]) {
      await expectApiError(server.client.responses.create({ model: 'm', input: 'hi', tools }), {
        code: 'invalid_value',
        param,
        mentions: ["'^[a-zA-Z0-9_-]+$'"],
      });
    }
  });

  it('rejects a namespace member allowing programs without programmatic_tool_calling', async () => {
    await expectApiError(
      server.client.responses.create({
        model: 'm',
        input: 'hi',
        tools: [{ type: 'namespace', name: 'crm', description: 'd', tools: [{ type: 'custom', name: 'add_note', allowed_callers: ['programmatic'] }] }],
      }),
      { code: 'programmatic_tool_calling_not_enabled', param: 'tools[0].tools[0].allowed_callers', mentions: ["'add_note'"] },
    );
  });

  it('rejects two tools of one namespace with the same name, and a namespace named like a tool', async () => {
    await expectApiError(
      server.client.responses.create({
        model: 'm',
        input: 'hi',
        tools: [
          {
            type: 'namespace',
            name: 'crm',
            description: 'd',
            tools: [
              { type: 'custom', name: 'a' },
              { type: 'function', name: 'a' },
            ],
          },
        ],
      }),
      { code: 'duplicate_tool_name', param: 'tools[0].tools[1].name', mentions: ["'crm.a'"] },
    );
    await expectApiError(
      server.client.responses.create({
        model: 'm',
        input: 'hi',
        tools: [
          { type: 'custom', name: 'crm' },
          { type: 'namespace', name: 'crm', description: 'd', tools: [{ type: 'custom', name: 'a' }] },
        ],
      }),
      { code: 'duplicate_tool_name', param: 'tools[1].name', mentions: ["'crm'"] },
    );
  });
});
