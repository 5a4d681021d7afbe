import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, mkdirSync, rmSync, unlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { ResponseApplyPatchToolCall, ResponseFunctionShellCallOutputContent, ResponseFunctionShellToolCall } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentLoop, type ClientHandlers } from '../support/agent-loop.ts';
import { expectSdkError, rejectionOf } from '../support/api-errors.ts';
import { inlineProgram } from '../support/programs.ts';
import { startServer, type RunningServer } from '../support/server.ts';

// A coding agent's client: it really runs the shell commands and applies the file changes, in a
// scratch directory of its own.
function workspaceClient(root: string): ClientHandlers {
  const run = (command: string, timeoutMs: number): Promise<ResponseFunctionShellCallOutputContent> =>
    new Promise((resolve) => {
      execFile('bash', ['-c', command], { cwd: root, timeout: timeoutMs }, (error, stdout, stderr) => {
        const timedOut = error !== null && (error as { killed?: boolean }).killed === true;
        const exitCode = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        resolve({ stdout, stderr, outcome: timedOut ? { type: 'timeout' } : { type: 'exit', exit_code: exitCode } });
      });
    });
  return {
    shell: async (action) => {
      const results = [];
      for (const command of action.commands) results.push(await run(command, action.timeout_ms ?? 10_000));
      return results;
    },
    applyPatch: (operation) => {
      const path = join(root, operation.path);
      if (operation.type === 'delete_file') {
        if (!existsSync(path)) return { status: 'failed', output: `${operation.path} does not exist` };
        unlinkSync(path);
        return { status: 'completed' };
      }
      if (operation.type === 'update_file') return { status: 'failed', output: 'this client only creates and deletes files' };
      mkdirSync(dirname(path), { recursive: true });
      // A created file's diff is its lines, each prefixed with "+".
      writeFileSync(
        path,
        operation.diff
          .split('\n')
          .map((line) => line.replace(/^\+/, ''))
          .join('\n'),
      );
      return { status: 'completed', output: `created ${operation.path}` };
    },
  };
}

const TOOLS: OpenAI.Responses.Tool[] = [
  { type: 'shell', environment: { type: 'local' }, allowed_callers: ['programmatic'] },
  { type: 'apply_patch', allowed_callers: ['programmatic', 'direct'] },
  { type: 'programmatic_tool_calling' },
];

const PROGRAM = `
const created = await tools.apply_patch({ type: 'create_file', path: 'notes/hello.txt', diff: '+hello\\n+world\\n' });
const [ls, cat, fails] = await tools.shell({ commands: ['ls notes', 'cat notes/hello.txt', 'exit 3'], timeout_ms: 5000 });
const missing = await tools.apply_patch({ type: 'delete_file', path: 'nope.txt' });
text(JSON.stringify({ created, files: ls.stdout.trim(), content: cat.stdout, exit: fails.outcome, missing }));
`;
const RESULT = {
  created: { status: 'completed', output: 'created notes/hello.txt' },
  files: 'hello.txt',
  content: 'hello\nworld\n',
  exit: { type: 'exit', exit_code: 3 },
  missing: { status: 'failed', output: 'nope.txt does not exist' },
};

let server: RunningServer;
let workspaces: string[] = [];
function workspace(): string {
  const root = mkdtempSync(join(tmpdir(), 'ptc-workspace-'));
  workspaces.push(root);
  return root;
}
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
  for (const root of workspaces) rmSync(root, { recursive: true, force: true });
  workspaces = [];
});

describe('a program driving the local shell and apply_patch', () => {
  for (const [label, options] of [
    ['store: false, plain create', { store: false }],
    ['previous_response_id, the stream helper', { store: true, stream: true }],
  ] as const) {
    it(`suspends on shell_call and apply_patch_call items with caller, and gets the results parsed (${label})`, async () => {
      const { text, responses } = await agentLoop(
        server.client,
        { model: 'm', input: inlineProgram(PROGRAM), tools: TOOLS },
        workspaceClient(workspace()),
        options,
      );
      expect(JSON.parse(text)).toEqual(RESULT);
      const program = responses[0]!.output.find((item) => item.type === 'program')!;
      const caller = { type: 'program', caller_id: program.call_id };
      expect(responses[0]!.output.filter((item) => item.type === 'apply_patch_call')).toEqual([
        {
          type: 'apply_patch_call',
          id: expect.stringMatching(/^apc_/),
          call_id: expect.stringMatching(/^call_/),
          operation: { type: 'create_file', path: 'notes/hello.txt', diff: '+hello\n+world\n' },
          status: 'completed',
          caller,
        },
      ]);
      expect(responses[1]!.output.filter((item) => item.type === 'shell_call')).toEqual([
        {
          type: 'shell_call',
          id: expect.stringMatching(/^sh_/),
          call_id: expect.stringMatching(/^call_/),
          action: { commands: ['ls notes', 'cat notes/hello.txt', 'exit 3'], timeout_ms: 5000, max_output_length: null },
          status: 'completed',
          environment: { type: 'local' },
          caller,
        },
      ]);
    });
  }

  it('replays on a server that never saw the program, through a worker process', async () => {
    const fingerprintKey = randomUUID();
    const live = await startServer({ config: { fingerprintKey } });
    const cold = await startServer({ config: { fingerprintKey, maxPausedPrograms: 0, workers: 1 } });
    try {
      const onLive = await agentLoop(live.client, { model: 'm', input: inlineProgram(PROGRAM), tools: TOOLS }, workspaceClient(workspace()));
      const onCold = await agentLoop(cold.client, { model: 'm', input: inlineProgram(PROGRAM), tools: TOOLS }, workspaceClient(workspace()));
      expect(JSON.parse(onCold.text)).toEqual(RESULT);
      expect(onCold.text).toBe(onLive.text);
    } finally {
      await live.close();
      await cold.close();
    }
  });

  it('throws a TypeError in the program for a malformed action or operation, before anything reaches the client', async () => {
    const code = `const seen = [];
for (const call of [() => tools.shell({ commands: 'ls' }), () => tools.shell({ commands: [] }), () => tools.shell({ commands: ['ls'], cwd: '/' }), () => tools.apply_patch({ type: 'rename_file', path: 'a' }), () => tools.apply_patch({ type: 'update_file', path: 'a' })]) {
  try { await call(); seen.push('sent') } catch (e) { seen.push(e.name + ': ' + e.message) }
}
text(seen.join('\\n'))`;
    const { text, responses } = await agentLoop(server.client, { model: 'm', input: inlineProgram(code), tools: TOOLS }, {});
    expect(responses).toHaveLength(1);
    expect(text.split('\n')).toEqual([
      'TypeError: tools.shell: arguments.commands must be array',
      'TypeError: tools.shell: arguments.commands must NOT have fewer than 1 items',
      "TypeError: tools.shell: arguments has the property 'cwd', which the schema does not allow",
      'TypeError: tools.apply_patch: arguments.type must be one of ["create_file","update_file","delete_file"]',
      "TypeError: tools.apply_patch: arguments is missing the required property 'diff'",
    ]);
  });

  it('shows a program the shell only when its allowed_callers lets programs call it', async () => {
    const probe = 'text(Object.keys(tools).join())';
    const directShell: OpenAI.Responses.Tool[] = [
      { type: 'shell', environment: { type: 'local' } },
      { type: 'apply_patch', allowed_callers: ['programmatic'] },
      { type: 'programmatic_tool_calling' },
    ];
    expect((await agentLoop(server.client, { model: 'm', input: inlineProgram(probe), tools: directShell }, {})).text).toBe('apply_patch');
    expect((await agentLoop(server.client, { model: 'm', input: inlineProgram(probe), tools: TOOLS }, {})).text).toBe('shell,apply_patch');
  });

  it('rejects a resent shell_call whose commands were edited, and a shell output sent as a function_call_output', async () => {
    const code = 'text(JSON.stringify(await tools.shell({ commands: ["echo hi"] })))';
    const first = await server.client.responses.create({ model: 'm', store: false, input: inlineProgram(code), tools: TOOLS });
    const call = first.output.find((item): item is ResponseFunctionShellToolCall => item.type === 'shell_call')!;
    const answer = {
      type: 'shell_call_output' as const,
      call_id: call.call_id,
      output: [{ stdout: 'hi\n', stderr: '', outcome: { type: 'exit' as const, exit_code: 0 } }],
      caller: call.caller ?? null,
    };
    const history = toResponseInputItems(first.output);
    const edited = history.map((item) => (item.type === 'shell_call' ? { ...item, action: { ...item.action, commands: ['rm -rf /'] } } : item));
    expectSdkError(
      await rejectionOf(
        server.client.responses.create({ model: 'm', store: false, input: [{ role: 'user', content: inlineProgram(code) }, ...edited, answer], tools: TOOLS }),
      ),
      {
        code: 'program_item_altered',
        mentions: [`shell call ${call.call_id}`],
      },
    );
    expectSdkError(
      await rejectionOf(
        server.client.responses.create({
          model: 'm',
          store: false,
          input: [
            { role: 'user', content: inlineProgram(code) },
            ...history,
            { type: 'function_call_output', call_id: call.call_id, output: 'hi', caller: call.caller ?? null },
          ],
          tools: TOOLS,
        }),
      ),
      { code: 'tool_output_unknown_call', mentions: ['shell_call_output'] },
    );
    const resumed = await server.client.responses.create({
      model: 'm',
      store: false,
      input: [{ role: 'user', content: inlineProgram(code) }, ...history, answer],
      tools: TOOLS,
    });
    expect(resumed.output_text).toBe('[{"stdout":"hi\\n","stderr":"","outcome":{"type":"exit","exit_code":0}}]');
  });

  it('rejects a function named like a built-in tool it is listed with', async () => {
    expectSdkError(
      await rejectionOf(
        server.client.responses.create({
          model: 'm',
          input: 'hi',
          tools: [{ type: 'apply_patch' }, { type: 'function', name: 'apply_patch', parameters: null, strict: false }],
        }),
      ),
      { code: 'duplicate_tool_name', param: 'tools[1].name', mentions: ["'apply_patch'"] },
    );
  });
});

describe('the stand-in calling apply_patch and the shell directly', () => {
  let scripted: RunningServer;
  beforeAll(async () => {
    scripted = await startServer({
      model: (context) => {
        if (context.phase !== 'user_turn') return undefined;
        if (context.lastUserText === 'write it')
          return { type: 'function_calls', calls: [{ name: 'apply_patch', arguments: { type: 'create_file', path: 'a.txt', diff: '+a' } }] };
        if (context.lastUserText === 'run it') return { type: 'function_calls', calls: [{ name: 'shell', arguments: { commands: ['true'] } }] };
        if (context.lastUserText === 'break it') return { type: 'function_calls', calls: [{ name: 'apply_patch', arguments: { type: 'create_file' } }] };
        return undefined;
      },
    });
  });
  afterAll(() => scripted.close());

  it('emits an apply_patch_call with caller direct and summarises its output', async () => {
    const root = workspace();
    const { text, responses } = await agentLoop(scripted.client, { model: 'm', input: 'write it', tools: TOOLS }, workspaceClient(root));
    expect(responses[0]!.output).toEqual([
      {
        type: 'apply_patch_call',
        id: expect.stringMatching(/^apc_/),
        call_id: expect.any(String),
        operation: { type: 'create_file', path: 'a.txt', diff: '+a' },
        status: 'completed',
        caller: { type: 'direct' },
      },
    ]);
    // The autopilot states the output, as the model function leaves that turn to it.
    expect(text).toBe('apply_patch returned status completed and output created a.txt.');
    expect(existsSync(join(root, 'a.txt'))).toBe(true);
  });

  it('never calls a programs-only shell directly, and refuses a malformed operation', async () => {
    expect((await scripted.client.responses.create({ model: 'm', input: 'run it', tools: TOOLS })).output_text).toContain(
      `'shell' directly, but its allowed_callers is ["programmatic"]`,
    );
    expect((await scripted.client.responses.create({ model: 'm', input: 'break it', tools: TOOLS })).output_text).toContain('is not one the client can run');
  });
});

// Keep the SDK item types in view: the loop above reads them as a user's code would.
export type Items = [ResponseFunctionShellToolCall, ResponseApplyPatchToolCall];
