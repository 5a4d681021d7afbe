import { Agent, hostedMcpTool, programmaticToolCallingTool, type Runner, RunState } from '@openai/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { note, runnerFor } from './support/agents.ts';
import { startStreamableMcpServer, type McpTestServer } from './support/mcp-servers.ts';
import { inlineProgram } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// The OpenAI Agents SDK (@openai/agents, pinned) driven unchanged against a listening emulator:
// its own `openai` client (the version it depends on), its run loop, its approvals and RunState.
// A real MCP server (built with the MCP SDK) is what the emulator calls for `hostedMcpTool`.

let server: RunningServer;
let mcp: McpTestServer;
let runner: Runner;
/** The body of every POST /v1/responses the Agents SDK sent, in order. */
const sent: { input: Record<string, unknown>[] }[] = [];
const realFetch = globalThis.fetch;

beforeAll(async () => {
  [server, mcp] = await Promise.all([startServer({ config: { mcpTimeoutMs: 5_000 } }), startStreamableMcpServer()]);
  // The SDK's client is made on first use and fetches through the global fetch: record what it sends.
  const responsesUrl = `${server.baseURL}/responses`;
  globalThis.fetch = (async (url: string | URL | Request, init?: RequestInit) => {
    if (String(url) === responsesUrl && typeof init?.body === 'string') sent.push(JSON.parse(init.body) as (typeof sent)[number]);
    return realFetch(url, init);
  }) as typeof fetch;
  runner = runnerFor(server);
});
afterAll(async () => {
  globalThis.fetch = realFetch;
  await server?.close();
  await mcp?.close();
});

/**
 * The MCP server as the Agents SDK declares it. Programs must be allowed to call it; `direct`
 * too, because the SDK checks the caller of every MCP item against allowed_callers, including
 * the mcp_list_tools the emulator lists the server with, which no program makes.
 */
function calc(requireApproval: 'always' | 'never') {
  const server = { serverLabel: 'calc', serverUrl: mcp.url, allowedCallers: ['direct', 'programmatic'] } as const;
  return requireApproval === 'always' ? hostedMcpTool({ ...server, requireApproval }) : hostedMcpTool({ ...server, requireApproval });
}

function agentWith(store: boolean, tools: PtcAgent['tools']): PtcAgent {
  return new Agent<undefined, 'text'>({ name: 'ptc', model: 'ptc-emulator', modelSettings: { store }, tools: [...tools, programmaticToolCallingTool()] });
}

type PtcAgent = Agent<undefined, 'text'>;

/** A non-streaming run, from a user message or from a RunState. */
function runAgent(agent: PtcAgent, input: string | RunState<undefined, PtcAgent>) {
  return runner.run(agent, input);
}
type Result = Awaited<ReturnType<typeof runAgent>>;

/** The items of the last request the SDK sent. */
function lastInput(): Record<string, unknown>[] {
  return sent.at(-1)!.input;
}

/** Waits for the run's interruption (the approval request), decides it across a RunState round trip, and runs on. */
async function decideApproval(agent: PtcAgent, result: Result, approve: boolean): Promise<Result> {
  expect(result.interruptions).toHaveLength(1);
  const [request] = result.interruptions;
  expect(request!.rawItem).toMatchObject({
    type: 'hosted_tool_call',
    name: 'echo',
    providerData: { type: 'mcp_approval_request', server_label: 'calc' },
    caller: { type: 'program' },
  });
  const state = await RunState.fromString<undefined, PtcAgent>(agent, result.state.toString());
  const pending = state.getInterruptions()[0]!;
  if (approve) state.approve(pending);
  else state.reject(pending);
  return runAgent(agent, state);
}

/** The run's rejection: the emulator's 400 as the SDK's own openai client raised it. */
async function runError(promise: Promise<unknown>): Promise<{ status: number; code: string; param: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { status: number; code: string; param: string; message: string };
  }
  throw new Error('expected the run to fail');
}

describe.each([true, false])('hosted MCP approvals from a program (store: %s)', (store) => {
  const ECHO = 'text(await tools.calc.echo({ n: 1 }))';

  it("approved: the SDK sends mcp_approval_response with the request's caller copied, and the call runs once", async () => {
    const agent = agentWith(store, [calc('always')]);
    const before = mcp.calls.length;
    const first = await runAgent(agent, inlineProgram(ECHO));
    const callerId = (first.interruptions[0]!.rawItem as { caller: { callerId: string } }).caller.callerId;
    const done = await decideApproval(agent, first, true);
    expect(lastInput()).toContainEqual({
      type: 'mcp_approval_response',
      approval_request_id: first.interruptions[0]!.rawItem.id,
      approve: true,
      caller: { type: 'program', caller_id: callerId },
    });
    expect(done.finalOutput).toBe('{"n":1}');
    expect(mcp.calls.slice(before)).toMatchObject([{ tool: 'echo', arguments: { n: 1 } }]);
  });

  it('rejected: the program gets the denial as an Error, and the server is never called', async () => {
    const agent = agentWith(store, [calc('always')]);
    const before = mcp.calls.length;
    const done = await decideApproval(agent, await runAgent(agent, inlineProgram(ECHO)), false);
    expect(lastInput()).toContainEqual(
      expect.objectContaining({ type: 'mcp_approval_response', approve: false, caller: expect.objectContaining({ type: 'program' }) }),
    );
    expect(JSON.parse(done.finalOutput as string)).toMatchObject({
      error: { code: 'program_threw', message: expect.stringContaining('denied the call of tools.calc.echo') },
    });
    expect(mcp.calls.length).toBe(before);
  });
});

describe('an mcp_call resent without its output, as the Agents SDK resends it', () => {
  // The program goes on after its MCP call to a function tool the SDK runs: the next request
  // resends the mcp_call, and the program's replay needs its output.
  const ADD_THEN_NOTE = 'const sum = await tools.calc.add({ a: 2, b: 3 }); text(await tools.note({ echoed: sum }))';
  const ECHO_THEN_NOTE = 'const echoed = await tools.calc.echo({ n: 1 }); text(await tools.note({ echoed }))';

  function resentMcpCall(): { index: number; item: Record<string, unknown> } {
    const input = lastInput();
    const index = input.findIndex((item) => item.type === 'mcp_call');
    expect(index).toBeGreaterThanOrEqual(0);
    return { index, item: input[index]! };
  }

  it('store: true: the server takes the output from the response it stored', async () => {
    const before = mcp.calls.length;
    const result = await runAgent(agentWith(true, [calc('never'), note]), inlineProgram(ADD_THEN_NOTE));
    expect(resentMcpCall().item).not.toHaveProperty('output');
    expect(result.finalOutput).toBe('noted {"sum":5}');
    // Replayed from the item, not called again.
    expect(mcp.calls.length - before).toBe(1);
  });

  it("store: true, after an approval: the approved call's output comes from the store too", async () => {
    const agent = agentWith(true, [calc('always'), note]);
    const done = await decideApproval(agent, await runAgent(agent, inlineProgram(ECHO_THEN_NOTE)), true);
    expect(resentMcpCall().item).toMatchObject({ approval_request_id: expect.stringMatching(/^mcpr_/) });
    expect(resentMcpCall().item).not.toHaveProperty('output');
    expect(done.finalOutput).toBe('noted {"n":1}');
  });

  it('store: false: a 400 saying the output is missing, with param pointing at it', async () => {
    const error = await runError(runAgent(agentWith(false, [calc('never'), note]), inlineProgram(ADD_THEN_NOTE)));
    const { index, item } = resentMcpCall();
    expect(item).not.toHaveProperty('output');
    expect(error).toMatchObject({ status: 400, code: 'missing_required_parameter', param: `input[${index}].output` });
    expect(error.message).toContain(`mcp_call ${item.id as string} was resent without its output`);
    expect(error.message).not.toContain('altered');
  });

  it("another conversation's stored mcp_call never fills the output: an id of another program's call is refused as missing its output", async () => {
    // The victim's mcp_call, stored (store: true).
    await runAgent(agentWith(true, [calc('never'), note]), inlineProgram(ADD_THEN_NOTE));
    const victimId = resentMcpCall().item.id as string;
    // The attacker's own paused program (store: false), its mcp_call resent with the victim's id.
    await runError(runAgent(agentWith(false, [calc('never'), note]), inlineProgram(ADD_THEN_NOTE)));
    const body = structuredClone(sent.at(-1)!) as { input: Record<string, unknown>[] };
    const index = body.input.findIndex((item) => item.type === 'mcp_call');
    expect(body.input[index]!.id).not.toBe(victimId);
    body.input[index] = { ...body.input[index], id: victimId };
    const response = await realFetch(`${server.baseURL}/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    // Filled from the victim's response, it would be refused as altered (and its output counted in usage).
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: unknown }).error).toMatchObject({ code: 'missing_required_parameter', param: `input[${index}].output` });
  });

  it('store: false, after an approval: the same 400 for the approved call', async () => {
    const agent = agentWith(false, [calc('always'), note]);
    const first = await runAgent(agent, inlineProgram(ECHO_THEN_NOTE));
    const error = await runError(decideApproval(agent, first, true));
    const { index } = resentMcpCall();
    expect(error).toMatchObject({ status: 400, code: 'missing_required_parameter', param: `input[${index}].output` });
  });
});

describe('conversationId: the run continues a conversation of the Conversations API', () => {
  // Two sequential calls: each pause is a new request that carries only the new output.
  const TWO_NOTES = 'const a = await tools.note({ echoed: "a" }); const b = await tools.note({ echoed: a }); text(b)';
  const sentWith = (conversationId: string) => sent.filter((body) => (body as { conversation?: unknown }).conversation === conversationId);

  it('sends only new items each turn, and the conversation holds the whole run', async () => {
    const conversation = await server.client.conversations.create({ metadata: { via: 'agents-sdk' } });
    const result = await runner.run(agentWith(true, [note]), inlineProgram(TWO_NOTES), { conversationId: conversation.id });
    expect(result.finalOutput).toBe('noted noted a');
    const requests = sentWith(conversation.id);
    expect(requests).toHaveLength(3);
    for (const body of requests) expect(body).not.toHaveProperty('previous_response_id');
    // After the first, a request carries the tool's output alone: the server has the rest.
    expect(requests.slice(1).map((body) => body.input.map((item) => item.type))).toEqual([['function_call_output'], ['function_call_output']]);
    const items = [];
    for await (const item of server.client.conversations.items.list(conversation.id, { order: 'asc' })) items.push(item.type);
    expect(items).toEqual([
      'message',
      'program',
      'function_call',
      'function_call_output',
      'function_call',
      'function_call_output',
      'program_output',
      'message',
    ]);

    // A second run in the same conversation starts from all of it.
    const next = await runner.run(agentWith(true, [note]), inlineProgram('text(await tools.note({ echoed: "again" }))'), { conversationId: conversation.id });
    expect(next.finalOutput).toBe('noted again');
  });

  it('an unknown conversation is refused, as the hosted API refuses it', async () => {
    const error = await runError(runner.run(agentWith(true, [note]), 'hello', { conversationId: 'conv_never_created' }));
    expect(error).toMatchObject({ status: 404, code: 'conversation_not_found', param: 'conversation' });
  });
});
