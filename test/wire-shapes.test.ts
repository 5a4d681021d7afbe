import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { ResponseCreateParamsNonStreaming, ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateResponseRequest } from '../schemas/request.ts';
import { ErrorEnvelope, ResponseObject } from '../schemas/response.ts';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { LISTED_ITEM_REQUIRED_KEYS } from './support/listed-item-keys.ts';
import { inlineProgram, programTools } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({
    scenarios: { rules: [{ match: { user: 'direct' }, reasoning: 'one call', calls: [{ name: 'lookup', arguments: { q: 'x' } }] }] },
  });
});
afterAll(() => server.close());

async function post(body: unknown): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`${server.baseURL}/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer test-key' },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

const TOOLS = [...programTools('lookup'), { type: 'function', name: 'direct_lookup', parameters: null, strict: null }];
const lookupBoth = { type: 'function', name: 'lookup', parameters: {}, strict: false, allowed_callers: ['direct', 'programmatic'] };

describe('every kind of turn, as raw JSON on the wire', () => {
  it.each([
    ['a program that pauses', { input: inlineProgram('text(await tools.lookup({}))'), tools: TOOLS }, ['program', 'function_call']],
    ['a program that completes at once', { input: inlineProgram('text("hi")'), tools: TOOLS }, ['program', 'program_output', 'message']],
    ['a program that fails', { input: inlineProgram('throw 1'), tools: TOOLS }, ['program', 'program_output', 'message']],
    ['a direct call with reasoning', { input: 'direct please', tools: [lookupBoth, { type: 'programmatic_tool_calling' }] }, ['reasoning', 'function_call']],
    ['a plain message', { input: 'hello' }, ['message']],
  ])('%s matches the strict Response schema and survives toResponseInputItems', async (_, body, types) => {
    const { status, json } = await post({ model: 'm', ...body });
    expect(status).toBe(200);
    const response = ResponseObject.parse(json);
    expect(response.output.map((item) => item.type)).toEqual(types);
    expect(json).not.toHaveProperty('output_text');
    expect(toResponseInputItems(response.output as OpenAI.Responses.ResponseOutputItem[])).toEqual(response.output);
  });

  it('resumes and completes, still matching the schema', async () => {
    const input: ResponseInputItem[] = [{ role: 'user', content: inlineProgram('text(await tools.lookup({}))') }];
    const first = ResponseObject.parse((await post({ model: 'm', store: false, input, tools: TOOLS })).json);
    const call = first.output[1];
    if (call?.type !== 'function_call') throw new Error('expected a function call');
    const items = [...input, ...first.output, { type: 'function_call_output', call_id: call.call_id, output: 'found', caller: call.caller }];
    const second = ResponseObject.parse((await post({ model: 'm', store: false, input: items, tools: TOOLS })).json);
    expect(second.output.map((item) => item.type)).toEqual(['program_output', 'message']);
  });

  it("as a hosted response recorded by the Vercel AI SDK has it: ids cm_ and cmo_, a program's call in_progress, tool_usage", async () => {
    const paused = ResponseObject.parse(
      (await post({ model: 'm', input: inlineProgram('text(await tools.lookup({}))'), tools: TOOLS, max_tool_calls: 5 })).json,
    );
    const [program, call] = paused.output;
    expect(program).toMatchObject({ type: 'program', id: expect.stringMatching(/^cm_[0-9a-f]{48}$/) });
    // The program waits on its call: in_progress, where the model's own calls are completed.
    expect(call).toMatchObject({ type: 'function_call', status: 'in_progress', caller: { type: 'program' } });
    expect(paused.max_tool_calls).toBe(5);
    expect(paused.tool_usage).toEqual({
      image_gen: {
        input_tokens: 0,
        input_tokens_details: { image_tokens: 0, text_tokens: 0 },
        output_tokens: 0,
        output_tokens_details: { image_tokens: 0, text_tokens: 0 },
        total_tokens: 0,
      },
      web_search: { num_requests: 0 },
    });
    const direct = ResponseObject.parse((await post({ model: 'm', input: 'direct please', tools: [lookupBoth, { type: 'programmatic_tool_calling' }] })).json);
    expect(direct.output[1]).toMatchObject({ type: 'function_call', status: 'completed' });
    expect(direct.output[0]).not.toHaveProperty('encrypted_content');
    expect(direct.max_tool_calls).toBeNull();

    const done = ResponseObject.parse((await post({ model: 'm', input: inlineProgram('text("hi")'), tools: TOOLS })).json);
    expect(done.output[1]).toMatchObject({ type: 'program_output', id: expect.stringMatching(/^cmo_[0-9a-f]{48}$/), status: 'completed' });
  });

  it('reasoning items carry encrypted_content when include asks for it, and it comes back in a store: false request', async () => {
    const body = { model: 'm', store: false, include: ['reasoning.encrypted_content'], tools: [lookupBoth, { type: 'programmatic_tool_calling' }] };
    const first = ResponseObject.parse((await post({ ...body, input: 'direct please' })).json);
    const reasoning = first.output[0];
    expect(reasoning).toMatchObject({ type: 'reasoning', encrypted_content: expect.stringMatching(/^ptcrs1\./) });
    const call = first.output[1];
    if (call?.type !== 'function_call') throw new Error('expected a function call');
    const next = await post({
      ...body,
      input: [{ role: 'user', content: 'direct please' }, ...first.output, { type: 'function_call_output', call_id: call.call_id, output: 'found' }],
    });
    expect(next.status).toBe(200);
  });

  it('echoes function tools with parameters and strict filled in', async () => {
    const { json } = await post({ model: 'm', input: 'hello', tools: [{ type: 'function', name: 'f' }] });
    expect(ResponseObject.parse(json).tools).toEqual([{ type: 'function', name: 'f', parameters: null, strict: true }]);
  });

  it('answers errors in the strict error envelope', async () => {
    const { status, json } = await post({ model: 'm', input: 5 });
    expect(status).toBe(400);
    expect(ErrorEnvelope.parse(json).error.param).toBe('input');
  });
});

describe('requests the SDK can type', () => {
  // Each object is checked by the compiler against the SDK's own request type, then by our schema.
  const requests: [string, ResponseCreateParamsNonStreaming][] = [
    [
      'every tool type',
      {
        model: 'm',
        tools: [
          {
            type: 'function',
            name: 'f',
            parameters: { type: 'object' },
            strict: true,
            output_schema: { type: 'object' },
            allowed_callers: ['programmatic'],
            defer_loading: false,
            description: 'd',
          },
          { type: 'custom', name: 'c', description: 'free text', format: { type: 'text' }, allowed_callers: ['direct'] },
          { type: 'programmatic_tool_calling' },
          {
            type: 'namespace',
            name: 'ns',
            description: 'a namespace',
            tools: [
              { type: 'function', name: 'g' },
              { type: 'custom', name: 'h', format: { type: 'grammar', definition: 'start: "a"', syntax: 'lark' } },
            ],
          },
          { type: 'mcp', server_label: 'docs', server_url: 'https://example.com/mcp', require_approval: 'never', allowed_callers: ['programmatic'] },
          { type: 'shell', environment: { type: 'local' } },
          { type: 'apply_patch' },
          { type: 'code_interpreter', container: { type: 'auto' } },
          { type: 'local_shell' },
          { type: 'file_search', vector_store_ids: ['vs_1'] },
          { type: 'web_search' },
          { type: 'web_search_preview' },
          { type: 'image_generation' },
          { type: 'tool_search' },
          { type: 'computer_use_preview', display_height: 1, display_width: 1, environment: 'linux' },
        ],
      },
    ],
    [
      'every input item the PTC loop resends',
      {
        model: 'm',
        input: [
          { role: 'user', content: 'hi' },
          { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'rules' }] },
          {
            type: 'message',
            role: 'user',
            content: [
              { type: 'input_image', image_url: 'https://e.com/a.png', detail: 'auto' },
              { type: 'input_file', file_id: 'file_1' },
            ],
          },
          { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 's' }], encrypted_content: 'e' },
          { type: 'program', id: 'prog_1', call_id: 'call_p', code: 'text(1)', fingerprint: 'f' },
          {
            type: 'function_call',
            call_id: 'call_1',
            name: 'f',
            arguments: '{}',
            caller: { type: 'program', caller_id: 'call_p' },
            status: 'completed',
            id: 'fc_1',
          },
          { type: 'function_call_output', call_id: 'call_1', output: [{ type: 'input_text', text: 'out' }], caller: { type: 'program', caller_id: 'call_p' } },
          { type: 'program_output', id: 'po_1', call_id: 'call_p', result: '1', status: 'completed' },
          { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done', annotations: [] }] },
          { type: 'item_reference', id: 'msg_0' },
          { type: 'custom_tool_call', call_id: 'call_c', name: 'c', input: 'raw' },
          { type: 'custom_tool_call_output', call_id: 'call_c', output: 'ok' },
        ],
      },
    ],
    [
      'every parameter echoed but not acted on',
      {
        model: 'm',
        instructions: 'be brief',
        metadata: { a: 'b' },
        temperature: 0.5,
        top_p: 0.9,
        top_logprobs: 2,
        max_output_tokens: 100,
        truncation: 'auto',
        parallel_tool_calls: false,
        service_tier: 'flex',
        reasoning: { effort: 'low', summary: 'auto' },
        text: { format: { type: 'json_schema', name: 'out', schema: { type: 'object' }, strict: true }, verbosity: 'low' },
        tool_choice: { type: 'programmatic_tool_calling' },
        store: true,
        user: 'u',
        safety_identifier: 's',
        prompt_cache_key: 'k',
        include: ['reasoning.encrypted_content'],
      },
    ],
    [
      'what openai 7.x adds to a request',
      {
        model: 'm',
        access_programs: { cyber: 'standard' },
        background_options: { completion_window: 'soonest' },
        image: { context_compression: 'auto' },
        max_tool_calls: 5,
        service_tier: 'fast',
        tools: [
          { type: 'function', name: 'f', parameters: { type: 'object' }, strict: true, async: true },
          { type: 'custom', name: 'c', async: false },
        ],
        input: [
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi', prompt_cache_breakpoint: { mode: 'explicit', ttl: '12h' } }] },
          { type: 'configuration_update', reasoning: { effort: 'low' }, text: { format: { type: 'text' } } },
          { type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{}', async: true },
          { type: 'function_call_output', name: 'f', output: 'by name, without call_id' },
          { type: 'custom_tool_call', call_id: 'call_c', name: 'c', input: 'raw', async: false },
        ],
      },
    ],
  ];

  it('shows the fast tier as priority, as the SDK documents, and holds the 2h and 8h windows to background requests', async () => {
    const fast = await server.client.responses.create({ model: 'm', input: 'hi', service_tier: 'fast', access_programs: { cyber: 'daybreak_blue' } });
    expect(fast.service_tier).toBe('priority');
    expect(fast.access_programs).toEqual({ cyber: 'daybreak_blue' });
    expect((await server.client.responses.create({ model: 'm', input: 'hi' })).access_programs).toBeNull();
    const foreground = await rejectionOf(server.client.responses.create({ model: 'm', input: 'hi', background_options: { completion_window: '2h' } }));
    expectSdkError(foreground, { code: 'invalid_value', param: 'background_options.completion_window', mentions: ["'2h' needs background: true"] });
    const priority = await rejectionOf(
      server.client.responses.create({ model: 'm', input: 'hi', background: true, service_tier: 'priority', background_options: { completion_window: '8h' } }),
    );
    expectSdkError(priority, { code: 'invalid_value', param: 'background_options.completion_window', mentions: ['standard tier'] });
  });

  it.each(requests)('accepts %s', (_, request) => {
    const parsed = CreateResponseRequest.safeParse(request);
    expect(parsed.success ? 'ok' : parsed.error.issues).toBe('ok');
  });
});

describe('input items as GET /v1/responses/{id}/input_items lists them', () => {
  it('fills what a short form leaves out: every listed item has the fields the SDK type of its kind requires', async () => {
    // Each item in the shortest form the SDK's input types allow (no ids, statuses or nulls).
    const input: ResponseInputItem[] = [
      { role: 'user', content: 'hi' },
      { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 's' }] },
      { type: 'function_call', call_id: 'call_f', name: 'f', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_f', output: 'ok' },
      { type: 'custom_tool_call', call_id: 'call_c', name: 'c', input: 'raw' },
      { type: 'custom_tool_call_output', call_id: 'call_c', output: 'ok' },
      { type: 'shell_call', call_id: 'call_s', action: { commands: ['ls'] } },
      { type: 'shell_call_output', call_id: 'call_s', output: [{ stdout: 'a', stderr: '', outcome: { type: 'exit', exit_code: 0 } }] },
      { type: 'apply_patch_call', call_id: 'call_a', operation: { type: 'delete_file', path: 'a.txt' }, status: 'completed' },
      { type: 'apply_patch_call_output', call_id: 'call_a', status: 'completed' },
      { type: 'mcp_list_tools', id: 'mcpl_1', server_label: 'docs', tools: [{ name: 'a', input_schema: { type: 'object' } }] },
      { type: 'mcp_approval_request', id: 'mcpr_1', server_label: 'docs', name: 'a', arguments: '{}' },
      { type: 'mcp_approval_response', approval_request_id: 'mcpr_1', approve: false },
      { type: 'tool_search_call', call_id: 'call_t', arguments: { query: 'x' }, execution: 'client' },
      { type: 'tool_search_output', call_id: 'call_t', execution: 'client', tools: [] },
      { type: 'program', id: 'prog_1', call_id: 'call_p', code: 'text(1)', fingerprint: 'f' },
      { type: 'program_output', id: 'po_1', call_id: 'call_p', result: '1', status: 'completed' },
      { type: 'configuration_update', text: { format: { type: 'text' } } },
      { role: 'user', content: 'and now?' },
    ];
    const response = await server.client.responses.create({ model: 'm', store: true, input });
    const listed = [];
    for await (const item of server.client.responses.inputItems.list(response.id, { order: 'asc' })) listed.push(item);
    expect(listed.map((item) => item.type)).toEqual(input.map((item) => item.type ?? 'message'));
    for (const item of listed) {
      const required = Object.keys(LISTED_ITEM_REQUIRED_KEYS[item.type]);
      expect(
        required.filter((key) => !(key in item)),
        JSON.stringify(item),
      ).toEqual([]);
    }
    expect(listed.find((item) => item.type === 'shell_call')).toMatchObject({
      status: 'completed',
      environment: null,
      action: { commands: ['ls'], timeout_ms: null, max_output_length: null },
    });
    expect(listed.find((item) => item.type === 'tool_search_call')).toMatchObject({ status: 'completed', execution: 'client', call_id: 'call_t' });
    expect(listed.find((item) => item.type === 'function_call')).toMatchObject({ id: expect.stringMatching(/^fc_/), status: 'completed' });
  });
});
