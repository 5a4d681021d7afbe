import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { agentLoop } from '../support/agent-loop.ts';
import { expectSdkError, rejectionOf } from '../support/api-errors.ts';
import { inlineProgram } from '../support/programs.ts';
import { startServer, type RunningServer } from '../support/server.ts';

// A data agent on hosted tools: the hosted shell in an emulated container, and code_interpreter.
// Nothing runs on the host: the scenario scripts what each command and piece of code gives.
const TOOLS: OpenAI.Responses.Tool[] = [
  { type: 'shell', environment: { type: 'container_auto' }, allowed_callers: ['programmatic'] },
  { type: 'code_interpreter', container: { type: 'auto' }, allowed_callers: ['programmatic'] },
  {
    type: 'function',
    name: 'save_report',
    parameters: { type: 'object', properties: { text: { type: 'string' } } },
    strict: false,
    allowed_callers: ['programmatic'],
  },
  { type: 'programmatic_tool_calling' },
];

const SCENARIOS = {
  hosted: {
    shell: [
      { command: 'wc -l data.csv', stdout: '42 data.csv\n' },
      { command: '/^cat missing/', stderr: 'cat: missing: No such file or directory\n', exit_code: 1 },
    ],
    code_interpreter: [{ code: 'mean(', logs: '3.5\n', images: ['https://files.example/plot.png'] }],
  },
};

const PROGRAM = `
const [lines, missing] = await tools.shell({ commands: ['wc -l data.csv', 'cat missing.txt'] });
const run = await tools.code_interpreter({ code: 'print(mean([1, 6]))' });
text(JSON.stringify({ lines: lines.stdout, missing: missing.outcome, logs: run[0].logs, image: run[1].url }));
`;
const RESULT = { lines: '42 data.csv\n', missing: { type: 'exit', exit_code: 1 }, logs: '3.5\n', image: 'https://files.example/plot.png' };

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ scenarios: SCENARIOS });
});
afterAll(() => server.close());

describe('the hosted shell and code_interpreter from a program', () => {
  for (const [label, options] of [
    ['store: false, plain create', { store: false }],
    ['previous_response_id, the stream helper', { store: true, stream: true }],
  ] as const) {
    it(`answer in the same response, without suspending the program (${label})`, async () => {
      const { text, responses } = await agentLoop(server.client, { model: 'm', input: inlineProgram(PROGRAM), tools: TOOLS }, {}, options);
      expect(responses).toHaveLength(1);
      expect(JSON.parse(text)).toEqual(RESULT);
      const output = responses[0]!.output;
      const program = output.find((item) => item.type === 'program')!;
      const caller = { type: 'program', caller_id: program.call_id };
      expect(output.map((item) => item.type)).toEqual(['program', 'shell_call', 'shell_call_output', 'code_interpreter_call', 'program_output', 'message']);
      const [, shellCall, shellOutput, run] = output;
      expect(shellCall).toEqual({
        type: 'shell_call',
        id: expect.stringMatching(/^sh_/),
        call_id: expect.stringMatching(/^call_/),
        action: { commands: ['wc -l data.csv', 'cat missing.txt'], timeout_ms: null, max_output_length: null },
        status: 'completed',
        environment: { type: 'container_reference', container_id: 'cntr_ptc_emulated' },
        caller,
      });
      expect(shellOutput).toEqual({
        type: 'shell_call_output',
        id: expect.stringMatching(/^sho_/),
        call_id: (shellCall as { call_id: string }).call_id,
        output: [
          { stdout: '42 data.csv\n', stderr: '', outcome: { type: 'exit', exit_code: 0 } },
          { stdout: '', stderr: 'cat: missing: No such file or directory\n', outcome: { type: 'exit', exit_code: 1 } },
        ],
        max_output_length: null,
        status: 'completed',
        caller,
      });
      expect(run).toEqual({
        type: 'code_interpreter_call',
        id: expect.stringMatching(/^ci_/),
        code: 'print(mean([1, 6]))',
        container_id: 'cntr_ptc_emulated',
        outputs: [
          { type: 'logs', logs: '3.5\n' },
          { type: 'image', url: 'https://files.example/plot.png' },
        ],
        status: 'completed',
        caller,
      });
    });
  }

  it('refuse what no scenario scripts: the shell with exit 127, code_interpreter with an error in the program', async () => {
    const code = `const [ls] = await tools.shell({ commands: ['ls /etc'] });
let error; try { await tools.code_interpreter({ code: 'import os' }) } catch (e) { error = e.message }
text(JSON.stringify({ exit: ls.outcome.exit_code, stderr: ls.stderr, error }))`;
    const { text, responses } = await agentLoop(server.client, { model: 'm', input: inlineProgram(code), tools: TOOLS }, {});
    const result = JSON.parse(text) as { exit: number; stderr: string; error: string };
    expect(result.exit).toBe(127);
    expect(result.stderr).toContain('the hosted shell is emulated and runs nothing');
    expect(result.error).toContain('code_interpreter is emulated and runs nothing');
    expect(responses[0]!.output.find((item) => item.type === 'code_interpreter_call')).toMatchObject({
      status: 'failed',
      outputs: [{ type: 'logs', logs: result.error }],
    });
  });

  it('stream a code_interpreter run with its events; a failed run has no completed event and ends failed', async () => {
    const code = `await tools.code_interpreter({ code: 'mean([1])' }); try { await tools.code_interpreter({ code: 'import os' }) } catch {} text('ok')`;
    const stream = await server.client.responses.create({ model: 'm', input: inlineProgram(code), tools: TOOLS, stream: true });
    const byItem = new Map<string, string[]>();
    for await (const event of stream) {
      if (!('item_id' in event) || !event.type.startsWith('response.code_interpreter_call')) continue;
      byItem.set(event.item_id, [...(byItem.get(event.item_id) ?? []), event.type.replace('response.', '')]);
    }
    const [completed, failed] = [...byItem.values()].map((types) => types.filter((type) => type !== 'code_interpreter_call_code.delta'));
    const common = ['code_interpreter_call.in_progress', 'code_interpreter_call_code.done', 'code_interpreter_call.interpreting'];
    expect(completed).toEqual([...common, 'code_interpreter_call.completed']);
    expect(failed).toEqual(common);
  });

  it("cuts each command's output to max_output_length, as the action asks", async () => {
    const { text } = await agentLoop(
      server.client,
      {
        model: 'm',
        input: inlineProgram("const [r] = await tools.shell({ commands: ['wc -l data.csv'], max_output_length: 2 }); text(r.stdout)"),
        tools: TOOLS,
      },
      {},
    );
    expect(text).toBe('42');
  });

  it('are replayed from their items when the program resumes elsewhere, and never run twice', async () => {
    const code = `${PROGRAM.replace('text(', 'const saved = await tools.save_report({ text: lines.stdout }); text(saved + ')}`;
    const hostedCalls: string[] = [];
    const hosted = {
      shell: (command: string) => (hostedCalls.push(command), undefined),
      codeInterpreter: (source: string) => (hostedCalls.push(source), undefined),
    };
    // No paused isolate is kept: the resume replays the program from the items, in a worker process.
    const cold = await startServer({ scenarios: SCENARIOS, hosted, config: { maxPausedPrograms: 0, workers: 1 } });
    try {
      const { text, responses } = await agentLoop(
        cold.client,
        { model: 'm', input: inlineProgram(code), tools: TOOLS },
        {
          functions: { save_report: ({ text: report }: { text: string }) => `saved ${report.length} chars:` },
        },
      );
      expect(responses).toHaveLength(2);
      expect(text).toBe(`saved 12 chars:${JSON.stringify(RESULT)}`);
      // The replay answered the hosted calls from the items: the handlers saw each once.
      expect(hostedCalls).toEqual(['wc -l data.csv', 'cat missing.txt', 'print(mean([1, 6]))']);
    } finally {
      await cold.close();
    }
  });

  it('refuse a resume whose items carry other answers than the emulator gave: ids seal what hosted calls returned', async () => {
    const code = `${PROGRAM.replace('text(', 'const saved = await tools.save_report({ text: lines.stdout }); text(saved + ')}`;
    const first = await server.client.responses.create({ model: 'm', store: false, input: inlineProgram(code), tools: TOOLS });
    const call = first.output.find((item) => item.type === 'function_call')!;
    const input: ResponseInputItem[] = [
      { role: 'user', content: inlineProgram(code) },
      ...toResponseInputItems(first.output),
      { type: 'function_call_output', call_id: call.call_id, output: 'saved', caller: call.caller ?? null },
    ];
    const send = (items: ResponseInputItem[]) => server.client.responses.create({ model: 'm', store: false, input: items, tools: TOOLS });
    const index = (type: string) => input.findIndex((item) => item.type === type);
    const alter = (type: string, change: (item: any) => object) => input.map((item, at) => (at === index(type) ? { ...item, ...change(item) } : item));

    const shellOutput = alter('shell_call_output', (item) => ({ output: [{ ...item.output[0], stdout: '9000 data.csv\n' }, item.output[1]] }));
    expectSdkError(await rejectionOf(send(shellOutput)), {
      code: 'program_item_altered',
      param: `input[${index('shell_call_output')}]`,
      mentions: ['hosted shell'],
    });
    const run = alter('code_interpreter_call', (item) => ({ outputs: [{ type: 'logs', logs: '99\n' }, item.outputs[1]] }));
    expectSdkError(await rejectionOf(send(run)), { code: 'program_item_altered', param: `input[${index('code_interpreter_call')}]`, mentions: ['answer'] });
    expect((await send(input)).output_text).toContain('saved');
  });
});

describe('max_tool_calls', () => {
  // Three built-in calls, a client call, then two more: with max_tool_calls 2, the third of each
  // response is not made and fails in the program; the fourth and fifth are the next response's.
  const code = `
const tried = [];
for (const source of ['mean([1])', 'mean([2])', 'mean([3])']) {
  try { tried.push((await tools.code_interpreter({ code: source }))[0].logs) } catch (e) { tried.push(e.message) }
}
const saved = await tools.save_report({ text: 'x' });
const [a] = await tools.shell({ commands: ['wc -l data.csv'] });
let after; try { await tools.code_interpreter({ code: 'mean([4])' }); after = 'made' } catch (e) { after = e.message }
text(JSON.stringify({ tried, saved, shell: a.stdout, after }));`;

  for (const store of [false, true]) {
    it(`counts the built-in calls a program makes in one response; past it a call is not made and fails in the program (store: ${store})`, async () => {
      const made: string[] = [];
      const counting = await startServer({
        scenarios: SCENARIOS,
        hosted: { codeInterpreter: (source: string) => (made.push(source), undefined) },
        config: { maxPausedPrograms: 0 },
      });
      try {
        const { text, responses } = await agentLoop(
          counting.client,
          { model: 'm', input: inlineProgram(code), tools: TOOLS, max_tool_calls: 2 },
          { functions: { save_report: () => 'saved' } },
          { store },
        );
        const result = JSON.parse(text) as { tried: string[]; saved: string; shell: string; after: string };
        const refusal = 'max_tool_calls was reached in this response: tools.code_interpreter was not called';
        expect(result.tried).toEqual(['3.5\n', '3.5\n', refusal]);
        // The next response has its own two: the shell and the last run are made.
        expect(result).toMatchObject({ saved: 'saved', shell: '42 data.csv\n', after: 'made' });
        // Made once each, the refused one never, and the resume (by replay) made none again.
        expect(made).toEqual(['mean([1])', 'mean([2])', 'mean([4])']);
        expect(responses[0]!.max_tool_calls).toBe(2);
        const runs = responses[0]!.output.filter((item) => item.type === 'code_interpreter_call');
        expect(runs.map((run) => run.status)).toEqual(['completed', 'completed', 'failed']);
        expect(runs[2]).toMatchObject({ outputs: [{ type: 'logs', logs: refusal }] });
      } finally {
        await counting.close();
      }
    });
  }
});

describe('caller on a resent code_interpreter_call', () => {
  it('must be the one it was emitted with: without it, the run is refused rather than made again', async () => {
    const code = "const run = await tools.code_interpreter({ code: 'mean(' }); text(await tools.save_report({ text: run[0].logs }))";
    const send = (input: ResponseInputItem[]) => server.client.responses.create({ model: 'm', store: false, input, tools: TOOLS });
    const user: ResponseInputItem = { role: 'user', content: inlineProgram(code) };
    const first = await send([user]);
    expect(first.output.map((item) => item.type)).toEqual(['program', 'code_interpreter_call', 'function_call']);
    const save = first.output[2] as OpenAI.Responses.ResponseFunctionToolCall;
    const input = [
      user,
      ...toResponseInputItems(first.output),
      { type: 'function_call_output', call_id: save.call_id, output: 'saved', caller: save.caller ?? null } as ResponseInputItem,
    ];
    const recaller = (caller: unknown) => input.map((item, at) => (at === 2 ? ({ ...item, caller } as ResponseInputItem) : item));
    expectSdkError(await rejectionOf(send(recaller(undefined))), { code: 'caller_missing', param: 'input[2].caller', mentions: [first.output[1]!.id!] });
    expectSdkError(await rejectionOf(send(recaller({ type: 'direct' }))), { code: 'caller_mismatch', param: 'input[2].caller' });
    expect((await send(input)).output_text).toBe('saved');
  });
});
