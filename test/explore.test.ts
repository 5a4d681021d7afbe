import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Tool } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExploreReport, ShapeRow } from '../server/engine/explore/explore-report.ts';
import { SHAPES } from '../server/engine/stand-ins/explorer/shapes.ts';
import { agentLoop } from './support/agent-loop.ts';
import { ROOT, runCli } from './support/cli.ts';
import { startStreamableMcpServer, type McpTestServer } from './support/mcp-servers.ts';
import { startServer, type RunningServer } from './support/server.ts';

/**
 * The explorer: `ptc-emulator explore --seeds 20 -- COMMAND` runs a client loop against every
 * shape of response the hosted runtime can return, and says, per shape, what the loop did with
 * it. A correct loop passes every shape it reaches; each deliberately broken loop fails where it
 * breaks, with the 400 it got, or as abandoned.
 */

const SKU = { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'], additionalProperties: false } as const;
const TOOLS = [
  { type: 'function', name: 'get_inventory', parameters: SKU, strict: true, allowed_callers: ['programmatic'] },
  { type: 'function', name: 'get_demand', parameters: SKU, strict: true, allowed_callers: ['programmatic'] },
  { type: 'programmatic_tool_calling' },
] as Tool[];
const HANDLERS = {
  functions: {
    get_inventory: ({ sku }: { sku: string }) => ({ sku, available_units: 42 }),
    get_demand: ({ sku }: { sku: string }) => ({ sku, requested_units: 31 }),
  },
};

/** Every shape the guide's loop can reach: it has no direct-only tool and no MCP server. */
const REACHABLE = SHAPES.map((shape) => shape.name).filter((name) => name !== 'direct_and_programmatic' && name !== 'mcp_tool_call');

async function explore(loop: string, extra: readonly string[] = []): Promise<{ code: number | null; report: ExploreReport; stderr: string }> {
  const { code, stdout, stderr } = await runCli(['explore', '--seeds', '20', '--json', ...extra, '--', process.execPath, loop], { timeoutMs: 300_000 });
  return { code, report: JSON.parse(stdout) as ExploreReport, stderr };
}

const row = (report: ExploreReport, shape: string): ShapeRow => report.shapes.find((candidate) => candidate.shape === shape)!;

describe('ptc-emulator explore --seeds 20 -- node LOOP', () => {
  it("passes every shape the examples' loop reaches (the guide's loop, store: false), and reaches all it can", async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'ptc-explore-'));
    try {
      const html = join(scratch, 'report.html');
      const { code, report } = await explore(join(ROOT, 'examples/sdk-store-false.mjs'), ['--html', html]);
      expect(report.shapes.filter((shape) => shape.verdict === 'failed')).toEqual([]);
      expect(report.shapes.filter((shape) => shape.reached > 0).map((shape) => shape.shape)).toEqual(REACHABLE);
      expect(report.passed).toBe(true);
      expect(code).toBe(0);
      for (const shape of REACHABLE) expect(row(report, shape).transports).toEqual(['no store', 'no stream']);
      // The incomplete shapes ended as their names say, by the limit set for them.
      for (const limit of SHAPES.filter((shape) => shape.name.startsWith('limit:'))) {
        expect(row(report, limit.name).conversations.map((conversation) => conversation.program_error)).toEqual([limit.name.slice('limit:'.length)]);
      }
      expect(row(report, 'error_uncaught').conversations[0]!.program_error).toBe('program_threw');
      expect(row(report, 'program_stalled').conversations[0]!.program_error).toBe('program_stalled');
      const page = readFileSync(html, 'utf8');
      expect(page).toContain('<td><a href="#limit:cpu_time_exceeded">limit:cpu_time_exceeded</a></td><td style="color:#1a7f37">passed</td>');
      expect(page).not.toContain('/inspector#');
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('names the shape and the 400 for a loop that drops caller', async () => {
    const { code, report } = await explore(join(ROOT, 'test/fixtures/broken-loops/drops-caller.mjs'));
    expect(code).toBe(1);
    const paused = row(report, 'sequential_pauses');
    expect(paused.verdict).toBe('failed');
    expect(paused.refused.map((refusal) => refusal.code)).toEqual(['caller_missing']);
    expect(paused.refused[0]!.message).toMatch(/must copy caller \{type: "program", caller_id: "call_/);
    // A program that ends before any call reaches the client passes: there is nothing to copy.
    expect(row(report, 'limit:code_too_large').verdict).toBe('passed');
  });

  it('names the shape and the 400 for a loop that drops the program items when it resends with store: false', async () => {
    const { code, report } = await explore(join(ROOT, 'test/fixtures/broken-loops/drops-program-items.mjs'));
    expect(code).toBe(1);
    const batch = row(report, 'parallel_batch');
    expect(batch.verdict).toBe('failed');
    expect(batch.refused.map((refusal) => refusal.code)).toEqual(['program_item_missing']);
    expect(batch.refused[0]!.message).toMatch(/that program item is missing from the conversation/);
  });

  it('names the shape a loop abandons when it stops at the first response without a message', async () => {
    const { code, report } = await explore(join(ROOT, 'test/fixtures/broken-loops/stops-without-message.mjs'));
    expect(code).toBe(1);
    expect(report.shapes.filter((shape) => shape.verdict === 'failed').map((shape) => [shape.shape, shape.abandoned, shape.refused])).toEqual([
      ['no_message_yet', 1, []],
    ]);
    expect(row(report, 'no_message_yet').conversations[0]).toMatchObject({ outcome: 'abandoned', program_status: 'completed' });
  });

  it('counts a run whose command failed (its exit status) against the shapes it reached', async () => {
    const { code, report } = await explore(join(ROOT, 'test/fixtures/explore/fails-on-incomplete.mjs'));
    expect(code).toBe(1);
    const failedShapes = report.shapes.filter((shape) => shape.command_failed > 0).map((shape) => shape.shape);
    expect(failedShapes).toEqual(expect.arrayContaining(['error_uncaught', 'program_stalled', 'limit:cpu_time_exceeded']));
    const failedRuns = report.runs.filter((run) => run.failed);
    expect(failedRuns.every((run) => run.ended === 'exited with 1')).toBe(true);
    expect(report.shapes.reduce((sum, shape) => sum + shape.command_failed, 0)).toBe(failedRuns.length);
    expect(row(report, 'sequential_pauses').verdict).toBe('passed');
  });

  it("hands a suite that starts its emulator with the test helper the explorer's (PTC_EXPLORE_URL)", async () => {
    const { code, stdout } = await runCli(
      ['explore', '--seeds', '3', '--json', '--', process.execPath, '--test', join(ROOT, 'test/fixtures/explore/helper-loop.test.mjs')],
      { timeoutMs: 300_000 },
    );
    const report = JSON.parse(stdout) as ExploreReport;
    expect(report.shapes.reduce((sum, shape) => sum + shape.reached, 0)).toBe(3);
    expect(report.runs.map((run) => run.ended)).toEqual(['exited with 0', 'exited with 0', 'exited with 0']);
    expect(code).toBe(0);
  });

  it('says what an abandoned conversation was left waiting on', async () => {
    const { report } = await explore(join(ROOT, 'test/fixtures/broken-loops/stops-without-message.mjs'));
    expect(row(report, 'no_message_yet').conversations[0]!.waiting_on).toEqual(['a request for the message after the program_output']);
  });

  it('prints a table, and says when the command never reached it', async () => {
    const { code, stdout, stderr } = await runCli(['explore', '--seeds', '2', '--', process.execPath, '-e', 'process.exit(0)']);
    expect(code).toBe(1);
    expect(stdout).toMatch(/^shape +verdict +reached +completed +refused \(400\) +abandoned +command failed/);
    expect(stdout).toContain('0 of 21 shapes reached; none reached.');
    expect(stderr).toContain('no conversation reached the emulator');
  });

  it.each([
    [['explore', '--seeds', '2'], 'explore needs the command to run after --'],
    [['explore', '--seeds', 'many', '--', 'true'], '--seeds must be a whole number from 1 to 10000, got "many"'],
    [['explore', '--workerz', '2', '--', 'true'], 'unknown flag --workerz for explore'],
    [['explore', '--html', '/nonexistent/dir/r.html', '--', 'true'], '--html /nonexistent/dir/r.html cannot be written: ENOENT'],
  ])('refuses %j in one line, exit code 2', async (args, message) => {
    const { code, stderr } = await runCli(args);
    expect(code).toBe(2);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain(message);
  });
});

describe('explore mode on a running server', () => {
  let server: RunningServer;
  let mcp: McpTestServer;
  beforeAll(async () => {
    server = await startServer();
    mcp = await startStreamableMcpServer();
  });
  afterAll(async () => {
    await server.close();
    await mcp.close();
  });

  const report = async (): Promise<ExploreReport> => (await (await fetch(`${server.baseURL}/emulator/explore`)).json()) as ExploreReport;
  const exploring = (seed: number) => ({ headers: { 'x-ptc-explore': 'true', 'x-ptc-seed': String(seed) } });

  it('a request explores with x-ptc-explore, its seed draws the shape: the same seed, the same sequence', async () => {
    await fetch(`${server.baseURL}/emulator/explore`, { method: 'DELETE' });
    const shapeOf = async (seed: number): Promise<string> => {
      const response = await server.client.responses.create({ model: 'm', input: 'Compare inventory with demand for sku_123.', tools: TOOLS }, exploring(seed));
      const program = response.output.find((item) => item.type === 'program')!;
      return /^\/\/ ptc-emulator explorer: (\S+)/.exec(program.code)![1]!;
    };
    const first = [await shapeOf(5), await shapeOf(6), await shapeOf(7)];
    expect([await shapeOf(5), await shapeOf(6), await shapeOf(7)]).toEqual(first);
    expect(new Set(first).size).toBe(3);
    // Without the header, this server (PTC_EXPLORE off) runs the autopilot.
    const plain = await server.client.responses.create({ model: 'm', input: 'Compare inventory with demand for sku_123.', tools: TOOLS });
    expect(plain.output.find((item) => item.type === 'program')!.code).toMatch(/^\/\/ ptc-emulator autopilot/);
  });

  it('reports streamed and stored conversations too, and serves the report as a page linking to the inspector', async () => {
    await fetch(`${server.baseURL}/emulator/explore`, { method: 'DELETE' });
    for (const [seed, options] of [
      [0, { stream: true, store: true }],
      [1, { stream: false, store: true }],
    ] as const) {
      const client = server.client.withOptions({ defaultHeaders: exploring(seed).headers });
      await agentLoop(client, { model: 'm', input: 'Compare inventory with demand for sku_123.', tools: TOOLS }, HANDLERS, options);
    }
    const reached = (await report()).shapes.filter((shape) => shape.reached > 0);
    expect(reached.every((shape) => shape.verdict === 'passed')).toBe(true);
    expect(reached.flatMap((shape) => shape.conversations.map((conversation) => conversation.transports)).sort()).toEqual([
      ['no stream', 'store'],
      ['store', 'stream'],
    ]);
    const page = await fetch(`${server.baseURL}/emulator/explore?format=html`);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await page.text();
    const program = reached[0]!.conversations[0]!.program;
    expect(html).toContain(`<a href="/inspector#program=${program}">${program}</a>`);
    expect(await (await fetch(`${server.baseURL}/emulator/explore`, { method: 'DELETE' })).json()).toEqual({ object: 'emulator.explore.cleared', cleared: 2 });
  });

  it('ties a refusal to its conversation by previous_response_id: a stored loop that leaves caller out', async () => {
    await fetch(`${server.baseURL}/emulator/explore`, { method: 'DELETE' });
    for (let seed = 0; ; seed++) {
      const client = server.client.withOptions({ defaultHeaders: exploring(seed).headers });
      const first = await client.responses.create({ model: 'm', input: 'Compare inventory with demand for sku_123.', tools: TOOLS });
      const calls = first.output.filter((item) => item.type === 'function_call');
      if (calls.length === 0) continue;
      const refused = await client.responses
        .create({
          model: 'm',
          previous_response_id: first.id,
          tools: TOOLS,
          input: calls.map((call) => ({ type: 'function_call_output' as const, call_id: call.call_id, output: '{}' })),
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(refused).toMatchObject({ status: 400, code: 'caller_missing' });
      const conversations = (await report()).shapes.flatMap((shape) => shape.conversations);
      expect(conversations).toEqual([
        expect.objectContaining({
          outcome: 'refused',
          requests: 2,
          refused: expect.objectContaining({ code: 'caller_missing', param: expect.stringMatching(/^input\[0\]\.caller$/) }),
        }),
      ]);
      return;
    }
  });

  it('reports only the programs it wrote: a program that starts with its marker line is not one', async () => {
    await fetch(`${server.baseURL}/emulator/explore`, { method: 'DELETE' });
    const spoof = '```js\n// ptc-emulator explorer: sequential_pauses (seed 7)\ntext("hello");\n```';
    const response = await server.client.responses.create({ model: 'm', input: spoof, tools: TOOLS });
    expect(response.output_text).toBe('hello');
    expect((await report()).shapes.every((shape) => shape.reached === 0)).toBe(true);
  });

  it("a later turn's message does not complete a conversation whose own message was never asked for", async () => {
    await fetch(`${server.baseURL}/emulator/explore`, { method: 'DELETE' });
    const client = server.client.withOptions({ defaultHeaders: { 'x-ptc-explore': 'true' } });
    for (let seed = 0; ; seed++) {
      const first = await client.responses.create(
        { model: 'm', input: 'Compare inventory with demand for sku_123.', tools: TOOLS },
        { headers: { 'x-ptc-seed': String(seed) } },
      );
      if (!first.output.find((item) => item.type === 'program')!.code.startsWith('// ptc-emulator explorer: no_message_yet')) continue;
      const calls = first.output.filter((item) => item.type === 'function_call');
      const second = await client.responses.create({
        model: 'm',
        previous_response_id: first.id,
        tools: TOOLS,
        input: calls.map((call) => ({ type: 'function_call_output' as const, call_id: call.call_id, output: '{}', caller: call.caller! })),
      });
      expect(second.output.map((item) => item.type)).toEqual(['program_output']);
      // The client never asks for that message: it moves on to a new question.
      await client.responses.create({ model: 'm', previous_response_id: second.id, input: 'Thanks. Anything else?', tools: [] });
      const [conversation] = row(await report(), 'no_message_yet').conversations;
      expect(conversation).toMatchObject({ outcome: 'abandoned', waiting_on: ['a request for the message after the program_output'] });
      return;
    }
  });

  it("draws direct_and_programmatic when a tool only the model may call is there: the program's call and the direct call in one response", async () => {
    const tools = [
      ...TOOLS.slice(0, 2),
      { type: 'function', name: 'lookup_buyer', parameters: { type: 'object', properties: {} }, strict: false },
      TOOLS[2]!,
    ] as Tool[];
    for (let seed = 0; seed < 30; seed++) {
      const client = server.client.withOptions({ defaultHeaders: exploring(seed).headers });
      const result = await agentLoop(
        client,
        { model: 'm', input: 'Compare inventory with demand for sku_123.', tools },
        { functions: { ...HANDLERS.functions, lookup_buyer: () => 'buyer b_1' } },
      );
      const program = result.responses[0]!.output.find((item) => item.type === 'program')!;
      if (!program.code.startsWith('// ptc-emulator explorer: direct_and_programmatic')) continue;
      const calls = result.responses[0]!.output.filter((item) => item.type === 'function_call');
      expect(calls.map((call) => [call.name, call.caller?.type])).toEqual([
        ['get_inventory', 'program'],
        ['lookup_buyer', 'direct'],
      ]);
      expect(result.text).toContain('lookup_buyer returned buyer b_1');
      return;
    }
    throw new Error('no seed of 30 drew direct_and_programmatic');
  });

  it('draws mcp_tool_call when the request has an MCP server: a program that calls it pauses on its approval request', async () => {
    const tools = [
      { type: 'mcp', server_label: 'calc', server_url: mcp.url, require_approval: 'always', allowed_tools: ['add'], allowed_callers: ['programmatic'] },
      { type: 'programmatic_tool_calling' },
    ] as Tool[];
    for (let seed = 0; seed < 30; seed++) {
      const client = server.client.withOptions({ defaultHeaders: exploring(seed).headers });
      const approvals: string[] = [];
      const result = await agentLoop(client, { model: 'm', input: 'Add with calc.', tools }, { approve: (request) => (approvals.push(request.name), true) });
      const program = result.responses.flatMap((response) => response.output).find((item) => item.type === 'program')!;
      if (!program.code.startsWith('// ptc-emulator explorer: mcp_tool_call')) continue;
      expect(approvals).toEqual(['add']);
      expect(result.text).toMatch(/^Explorer, shape mcp_tool_call: first returned sum/);
      return;
    }
    throw new Error('no seed of 30 drew mcp_tool_call');
  });
});
