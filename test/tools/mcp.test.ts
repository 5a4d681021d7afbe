import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentLoop } from '../support/agent-loop.ts';
import { expectSdkError, rejectionOf } from '../support/api-errors.ts';
import { startSseMcpServer, startStreamableMcpServer, startUnresponsiveHttpServer, unusedLoopbackUrl, type McpTestServer } from '../support/mcp-servers.ts';
import { inlineProgram, programOutputOf } from '../support/programs.ts';
import { startServer, type RunningServer } from '../support/server.ts';

// A real MCP server (built with the MCP SDK) on loopback: the emulator connects to it as a
// client, lists its tools and calls them itself when a program does.
let mcp: McpTestServer;
let sse: McpTestServer;
let server: RunningServer;
beforeAll(async () => {
  [mcp, sse] = await Promise.all([startStreamableMcpServer(), startSseMcpServer()]);
  server = await startServer({ config: { mcpTimeoutMs: 1_500 } });
});
afterAll(async () => {
  await server.close();
  await Promise.all([mcp.close(), sse.close()]);
});

function mcpTool(url: string, extra: Partial<OpenAI.Responses.Tool.Mcp> = {}): OpenAI.Responses.Tool[] {
  return [
    { type: 'mcp', server_label: 'calc', server_url: url, require_approval: 'never', allowed_callers: ['programmatic'], ...extra },
    { type: 'programmatic_tool_calling' },
  ];
}

const ADD = 'const sum = JSON.parse(await tools.calc.add({ a: 2, b: 3 })); text(JSON.stringify(sum))';

describe('an MCP server used by a program', () => {
  for (const [label, options] of [
    ['store: false, plain create', { store: false }],
    ['previous_response_id, the stream helper', { store: true, stream: true }],
  ] as const) {
    it(`is listed, called by the emulator and answered in the same response (${label})`, async () => {
      const before = mcp.calls.length;
      const { text, responses } = await agentLoop(server.client, { model: 'm', input: inlineProgram(ADD), tools: mcpTool(mcp.url) }, {}, options);
      expect(responses).toHaveLength(1);
      expect(JSON.parse(text)).toEqual({ sum: 5 });
      const output = responses[0]!.output;
      expect(output.map((item) => item.type)).toEqual(['mcp_list_tools', 'program', 'mcp_call', 'program_output', 'message']);
      const listing = output[0] as OpenAI.Responses.ResponseOutputItem.McpListTools;
      expect(listing).toMatchObject({ server_label: 'calc', error: null });
      expect(listing.tools.map((tool) => tool.name)).toEqual(['echo', 'add', 'fail', 'explode', 'slow', 'whoami', 'mixed']);
      expect(listing.tools[1]).toEqual({ name: 'add', description: 'Adds a and b.', input_schema: expect.objectContaining({ required: ['a', 'b'] }) });
      const program = output[1] as OpenAI.Responses.ResponseOutputItem.Program;
      expect(output[2]).toEqual({
        type: 'mcp_call',
        id: expect.stringMatching(/^mcp_/),
        server_label: 'calc',
        name: 'add',
        arguments: '{"a":2,"b":3}',
        output: '{"sum":5}',
        error: null,
        status: 'completed',
        approval_request_id: null,
        caller: { type: 'program', caller_id: program.call_id },
      });
      expect(mcp.calls.slice(before)).toMatchObject([{ tool: 'add', arguments: { a: 2, b: 3 } }]);
    });
  }

  it('lists a server once per conversation: later turns use the listing in it', async () => {
    const before = mcp.listRequests;
    const first = await server.client.responses.create({ model: 'm', input: inlineProgram(ADD), tools: mcpTool(mcp.url) });
    const second = await server.client.responses.create({
      model: 'm',
      previous_response_id: first.id,
      input: inlineProgram(ADD.replace('a: 2', 'a: 40')),
      tools: mcpTool(mcp.url),
    });
    expect(second.output.map((item) => item.type)).toEqual(['program', 'mcp_call', 'program_output', 'message']);
    expect(JSON.parse(second.output_text)).toEqual({ sum: 43 });
    expect(mcp.listRequests - before).toBe(1);
  });

  it('works the same with a server that still speaks the legacy HTTP+SSE transport', async () => {
    const { text } = await agentLoop(server.client, { model: 'm', input: inlineProgram(ADD), tools: mcpTool(sse.url) }, {});
    expect(JSON.parse(text)).toEqual({ sum: 5 });
  });

  it('shows a program only the tools allowed_tools lets through, under the server label', async () => {
    const probe = 'text(JSON.stringify(Object.keys(tools.calc)))';
    const { text } = await agentLoop(
      server.client,
      { model: 'm', input: inlineProgram(probe), tools: mcpTool(mcp.url, { allowed_tools: ['add', 'echo'] }) },
      {},
    );
    expect(JSON.parse(text)).toEqual(['echo', 'add']);
    // A filter picks the tools that meet all it states; one that states nothing picks all.
    for (const [allowed_tools, expected] of [
      [{ read_only: true }, ['echo']],
      [{ tool_names: ['echo', 'add'], read_only: false }, ['add']],
      [{}, ['echo', 'add', 'fail', 'explode', 'slow', 'whoami', 'mixed']],
    ] as [OpenAI.Responses.Tool.Mcp.McpToolFilter, string[]][]) {
      const filtered = await agentLoop(server.client, { model: 'm', input: inlineProgram(probe), tools: mcpTool(mcp.url, { allowed_tools }) }, {});
      expect(JSON.parse(filtered.text), JSON.stringify(allowed_tools)).toEqual(expected);
    }
  });

  it('hands the program an Error for a tool error, a JSON-RPC error and a call that outlives PTC_MCP_TIMEOUT_MS', async () => {
    const code = `const seen = [];
for (const call of [() => tools.calc.fail(), () => tools.calc.explode(), () => tools.calc.slow({ ms: 5000 }), () => tools.calc.echo({ still: 'serving' })]) {
  try { seen.push(await call()) } catch (e) { seen.push(e.name + ': ' + e.message) }
}
text(seen.join('\\n'))`;
    const { text, responses } = await agentLoop(server.client, { model: 'm', input: inlineProgram(code), tools: mcpTool(mcp.url) }, {});
    expect(text.split('\n')).toEqual([
      'Error: the fail tool always fails',
      "Error: MCP server 'calc': tool 'explode' failed: MCP error -32603: kaboom",
      "Error: MCP server 'calc': tool 'slow' failed: no answer within 1500 ms",
      '{"still":"serving"}',
    ]);
    expect(responses[0]!.output.filter((item) => item.type === 'mcp_call').map((item) => (item as { status: string }).status)).toEqual([
      'failed',
      'failed',
      'failed',
      'completed',
    ]);
  });

  it('reports a server that is down or never answers in mcp_list_tools, and gives programs none of its tools', async () => {
    const hanging = await startUnresponsiveHttpServer();
    try {
      for (const url of [await unusedLoopbackUrl(), hanging.url]) {
        const response = await server.client.responses.create({ model: 'm', input: inlineProgram('text(typeof tools.calc)'), tools: mcpTool(url) });
        expect(response.output[0]).toMatchObject({
          type: 'mcp_list_tools',
          server_label: 'calc',
          tools: [],
          error: expect.stringContaining("MCP server 'calc': listing tools failed"),
        });
        expect(programOutputOf(response)).toMatchObject({ status: 'completed', result: 'undefined' });
      }
    } finally {
      await hanging.close();
    }
  });

  it('sends the configured authorization and headers to the server', async () => {
    const guarded = await startStreamableMcpServer({ requireAuth: 'Bearer s3cret' });
    try {
      const code = 'text(await tools.calc.whoami())';
      const denied = await server.client.responses.create({ model: 'm', input: inlineProgram(code), tools: mcpTool(guarded.url) });
      expect(denied.output[0]).toMatchObject({ type: 'mcp_list_tools', error: expect.stringContaining('HTTP 401') });
      const { text, responses } = await agentLoop(
        server.client,
        { model: 'm', input: inlineProgram(code), tools: mcpTool(guarded.url, { authorization: 's3cret', headers: { 'x-tenant': 'acme' } }) },
        {},
        { store: true },
      );
      expect(text).toBe('Bearer s3cret');
      expect(guarded.calls.at(-1)?.headers['x-tenant']).toBe('acme');
      // Neither the response nor what is stored of it carries them.
      const stored = await server.client.responses.retrieve(responses[0]!.id);
      for (const response of [responses[0]!, stored]) {
        expect(response.tools[0]).toEqual({
          type: 'mcp',
          server_label: 'calc',
          server_url: guarded.url,
          require_approval: 'never',
          allowed_callers: ['programmatic'],
        });
      }
    } finally {
      await guarded.close();
    }
  });
});

describe('max_tool_calls', () => {
  it('an MCP call past it is an mcp_call that failed, and never reaches the server', async () => {
    const code = `const first = await tools.calc.add({ a: 1, b: 1 }); let error; try { await tools.calc.add({ a: 2, b: 2 }) } catch (e) { error = e.message } text(JSON.stringify({ first: JSON.parse(first), error }))`;
    const before = mcp.calls.length;
    const response = await server.client.responses.create({ model: 'm', store: false, input: inlineProgram(code), tools: mcpTool(mcp.url), max_tool_calls: 1 });
    const result = JSON.parse(programOutputOf(response)!.result) as { first: unknown; error: string };
    expect(result.error).toBe('max_tool_calls was reached in this response: tools.calc.add was not called');
    expect(result.first).toBeDefined();
    expect(mcp.calls.length - before).toBe(1);
    const calls = response.output.filter((item) => item.type === 'mcp_call');
    expect(calls.map((call) => call.status)).toEqual(['completed', 'failed']);
    expect(calls[1]).toMatchObject({ name: 'add', server_label: 'calc', error: { message: result.error } });
  });
});

describe('require_approval', () => {
  const ECHO_THEN_ADD = `const echoed = await tools.calc.echo({ n: 1 });
let added; try { added = await tools.calc.add({ a: 1, b: 1 }) } catch (e) { added = e.message }
text(JSON.stringify({ echoed, added }))`;

  it('pauses the program on mcp_approval_request; an approval runs the call, a denial is an Error in the program', async () => {
    for (const [approve, added] of [
      [true, '{"sum":2}'],
      [{ approve: false, reason: 'not today' }, 'The user denied the call of tools.calc.add: not today'],
    ] as const) {
      const before = mcp.calls.length;
      const requests: OpenAI.Responses.ResponseOutputItem.McpApprovalRequest[] = [];
      const { text, responses } = await agentLoop(
        server.client,
        { model: 'm', input: inlineProgram(ECHO_THEN_ADD), tools: mcpTool(mcp.url, { require_approval: 'always' }) },
        {
          approve: (request) => (requests.push(request), request.name === 'echo' || approve),
        },
      );
      expect(JSON.parse(text)).toEqual({ echoed: '{"n":1}', added });
      const program = responses[0]!.output.find((item) => item.type === 'program')!;
      expect(requests).toEqual([
        {
          type: 'mcp_approval_request',
          id: expect.stringMatching(/^mcpr_/),
          server_label: 'calc',
          name: 'echo',
          arguments: '{"n":1}',
          caller: { type: 'program', caller_id: program.call_id },
        },
        {
          type: 'mcp_approval_request',
          id: expect.stringMatching(/^mcpr_/),
          server_label: 'calc',
          name: 'add',
          arguments: '{"a":1,"b":1}',
          caller: { type: 'program', caller_id: program.call_id },
        },
      ]);
      // The approved call of the last turn is reported, tied to its request.
      expect(responses[1]!.output[0]).toMatchObject({
        type: 'mcp_call',
        name: 'echo',
        approval_request_id: requests[0]!.id,
        output: '{"n":1}',
        status: 'completed',
      });
      expect(mcp.calls.slice(before).map((call) => call.tool)).toEqual(approve === true ? ['echo', 'add'] : ['echo']);
    }
  });

  it('asks only for the tools its filters name: never for read-only tools here', async () => {
    const requests: string[] = [];
    const { text } = await agentLoop(
      server.client,
      { model: 'm', input: inlineProgram(ECHO_THEN_ADD), tools: mcpTool(mcp.url, { require_approval: { never: { read_only: true } } }) },
      { approve: (request) => (requests.push(request.name), true) },
    );
    expect(requests).toEqual(['add']);
    expect(JSON.parse(text)).toEqual({ echoed: '{"n":1}', added: '{"sum":2}' });
  });

  it('asks only for the tools an always-only filter names; with never too, for every tool never picks not', async () => {
    for (const [require_approval, expected] of [
      [{ always: { tool_names: ['add'] } }, ['add']],
      [{ always: { tool_names: ['add'] }, never: { tool_names: ['add', 'echo'] } }, ['add']],
      [{ never: { tool_names: ['add'] } }, ['echo']],
    ] as [OpenAI.Responses.Tool.Mcp.McpToolApprovalFilter, string[]][]) {
      const requests: string[] = [];
      const { text } = await agentLoop(
        server.client,
        { model: 'm', input: inlineProgram(ECHO_THEN_ADD), tools: mcpTool(mcp.url, { require_approval }) },
        { approve: (request) => (requests.push(request.name), true) },
      );
      expect(requests, JSON.stringify(require_approval)).toEqual(expected);
      expect(JSON.parse(text)).toEqual({ echoed: '{"n":1}', added: '{"sum":2}' });
    }
  });

  it('rejects a resume that leaves an approval request unanswered', async () => {
    const tools = mcpTool(mcp.url, { require_approval: 'always' });
    const first = await server.client.responses.create({ model: 'm', store: false, input: inlineProgram(ECHO_THEN_ADD), tools });
    const input: ResponseInputItem[] = [{ role: 'user', content: inlineProgram(ECHO_THEN_ADD) }, ...toResponseInputItems(first.output)];
    expectSdkError(await rejectionOf(server.client.responses.create({ model: 'm', store: false, input, tools })), {
      code: 'tool_output_missing',
      param: 'input[3]',
      mentions: ['No mcp_approval_response found for mcp_approval_request', first.output[2]!.id!],
    });
  });
  it('checks an mcp_approval_response like any output: it must answer a request that came before it', async () => {
    const tools = mcpTool(mcp.url, { require_approval: 'always' });
    const first = await server.client.responses.create({ model: 'm', store: false, input: inlineProgram(ECHO_THEN_ADD), tools });
    const request = first.output[2] as OpenAI.Responses.ResponseOutputItem.McpApprovalRequest;
    const user: ResponseInputItem = { role: 'user', content: inlineProgram(ECHO_THEN_ADD) };
    const answer = (id: string): ResponseInputItem => ({ type: 'mcp_approval_response', approval_request_id: id, approve: true });
    const send = (input: ResponseInputItem[], headers: Record<string, string> = {}) =>
      server.client.responses.create({ model: 'm', store: false, input, tools }, { headers });

    expectSdkError(await rejectionOf(send([user, ...toResponseInputItems(first.output), answer(request.id), answer('mcpr_nope')])), {
      code: 'tool_output_unknown_call',
      param: 'input[5].approval_request_id',
      mentions: ['mcpr_nope', 'no mcp_approval_request'],
    });
    expectSdkError(await rejectionOf(send([user, answer(request.id), ...toResponseInputItems(first.output)])), {
      code: 'items_out_of_order',
      param: 'input[1]',
      mentions: [request.id, 'before its mcp_approval_request'],
    });
    expectSdkError(await rejectionOf(send([user, ...toResponseInputItems(first.output), answer(request.id), answer(request.id)])), {
      code: 'tool_output_duplicate',
      param: 'input[5]',
      mentions: [request.id],
    });
    // Lenient checks let the stray answer and the second answer through; the first resumes the program.
    const lenient = await send([user, ...toResponseInputItems(first.output), answer(request.id), answer('mcpr_nope'), answer(request.id)], {
      'x-ptc-client-checks': 'lenient',
    });
    expect(lenient.output.map((item) => item.type)).toEqual(['mcp_call', 'mcp_approval_request']);
  });
});

describe('replaying a program that called MCP tools', () => {
  it('uses the mcp_call items it made, never calling the server again', async () => {
    const cold = await startServer({ config: { maxPausedPrograms: 0, workers: 1 } });
    try {
      const code = `const a = JSON.parse(await tools.calc.add({ a: 1, b: 2 }));
const approved = await tools.calc.echo({ twice: a.sum });
const local = await tools.note({ sum: a.sum });
text(JSON.stringify({ a, approved, local }))`;
      const tools: OpenAI.Responses.Tool[] = [
        ...mcpTool(mcp.url, { require_approval: { never: { tool_names: ['add'] } } }).slice(0, 1),
        { type: 'function', name: 'note', parameters: null, strict: false, allowed_callers: ['programmatic'] },
        { type: 'programmatic_tool_calling' },
      ];
      const before = mcp.calls.length;
      const { text, responses } = await agentLoop(
        cold.client,
        { model: 'm', input: inlineProgram(code), tools },
        { approve: () => true, functions: { note: (args) => `noted ${JSON.stringify(args)}` } },
      );
      expect(JSON.parse(text)).toEqual({ a: { sum: 3 }, approved: '{"twice":3}', local: 'noted {"sum":3}' });
      expect(responses).toHaveLength(3);
      // add once (first turn), echo once (after approval): every replay took their answers from the items.
      expect(mcp.calls.slice(before).map((call) => call.tool)).toEqual(['add', 'echo']);
    } finally {
      await cold.close();
    }
  });
});

describe('an mcp_call resent by a store: false client', () => {
  // The MCP server's URL is known once beforeAll has started it.
  const tools = (): OpenAI.Responses.Tool[] => [
    ...mcpTool(mcp.url).slice(0, 1),
    { type: 'function', name: 'note', parameters: null, strict: false, allowed_callers: ['programmatic'] },
    { type: 'programmatic_tool_calling' },
  ];
  const send = (input: string | ResponseInputItem[]) => server.client.responses.create({ model: 'm', store: false, input, tools: tools() });

  /** The program's first turn (an MCP call, then a pause on `note`), and the loop's next input with `note` answered. */
  async function pausedOnNote(code: string): Promise<{ first: OpenAI.Responses.Response; input: ResponseInputItem[]; index: number }> {
    const first = await send(inlineProgram(code));
    const call = first.output.find((item) => item.type === 'function_call')!;
    const input: ResponseInputItem[] = [
      { role: 'user', content: inlineProgram(code) },
      ...toResponseInputItems(first.output),
      { type: 'function_call_output', call_id: call.call_id, output: 'noted', caller: call.caller ?? null },
    ];
    return { first, input, index: input.findIndex((item) => item.type === 'mcp_call') };
  }

  /** The input with its mcp_call changed. */
  const forged = (input: ResponseInputItem[], index: number, change: Record<string, unknown>): ResponseInputItem[] =>
    input.map((item, at) => (at === index ? ({ ...item, ...change } as ResponseInputItem) : item));

  it('must carry the answer the emulator gave: its id seals it', async () => {
    const { input, index } = await pausedOnNote('const a = JSON.parse(await tools.calc.add({ a: 1, b: 2 })); text(await tools.note({ sum: a.sum }))');
    expectSdkError(await rejectionOf(send(forged(input, index, { output: '{"sum":4}' }))), {
      code: 'program_item_altered',
      param: `input[${index}]`,
      mentions: ['answer'],
    });
    expect((await send(input)).output_text).toBe('noted');
  });

  it('must carry its structured error unchanged: a changed code is altered too, though the message is the same', async () => {
    const { first, input, index } = await pausedOnNote(
      'let said; try { await tools.calc.explode({}) } catch (error) { said = String(error) } text(await tools.note({ said }))',
    );
    const failed = first.output.find((item) => item.type === 'mcp_call')!;
    expect(failed.error).toEqual({ type: 'mcp_protocol_error', code: -32603, message: expect.stringContaining('kaboom') });
    const call = first.output.find((item) => item.type === 'function_call')!;
    expect(JSON.parse(call.arguments)).toEqual({ said: expect.stringContaining('kaboom') });
    expectSdkError(await rejectionOf(send(forged(input, index, { error: { ...(failed.error as object), code: -1 } }))), {
      code: 'program_item_altered',
      param: `input[${index}]`,
    });
    expect((await send(input)).output_text).toBe('noted');
  });
});

describe('an approved call', () => {
  const CODE = 'text(await tools.calc.echo({ n: 1 }))';
  it('runs once: its mcp_call must come back unchanged, and dropping it is refused rather than run again', async () => {
    const code = 'const echoed = await tools.calc.echo({ n: 1 }); text(await tools.note({ echoed }))';
    const withNote: OpenAI.Responses.Tool[] = [
      ...mcpTool(mcp.url, { require_approval: 'always' }).slice(0, 1),
      { type: 'function', name: 'note', parameters: null, strict: false, allowed_callers: ['programmatic'] },
      { type: 'programmatic_tool_calling' },
    ];
    const send = (input: ResponseInputItem[]) => server.client.responses.create({ model: 'm', store: false, input, tools: withNote });
    const first = await send([{ role: 'user', content: inlineProgram(code) }]);
    const request = first.output.find((item) => item.type === 'mcp_approval_request')!;
    const before = mcp.calls.length;
    const input: ResponseInputItem[] = [
      { role: 'user', content: inlineProgram(code) },
      ...toResponseInputItems(first.output),
      { type: 'mcp_approval_response', approval_request_id: request.id, approve: true },
    ];
    // The approved call runs, and the program pauses on its function call.
    const resumed = await send(input);
    expect(resumed.output.map((item) => item.type)).toEqual(['mcp_call', 'function_call']);
    const [call, note] = resumed.output as [OpenAI.Responses.ResponseOutputItem.McpCall, OpenAI.Responses.ResponseFunctionToolCall];
    const later: ResponseInputItem[] = [
      ...input,
      ...toResponseInputItems(resumed.output),
      { type: 'function_call_output', call_id: note.call_id, output: 'ok', caller: note.caller ?? null },
    ];
    const index = input.length;

    const forged = later.map((item, at) => (at === index ? { ...call, output: 'FORGED', arguments: '{"n":2}' } : item));
    expectSdkError(await rejectionOf(send(forged)), {
      code: 'program_item_altered',
      param: `input[${index}]`,
      mentions: ['is not the call the emulator made after the approval'],
    });
    const dropped = later.filter((_, at) => at !== index);
    expectSdkError(await rejectionOf(send(dropped)), {
      code: 'program_item_altered',
      param: `input[${index - 1}]`,
      mentions: ['is missing from the conversation'],
    });
    expect((await send(later)).output_text).toBe('ok');
    expect(mcp.calls.length - before).toBe(1);
  });

  it('runs when the client puts each answer right after what it answers, in a batch with a function call', async () => {
    const code = 'const [a, b] = await Promise.all([tools.calc.echo({ n: 1 }), tools.note({})]); text(a + "|" + b)';
    const tools: OpenAI.Responses.Tool[] = [
      ...mcpTool(mcp.url, { require_approval: 'always' }).slice(0, 1),
      { type: 'function', name: 'note', parameters: null, strict: false, allowed_callers: ['programmatic'] },
      { type: 'programmatic_tool_calling' },
    ];
    const first = await server.client.responses.create({ model: 'm', store: false, input: inlineProgram(code), tools });
    const interleaved: ResponseInputItem[] = [{ role: 'user', content: inlineProgram(code) }];
    for (const item of toResponseInputItems(first.output)) {
      interleaved.push(item);
      if (item.type === 'mcp_approval_request') interleaved.push({ type: 'mcp_approval_response', approval_request_id: item.id, approve: true });
      if (item.type === 'function_call')
        interleaved.push({ type: 'function_call_output', call_id: item.call_id, output: 'noted', caller: item.caller ?? null });
    }
    const before = mcp.calls.length;
    const resumed = await server.client.responses.create({ model: 'm', store: false, input: interleaved, tools });
    expect(resumed.output_text).toBe('{"n":1}|noted');
    expect(mcp.calls.length - before).toBe(1);
  });

  it('waits until every open program of the conversation checks out: an altered item of another program fails the request having run nothing', async () => {
    const tools: OpenAI.Responses.Tool[] = [
      ...mcpTool(mcp.url, { require_approval: 'always' }).slice(0, 1),
      { type: 'function', name: 'note', parameters: null, strict: false, allowed_callers: ['programmatic'] },
      { type: 'programmatic_tool_calling' },
    ];
    const [codeA, codeB] = ['text(await tools.calc.echo({ n: 1 }))', 'text(await tools.note({ b: 1 }))'];
    // Two conversations' items in one: program A waits on an approval, program B on a function call.
    const a = await server.client.responses.create({ model: 'm', store: false, input: inlineProgram(codeA), tools });
    const b = await server.client.responses.create({ model: 'm', store: false, input: inlineProgram(codeB), tools });
    const request = a.output.find((item) => item.type === 'mcp_approval_request')!;
    const call = b.output.find((item) => item.type === 'function_call')!;
    const input: ResponseInputItem[] = [
      { role: 'user', content: inlineProgram(codeA) },
      ...toResponseInputItems(a.output),
      { role: 'user', content: inlineProgram(codeB) },
      ...toResponseInputItems(b.output).filter((item) => item.type !== 'mcp_list_tools'),
      { type: 'function_call_output', call_id: call.call_id, output: 'ok', caller: call.caller ?? null },
      { type: 'mcp_approval_response', approval_request_id: request.id, approve: true },
    ];
    const before = mcp.calls.length;
    const altered = input.map((item) => (item.type === 'function_call' ? { ...item, arguments: '{"b":2}' } : item));
    expectSdkError(await rejectionOf(server.client.responses.create({ model: 'm', store: false, input: altered, tools })), { code: 'program_item_altered' });
    expect(mcp.calls.length - before).toBe(0);
    const resumed = await server.client.responses.create({ model: 'm', store: false, input, tools });
    expect(resumed.output.map((item) => item.type)).toEqual(['mcp_call', 'program_output', 'program_output', 'message']);
    expect(mcp.calls.length - before).toBe(1);
  });

  it('runs with the other calls approved in the same request, at once', async () => {
    let release!: () => void;
    const held = await startStreamableMcpServer({ holdCalls: new Promise<void>((resolve) => (release = resolve)) });
    try {
      const heldTools = mcpTool(held.url, { require_approval: 'always' });
      const code = 'const [a, b] = await Promise.all([tools.calc.echo({ a: 1 }), tools.calc.echo({ b: 2 })]); text(a + b)';
      const first = await server.client.responses.create({ model: 'm', store: false, input: inlineProgram(code), tools: heldTools });
      const requests = first.output.filter((item) => item.type === 'mcp_approval_request');
      expect(requests).toHaveLength(2);
      const resumed = server.client.responses.create({
        model: 'm',
        store: false,
        input: [
          { role: 'user', content: inlineProgram(code) },
          ...toResponseInputItems(first.output),
          ...requests.map((request): ResponseInputItem => ({ type: 'mcp_approval_response', approval_request_id: request.id, approve: true })),
        ],
        tools: heldTools,
      });
      // Both calls reach the server while neither has been answered.
      await expect.poll(() => held.calls.length).toBe(2);
      release();
      const done = await resumed;
      expect(done.output_text).toBe('{"a":1}{"b":2}');
      expect(done.output.filter((item) => item.type === 'mcp_call').map((item) => item.approval_request_id)).toEqual(requests.map((request) => request.id));
    } finally {
      release();
      await held.close();
    }
  });

  it('runs for one request only: a second request resuming the program meanwhile gets program_busy, and no call runs twice', async () => {
    let release!: () => void;
    const held = await startStreamableMcpServer({ holdCalls: new Promise<void>((resolve) => (release = resolve)) });
    try {
      const heldTools = mcpTool(held.url, { require_approval: 'always' });
      const first = await server.client.responses.create({ model: 'm', store: false, input: inlineProgram(CODE), tools: heldTools });
      const request = first.output.find((item) => item.type === 'mcp_approval_request')!;
      const input: ResponseInputItem[] = [
        { role: 'user', content: inlineProgram(CODE) },
        ...toResponseInputItems(first.output),
        { type: 'mcp_approval_response', approval_request_id: request.id, approve: true },
      ];
      const winner = server.client.responses.create({ model: 'm', store: false, input, tools: heldTools });
      // The first resume is inside the approved call once the server has recorded it.
      await expect.poll(() => held.calls.length).toBe(1);
      expectSdkError(await rejectionOf(server.client.responses.create({ model: 'm', store: false, input, tools: heldTools })), { code: 'program_busy' });
      release();
      expect((await winner).output_text).toBe('{"n":1}');
      expect(held.calls).toHaveLength(1);
    } finally {
      release();
      await held.close();
    }
  });
});

describe('a cancelled background response', () => {
  it('abandons its running MCP call and makes no more', async () => {
    let release!: () => void;
    const held = await startStreamableMcpServer({ holdCalls: new Promise<void>((resolve) => (release = resolve)) });
    try {
      const code = 'for (let i = 0; i < 5; i++) await tools.calc.echo({ i }); text("all done")';
      const queued = await server.client.responses.create({ model: 'm', background: true, input: inlineProgram(code), tools: mcpTool(held.url) });
      await expect.poll(() => held.calls.length).toBe(1);
      const cancelled = await server.client.responses.cancel(queued.id);
      expect(cancelled.status).toBe('cancelled');
      release();
      // Another request to the same server goes through, and only it: the cancelled program called nothing more.
      const { text } = await agentLoop(
        server.client,
        { model: 'm', input: inlineProgram('text(await tools.calc.echo({ after: true }))'), tools: mcpTool(held.url) },
        {},
      );
      expect(text).toBe('{"after":true}');
      expect(held.calls.map((call) => call.arguments)).toEqual([{ i: 0 }, { after: true }]);
      expect((await server.client.responses.retrieve(queued.id)).status).toBe('cancelled');
    } finally {
      release();
      await held.close();
    }
  });
});

describe('caller on the MCP items a program made', () => {
  // The emulator puts `caller` on mcp_call and mcp_approval_request (an extension); clients copy
  // it, onto the answer too. Copied, it must be the emitted one: each sealed id says which program made the call.
  const ECHO_THEN_NOTE = 'const echoed = await tools.calc.echo({ n: 1 }); text(await tools.note({ echoed }))';
  const withNote = (require_approval: 'always' | 'never'): OpenAI.Responses.Tool[] => [
    ...mcpTool(mcp.url, { require_approval }).slice(0, 1),
    { type: 'function', name: 'note', parameters: null, strict: false, allowed_callers: ['programmatic'] },
    { type: 'programmatic_tool_calling' },
  ];
  const user: ResponseInputItem = { role: 'user', content: inlineProgram(ECHO_THEN_NOTE) };
  const callerOf = (item: object) => (item as { caller?: unknown }).caller;
  const programOf = (item: object) => (item as { caller: { caller_id: string } }).caller.caller_id;

  it("an mcp_approval_response may carry its request's caller; another caller is a 400 naming it", async () => {
    const tools = withNote('always');
    const send = (input: ResponseInputItem[]) => server.client.responses.create({ model: 'm', store: false, input, tools });
    const first = await send([user]);
    const request = first.output.find((item) => item.type === 'mcp_approval_request')!;
    const answer = (caller: unknown) => ({ type: 'mcp_approval_response', approval_request_id: request.id, approve: true, caller }) as ResponseInputItem;
    const input = [user, ...toResponseInputItems(first.output)];
    expectSdkError(await rejectionOf(send([...input, answer({ type: 'program', caller_id: 'call_someone_else' })])), {
      code: 'caller_mismatch',
      param: `input[${input.length}].caller`,
      mentions: [request.id, 'call_someone_else', programOf(request)],
    });
    expectSdkError(await rejectionOf(send([...input, answer({ type: 'direct' })])), { code: 'caller_mismatch', param: `input[${input.length}].caller` });
    const resumed = await send([...input, answer(callerOf(request))]);
    expect(resumed.output.map((item) => item.type)).toEqual(['mcp_call', 'function_call']);
  });

  it('a resent mcp_call without its caller, or with another, is a 400 naming it, not a call made again', async () => {
    const tools = withNote('never');
    const send = (input: ResponseInputItem[]) => server.client.responses.create({ model: 'm', store: false, input, tools });
    const first = await send([user]);
    const noteCall = first.output.find((item) => item.type === 'function_call')!;
    const index = 1 + first.output.findIndex((item) => item.type === 'mcp_call');
    const input = [
      user,
      ...toResponseInputItems(first.output),
      { type: 'function_call_output', call_id: noteCall.call_id, output: 'ok', caller: noteCall.caller ?? null } as ResponseInputItem,
    ];
    const recaller = (caller: unknown) => input.map((item, at) => (at === index ? ({ ...item, caller } as ResponseInputItem) : item));
    const before = mcp.calls.length;
    expectSdkError(await rejectionOf(send(recaller(undefined))), {
      code: 'caller_missing',
      param: `input[${index}].caller`,
      mentions: ['no caller', programOf(noteCall)],
    });
    expectSdkError(await rejectionOf(send(recaller({ type: 'direct' }))), {
      code: 'caller_mismatch',
      param: `input[${index}].caller`,
      mentions: ['{type: "direct"}'],
    });
    expectSdkError(await rejectionOf(send(recaller({ type: 'program', caller_id: 'call_nobody' }))), {
      code: 'program_item_missing',
      param: `input[${index}].caller.caller_id`,
    });
    // Another program of the conversation: the mcp_call is still known for the one that made it.
    const other = await send([user]);
    const otherNote = other.output.find((item) => item.type === 'function_call')!;
    // Its program item comes first, so that the claimed caller is one the conversation has.
    const otherItems = [
      ...toResponseInputItems(other.output),
      { type: 'function_call_output', call_id: otherNote.call_id, output: 'ok', caller: otherNote.caller ?? null } as ResponseInputItem,
    ];
    const both = [user, ...otherItems, ...recaller({ type: 'program', caller_id: programOf(otherNote) }).slice(1)];
    expectSdkError(await rejectionOf(send(both)), {
      code: 'caller_mismatch',
      param: `input[${index + otherItems.length}].caller`,
      mentions: [programOf(otherNote), `of program ${programOf(noteCall)}`],
    });
    expect((await send(input)).output_text).toBe('ok');
    // The other conversation's own call, and no other.
    expect(mcp.calls.length).toBe(before + 1);
  });

  it('a resent mcp_approval_request without its caller is a 400 naming it, not a request made again', async () => {
    const tools = mcpTool(mcp.url, { require_approval: 'always' });
    const code = 'text(await tools.calc.echo({ n: 1 }))';
    const first = await server.client.responses.create({ model: 'm', store: false, input: inlineProgram(code), tools });
    const index = 1 + first.output.findIndex((item) => item.type === 'mcp_approval_request');
    const request = first.output[index - 1] as OpenAI.Responses.ResponseOutputItem.McpApprovalRequest;
    const input: ResponseInputItem[] = [
      { role: 'user', content: inlineProgram(code) },
      ...toResponseInputItems(first.output).map((item, at) => (at === index - 1 ? ({ ...item, caller: undefined } as ResponseInputItem) : item)),
      { type: 'mcp_approval_response', approval_request_id: request.id, approve: true },
    ];
    expectSdkError(await rejectionOf(server.client.responses.create({ model: 'm', store: false, input, tools })), {
      code: 'caller_missing',
      param: `input[${index}].caller`,
      mentions: [request.id],
    });
  });
});
