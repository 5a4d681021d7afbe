import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, MaxTurnsExceededError, programmaticToolCallingTool, type Runner, RunState, tool, type Tool } from '@openai/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { note, runnerFor } from './support/agents.ts';
import { inlineProgram } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// The OpenAI Agents SDK's run loop driven unchanged against a listening emulator, for each way
// it keeps a conversation (resending everything with store true or false, previousResponseId),
// streaming, tool failures, approvals across a RunState round trip and a server restart,
// maxTurns, and structured output. (Hosted MCP and conversationId: test/agents-sdk.test.ts.)

interface SentBody {
  input: Record<string, unknown>[];
  store?: boolean;
  previous_response_id?: string;
  tool_choice?: unknown;
  tools?: Record<string, unknown>[];
  text?: { format?: { type?: string } };
}

let server: RunningServer;
let runner: Runner;
/** The body of every POST /v1/responses the Agents SDK sent, in order. */
const sent: SentBody[] = [];
const realFetch = globalThis.fetch;
const dataDir = mkdtempSync(join(tmpdir(), 'ptc-agents-run-'));
// SQLite and a fixed key, so that a restarted server resumes the programs the first one paused.
const config = { store: 'sqlite' as const, dataDir, fingerprintKey: 'agents-run-key' };

beforeAll(async () => {
  server = await startServer({ config });
  globalThis.fetch = (async (url: string | URL | Request, init?: RequestInit) => {
    if (String(url).endsWith('/v1/responses') && typeof init?.body === 'string') sent.push(JSON.parse(init.body) as SentBody);
    return realFetch(url, init);
  }) as typeof fetch;
  runner = runnerFor(server);
});
afterAll(async () => {
  globalThis.fetch = realFetch;
  await server?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

type TextAgent = Agent<undefined, 'text'>;

function agentWith(tools: Tool[], options: { store?: boolean } = {}): TextAgent {
  return new Agent<undefined, 'text'>({
    name: 'ptc',
    model: 'ptc-emulator',
    modelSettings: { store: options.store ?? true, toolChoice: 'programmatic_tool_calling' },
    tools: [...tools, programmaticToolCallingTool()],
  });
}

/** The requests sent since `mark` (an index into `sent`). */
const sentSince = (mark: number) => sent.slice(mark);

// Two sequential calls: the program pauses twice.
const TWO_NOTES = 'const a = await tools.note({ echoed: "a" }); const b = await tools.note({ echoed: a }); text(b)';

describe('sequential pauses, the tool choice forced, for each way the SDK keeps the conversation', () => {
  it.each([true, false])('resending everything, store: %s', async (store) => {
    const mark = sent.length;
    const result = await runner.run(agentWith([note], { store }), inlineProgram(TWO_NOTES));
    expect(result.finalOutput).toBe('noted noted a');
    const requests = sentSince(mark);
    expect(requests).toHaveLength(3);
    // Forced on the first request; the SDK resets the tool choice once a tool has been used
    // (its resetToolChoice default), so that a model is not made to call tools for ever.
    expect(requests.map((body) => body.tool_choice)).toEqual([{ type: 'programmatic_tool_calling' }, undefined, undefined]);
    for (const body of requests) {
      expect(body.store).toBe(store);
      expect(body).not.toHaveProperty('previous_response_id');
    }
    // The last request carries the whole run: the user's message (without `type`, as the SDK
    // writes it), the program, both calls with their outputs.
    expect(requests[2]!.input.map((item) => item.type ?? (item.role ? 'message' : undefined))).toEqual([
      'message',
      'program',
      'function_call',
      'function_call_output',
      'function_call',
      'function_call_output',
    ]);
  });

  it('previousResponseId: each request carries only the new output', async () => {
    const earlier = await runner.run(agentWith([note]), 'Hello.');
    const mark = sent.length;
    const result = await runner.run(agentWith([note]), inlineProgram(TWO_NOTES), { previousResponseId: earlier.lastResponseId! });
    expect(result.finalOutput).toBe('noted noted a');
    const requests = sentSince(mark);
    expect(requests.map((body) => body.previous_response_id)).toEqual([
      earlier.lastResponseId,
      expect.stringMatching(/^resp_/),
      expect.stringMatching(/^resp_/),
    ]);
    expect(requests.slice(1).map((body) => body.input.map((item) => item.type))).toEqual([['function_call_output'], ['function_call_output']]);
  });
});

describe("what programs see of the agent's tools", () => {
  it('a streaming run consumed to the end: its text deltas are the final output', async () => {
    const result = await runner.run(agentWith([note]), inlineProgram(TWO_NOTES), { stream: true });
    let streamed = '';
    for await (const chunk of result.toTextStream()) streamed += chunk;
    await result.completed;
    expect(result.finalOutput).toBe('noted noted a');
    expect(streamed).toBe(result.finalOutput);
  });

  it("a tool that throws: the program receives the SDK's error text as the output and goes on", async () => {
    const fails = tool({
      name: 'fails',
      description: 'Always fails.',
      parameters: z.object({}),
      allowedCallers: ['programmatic'],
      execute: async () => {
        throw new Error('disk on fire');
      },
    });
    const result = await runner.run(agentWith([fails]), inlineProgram('const out = await tools.fails({}); text("program got: " + out)'));
    expect(result.finalOutput).toBe('program got: An error occurred while running the tool. Please try again.');
  });

  it('a direct-only tool is invisible to programs, listed for the model', async () => {
    const directOnly = tool({ name: 'direct_only', description: 'Only the model calls it.', parameters: z.object({}), execute: async () => 'direct' });
    const mark = sent.length;
    const result = await runner.run(agentWith([note, directOnly]), inlineProgram('text([typeof tools.direct_only, typeof tools.note].join(","))'));
    expect(result.finalOutput).toBe('undefined,function');
    expect(sentSince(mark)[0]!.tools).toContainEqual(expect.objectContaining({ type: 'function', name: 'direct_only' }));
  });

  it('an output_schema tool: the program receives the parsed object', async () => {
    const stock = tool({
      name: 'stock',
      description: 'Units in stock.',
      parameters: z.object({ sku: z.string() }),
      outputSchema: z.object({ sku: z.string(), count: z.number() }),
      allowedCallers: ['programmatic'],
      execute: async ({ sku }) => ({ sku, count: 7 }),
    });
    const mark = sent.length;
    const result = await runner.run(agentWith([stock]), inlineProgram('const r = await tools.stock({ sku: "A1" }); text(r.sku + "=" + r.count * 2)'));
    expect(result.finalOutput).toBe('A1=14');
    expect(sentSince(mark)[0]!.tools).toContainEqual(expect.objectContaining({ name: 'stock', output_schema: expect.objectContaining({ type: 'object' }) }));
  });

  it("structured outputType: the final message is parsed by the agent's schema", async () => {
    const agent = new Agent({
      name: 'structured',
      model: 'ptc-emulator',
      outputType: z.object({ total: z.number(), skus: z.array(z.string()) }),
      tools: [note, programmaticToolCallingTool()],
    });
    const mark = sent.length;
    const result = await runner.run(agent, inlineProgram('await tools.note({ echoed: "x" }); text(JSON.stringify({ total: 3, skus: ["A1", "B2"] }))'));
    expect(result.finalOutput).toEqual({ total: 3, skus: ['A1', 'B2'] });
    expect(sentSince(mark)[0]!.text?.format?.type).toBe('json_schema');
  });
});

describe('approvals of function tools called from one program, across a RunState round trip', () => {
  const transferred: string[] = [];
  const transfer = tool({
    name: 'transfer',
    description: 'Moves stock to a warehouse.',
    parameters: z.object({ to: z.string() }),
    allowedCallers: ['programmatic'],
    needsApproval: true,
    execute: async ({ to }) => {
      transferred.push(to);
      return `moved to ${to}`;
    },
  });
  // One program, two calls in one batch: one approved, one rejected.
  const BOTH = 'const [a, b] = await Promise.all([tools.transfer({ to: "north" }), tools.transfer({ to: "south" })]); text(a + " | " + b)';

  async function decide(agent: TextAgent, interrupted: { interruptions: { rawItem: unknown }[]; state: { toString(): string } }, via: Runner): Promise<string> {
    expect(interrupted.interruptions.map((item) => JSON.parse((item.rawItem as { arguments: string }).arguments).to)).toEqual(['north', 'south']);
    const state = await RunState.fromString<undefined, TextAgent>(agent, interrupted.state.toString());
    const [north, south] = state.getInterruptions();
    state.approve(north!);
    state.reject(south!);
    const done = await via.run(agent, state);
    return done.finalOutput as string;
  }

  it.each([true, false])('approved and rejected (store: %s)', async (store) => {
    transferred.length = 0;
    const agent = agentWith([transfer], { store });
    const interrupted = await runner.run(agent, inlineProgram(BOTH));
    expect(await decide(agent, interrupted, runner)).toBe('moved to north | Tool execution was not approved.');
    expect(transferred).toEqual(['north']);
  });

  it('across a server restart: the program paused before it resumes on the restarted server', async () => {
    transferred.length = 0;
    const agent = agentWith([transfer]);
    const interrupted = await runner.run(agent, inlineProgram(BOTH));
    const serialized = interrupted.state.toString();
    await server.close();
    server = await startServer({ config });
    runner = runnerFor(server);
    const state = await RunState.fromString<undefined, TextAgent>(agent, serialized);
    const [north, south] = state.getInterruptions();
    state.approve(north!);
    state.reject(south!);
    const done = await runner.run(agent, state);
    expect(done.finalOutput).toBe('moved to north | Tool execution was not approved.');
    expect(transferred).toEqual(['north']);
  });
});

describe('maxTurns', () => {
  it("exceeded mid-program, then resumed from the error's state to the end", async () => {
    const agent = agentWith([note]);
    let exceeded: MaxTurnsExceededError | undefined;
    try {
      await runner.run(agent, inlineProgram(TWO_NOTES), { maxTurns: 1 });
    } catch (error) {
      if (!(error instanceof MaxTurnsExceededError)) throw error;
      exceeded = error;
    }
    expect(exceeded?.state).toBeDefined();
    const state = await RunState.fromString<undefined, TextAgent>(agent, exceeded!.state!.toString());
    const done = await runner.run(agent, state, { maxTurns: 10 });
    expect(done.finalOutput).toBe('noted noted a');
  });
});
