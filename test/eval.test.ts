import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../server/app.ts';
import { countTokens, ITEM_OVERHEAD_TOKENS } from '../server/engine/usage.ts';
import { startEmulator, type RunningEmulator } from '../testing/index.ts';
import type { RunResult } from '../cli/eval/run-task.ts';
import { ROOT, runCli } from './support/cli.ts';

// `ptc-emulator eval` as a person runs it: the built command on the shipped example tasks,
// its figures checked against counts made by hand, and its failures named.

const TASKS = 'examples/eval/tasks.yaml';
const scratch = mkdtempSync(join(tmpdir(), 'ptc-eval-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface JsonReport {
  readonly tasks: { readonly task: string; readonly runs: Record<'direct' | 'ptc', RunResult> }[];
  readonly totals: Record<'direct' | 'ptc', Record<string, number>>;
  readonly ratios: Record<string, number | null>;
}

/** The table's cells with the wall-time column blanked: the only figure that varies from run to run. */
function withoutWallTime(table: string): string {
  return table
    .trim()
    .split('\n')
    .map((line) => line.replace(/\|[^|]*\|$/, '| (wall) |'))
    .join('\n');
}

const t = (text: string): number => countTokens(text);
const o = ITEM_OVERHEAD_TOKENS;

describe('eval on the example tasks', () => {
  let stdout: string;
  let code: number | null;
  let report: JsonReport;
  const html = join(scratch, 'report.html');
  beforeAll(async () => {
    const json = join(scratch, 'report.json');
    ({ code, stdout } = await runCli(['eval', TASKS, '--json', json, '--html', html], { timeoutMs: 120_000 }));
    report = JSON.parse(readFileSync(json, 'utf8')) as JsonReport;
  }, 150_000);

  it('answers every task correctly in both modes, by the intended path, and exits 0', () => {
    expect(code).toBe(0);
    for (const { task, runs } of report.tasks) {
      expect(runs.direct, task).toMatchObject({ correct: true, path: 'direct', pathAsIntended: true, retries: 0, toolErrors: 0, approvals: 0 });
      expect(runs.ptc, task).toMatchObject({ correct: true, path: 'program', pathAsIntended: true, retries: 0, toolErrors: 0, approvals: 0 });
    }
    expect(report.tasks.map((entry) => entry.task)).toEqual(['seed: inventory against demand', '50 SKUs short of demand', 'paginated orders to one total']);
  });

  it("gives the seed task's figures as counted by hand, by the usage rules of docs/DEVIATIONS.md", async () => {
    const tools = (await import(join(ROOT, 'examples/eval/tools.mjs'))) as { tools: Record<string, { run(args: unknown): unknown }> };
    const scenarios = parseYaml(readFileSync(join(ROOT, 'examples/eval/scenarios.yaml'), 'utf8')) as { rules: { name: string; program?: string }[] };
    const prompt = 'Compare inventory with demand for sku_123.';
    const args = '{"sku":"sku_123"}';
    const inventory = JSON.stringify(tools.tools.get_inventory!.run({ sku: 'sku_123' }));
    const demand = JSON.stringify(tools.tools.get_demand!.run({ sku: 'sku_123' }));
    const message = 'Shortage of sku_123: 18 units.';
    const code = scenarios.rules.find((rule) => rule.name === 'seed task, PTC')!.program!;
    const result = '{"sku":"sku_123","shortage_units":18}';
    const { direct, ptc } = report.tasks[0]!.runs;
    // The tools' share of each request's input, as the server counts the request's tools: what a
    // request holding only the prompt costs, less the prompt's message.
    const toolsShare = async (mode: 'direct' | 'ptc'): Promise<number> => {
      const emulator = await startEmulator();
      try {
        const { requestTools } = await import('../cli/eval/run-task.ts');
        const { loadTaskFile } = await import('../cli/eval/task-file.ts');
        const file = await loadTaskFile(join(ROOT, TASKS));
        const reply = await fetch(`${emulator.baseURL}/responses/input_tokens`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Bearer x' },
          body: JSON.stringify({ model: 'gpt-5.5', input: prompt, tools: requestTools(file, file.tasks[0]!, mode) }),
        });
        return ((await reply.json()) as { input_tokens: number }).input_tokens - (t(prompt) + o);
      } finally {
        await emulator.close();
      }
    };
    const user = t(prompt) + o;
    const call = (name: string): number => t(name) + t(args) + o;

    // Direct: the model asks for both lookups, then reads both outputs and answers.
    const directTools = await toolsShare('direct');
    const directInput = directTools + user + (directTools + user + call('get_inventory') + call('get_demand') + (t(inventory) + o) + (t(demand) + o));
    const directOutput = call('get_inventory') + call('get_demand') + (t(message) + o);
    expect(direct).toMatchObject({
      requests: 2,
      modelTurns: 2,
      toolCalls: 2,
      directCalls: 2,
      programCalls: 0,
      inputTokens: directInput,
      outputTokens: directOutput,
      totalTokens: directInput + directOutput,
    });
    expect(direct.contextBytes).toBe(Buffer.byteLength(inventory) + Buffer.byteLength(demand));

    // PTC: the model writes the program (its calls are the runtime's), then reads its result and answers.
    const ptcTools = await toolsShare('ptc');
    const ptcInput = ptcTools + user + (ptcTools + user + (t(code) + o));
    const ptcOutput = t(code) + o + (t(result) + o) + (t(message) + o);
    expect(ptc).toMatchObject({
      requests: 2,
      modelTurns: 2,
      toolCalls: 2,
      directCalls: 0,
      programCalls: 2,
      inputTokens: ptcInput,
      outputTokens: ptcOutput,
      totalTokens: ptcInput + ptcOutput,
    });
    expect(ptc.contextBytes).toBe(Buffer.byteLength(result));
  });

  it('shows what PTC saves on the larger tasks: one model turn per program, not per page; no tool output in the context', () => {
    const [, skus, orders] = report.tasks;
    expect(skus!.runs.direct).toMatchObject({ toolCalls: 100, requests: 2, modelTurns: 2 });
    expect(skus!.runs.ptc).toMatchObject({ toolCalls: 100, requests: 2, modelTurns: 2 });
    // 8 pages: the direct model reads each one and asks for the next; the program pauses 8 times.
    expect(orders!.runs.direct).toMatchObject({ toolCalls: 8, requests: 9, modelTurns: 9 });
    expect(orders!.runs.ptc).toMatchObject({ toolCalls: 8, requests: 9, modelTurns: 2 });
    for (const entry of [skus!, orders!]) {
      expect(entry.runs.ptc.inputTokens * 5, entry.task).toBeLessThan(entry.runs.direct.inputTokens);
      expect(entry.runs.ptc.contextBytes * 10, entry.task).toBeLessThan(entry.runs.direct.contextBytes);
    }
    expect(report.ratios.modelTurns).toBeCloseTo(report.totals.ptc!.modelTurns! / report.totals.direct!.modelTurns!, 10);
  });

  it('prints the table the README shows (wall times apart)', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const shown = /<!-- eval-table:start -->\n```text\n([\s\S]*?)```\n<!-- eval-table:end -->/.exec(readme);
    expect(shown, 'README.md has the eval table between <!-- eval-table:start --> and <!-- eval-table:end -->').not.toBeNull();
    expect(withoutWallTime(stdout)).toBe(withoutWallTime(shown![1]!));
    expect(stdout).toContain('| ptc ÷ direct |');
  });

  it('writes an HTML report with a chart per measure and the table', () => {
    const page = readFileSync(html, 'utf8');
    expect(page.match(/<svg /g)).toHaveLength(3);
    expect(page).toContain('<td>50 SKUs short of demand</td>');
    // The last row: PTC's ratios over all tasks, model turns among them.
    const turnsRatio = stdout
      .trim()
      .split('\n')
      .at(-1)!
      .split('|')
      .map((cell) => cell.trim())[8]!;
    expect(turnsRatio).toMatch(/^0\.\d\d×$/);
    expect(page).toContain(`<td class="n">${turnsRatio}</td>`);
  });
});

describe('eval against cassettes', () => {
  it('records the example tasks through a recording emulator, then replays them with no upstream: the same figures', async () => {
    const upstream = await startEmulator({ scenarios: join(ROOT, 'examples/eval/scenarios.yaml') });
    const cassettes = join(scratch, 'cassettes');
    // A recorder, configured by the settings `serve --record DIR --upstream URL` sets.
    const recorder = await buildServer({
      env: { PTC_RECORD: cassettes, PTC_UPSTREAM: upstream.baseURL, PTC_UPSTREAM_API_KEY: 'upstream-key' },
      store: 'memory',
      logger: false,
      config: { workers: 1 },
    });
    await recorder.listen({ host: '127.0.0.1', port: 0 });
    const recorded = join(scratch, 'recorded.json');
    const replayed = join(scratch, 'replayed.json');
    try {
      const first = await runCli(['eval', TASKS, '--base-url', `http://127.0.0.1:${(recorder.server.address() as AddressInfo).port}/v1`, '--json', recorded], {
        timeoutMs: 120_000,
      });
      expect(first.code, first.stdout + first.stderr).toBe(0);
    } finally {
      await recorder.close();
      await upstream.close();
    }
    // The upstream is gone: only the cassettes answer.
    const second = await runCli(['eval', TASKS, '--replay', cassettes, '--json', replayed], { timeoutMs: 120_000 });
    expect(second.stderr).toBe(`ptc-emulator: the task file's scenarios are not used: --replay ${cassettes} plays the model\n`);
    expect(second.code, second.stdout).toBe(0);
    const figures = (path: string): unknown[] =>
      (JSON.parse(readFileSync(path, 'utf8')) as JsonReport).tasks.flatMap(({ runs }) => Object.values(runs).map(({ wallMs: _wall, ...rest }) => rest));
    expect(figures(replayed)).toEqual(figures(recorded));
  }, 300_000);
});

describe('eval with tasks of its own', () => {
  /** A task file in the scratch folder, with its module and scenarios. */
  function taskFile(name: string, files: { tasks: string; tools?: string; scenarios?: string }): string {
    const dir = mkdtempSync(join(scratch, `${name}-`));
    writeFileSync(join(dir, 'tasks.yaml'), files.tasks);
    if (files.tools) writeFileSync(join(dir, 'tools.mjs'), files.tools);
    if (files.scenarios) writeFileSync(join(dir, 'scenarios.yaml'), files.scenarios);
    return join(dir, 'tasks.yaml');
  }
  const lookup = `export const tools = {
  lookup: { parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"], additionalProperties: false }, approval: true,
    run: ({ id }) => { if (id === "boom") throw new Error("no such record"); return { id, value: 7 }; } },
};
export const checks = { seven: (answer) => answer.includes("7") || "no 7 in the answer" };
`;
  const scenarios = `rules:
  - match: { user: look up, metadata: { ptc_eval_mode: direct } }
    calls: [{ name: lookup, arguments: { id: a } }, { name: lookup, arguments: { id: boom } }]
    message: "The value is 7."
  - match: { user: look up, metadata: { ptc_eval_mode: ptc } }
    program: "text(JSON.parse(await tools.lookup({ id: 'a' })).value)"
    message: "The value is {{result}}."
  - match: { user: be wrong }
    message: "I do not know. <script>alert(document.cookie)</script>"
`;

  it('counts approvals and failed tool calls, and says which runs were wrong, exiting 1; the HTML escapes what it shows', async () => {
    const path = taskFile('own', {
      tasks:
        'scenarios: scenarios.yaml\ntools: tools.mjs\ntasks:\n  - { name: look up, prompt: please look up a, check: seven }\n  - { name: "<b>wrong</b>", prompt: be wrong, expect: "/\\\\d+/" }\n',
      tools: lookup,
      scenarios,
    });
    const html = join(scratch, 'own.html');
    const { code, stdout } = await runCli(['eval', path, '--html', html], { timeoutMs: 60_000 });
    expect(code).toBe(1);
    expect(stdout).toMatch(/look up \(direct\): 1 tool call failed/);
    expect(stdout).toMatch(/<b>wrong<\/b> \(direct\): incorrect: the answer does not match \/\\d\+\//);
    expect(stdout).toMatch(/<b>wrong<\/b> \(ptc\): the tools were reached by none/);
    const row = stdout.split('\n').find((line) => line.startsWith('| look up'))!;
    // 2 direct calls, both needing approval.
    expect(row.split('|').map((cell) => cell.trim())[13]).toBe('2');
    const page = readFileSync(html, 'utf8');
    expect(page).not.toContain('<script>alert(');
    expect(page).toContain('&#60;script&#62;alert(document.cookie)&#60;/script&#62;');
    expect(page).not.toContain('<b>wrong</b>');
  });

  it('refuses a flag without its value, and a report path it cannot write, before any run', async () => {
    const path = taskFile('flags', {
      tasks: 'scenarios: scenarios.yaml\ntools: tools.mjs\ntasks:\n  - { name: look up, prompt: please look up a, check: seven }\n',
      tools: lookup,
      scenarios,
    });
    const missing = await runCli(['eval', path, '--html', '--json', 'x.json']);
    expect(missing).toMatchObject({ code: 2, stdout: '' });
    expect(missing.stderr).toBe('ptc-emulator: --html needs a value\n');
    const unwritable = await runCli(['eval', path, '--json', join(scratch, 'no-such-dir', 'r.json')]);
    expect(unwritable).toMatchObject({ code: 2, stdout: '' });
    expect(unwritable.stderr).toMatch(/--json .*r\.json cannot be written: ENOENT/);
  });

  it("turns what the module's code does wrong into failed calls, and ends though the module keeps a timer running", async () => {
    const odd = `setInterval(() => {}, 1000); // as a connection pool would
export const tools = {
  fn: { parameters: { type: "object" }, run: () => () => 1 },
  nothing: { parameters: { type: "object" }, run: () => { throw null; } },
};
`;
    const path = taskFile('odd', {
      tasks: 'scenarios: scenarios.yaml\ntools: tools.mjs\ntasks:\n  - { name: odd, prompt: odd calls, expect: done }\n',
      tools: odd,
      scenarios: 'rules:\n  - match: { user: odd calls }\n    calls: [{ name: fn, arguments: {} }, { name: nothing, arguments: {} }]\n    message: done\n',
    });
    const json = join(scratch, 'odd.json');
    const { code, stdout } = await runCli(['eval', path, '--json', json], { timeoutMs: 60_000 });
    // Correct in direct mode; in PTC mode the rule makes direct calls, which the tools do not allow.
    expect(code).toBe(1);
    const { runs } = (JSON.parse(readFileSync(json, 'utf8')) as JsonReport).tasks[0]!;
    expect(runs.direct).toMatchObject({ correct: true, toolCalls: 2, toolErrors: 1 });
    expect(stdout).toContain('odd (direct): 1 tool call failed');
  });

  it('fails a run, naming why, when what answers 200 is not a response', async () => {
    const fake: Server = createServer((request, response) => {
      request.resume();
      response.writeHead(200, { 'content-type': 'text/html' }).end('<html>hello</html>');
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    try {
      const path = taskFile('fake', { tasks: 'tools: tools.mjs\ntasks:\n  - { name: look up, prompt: please look up a, check: seven }\n', tools: lookup });
      const { code, stdout } = await runCli(['eval', path, '--base-url', `http://127.0.0.1:${(fake.address() as AddressInfo).port}/v1`], { timeoutMs: 60_000 });
      expect(code).toBe(1);
      expect(stdout).toMatch(
        /look up \(direct\): incorrect: POST http:\/\/127\.0\.0\.1:\d+\/v1\/responses answered 200 with a body that is not JSON: <html>hello<\/html>/,
      );
      // A run that could not finish has no path worth a note.
      expect(stdout).not.toContain('the tools were reached by none');
    } finally {
      await new Promise((resolve) => fake.close(resolve));
    }
  });

  it('counts a request the server answered 429 and the client sent again', async () => {
    const emulator: RunningEmulator = await startEmulator({ scenarios: { rules: parseYaml(scenarios).rules } });
    // A proxy that turns away every first request with a 429, as an overloaded server does.
    let seen = 0;
    const proxy: Server = createServer(async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      if (seen++ % 2 === 0) {
        response
          .writeHead(429, { 'content-type': 'application/json', 'retry-after-ms': '1' })
          .end(JSON.stringify({ error: { message: 'busy', type: 'rate_limit_error', param: null, code: 'rate_limited' } }));
        return;
      }
      const upstream = await fetch(`${emulator.baseURL}/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: Buffer.concat(chunks),
      });
      response.writeHead(upstream.status, { 'content-type': 'application/json' }).end(await upstream.text());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const path = taskFile('retries', { tasks: 'tools: tools.mjs\ntasks:\n  - { name: look up, prompt: please look up a, check: seven }\n', tools: lookup });
      const json = join(scratch, 'retries.json');
      const { code, stderr } = await runCli(['eval', path, '--base-url', `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1`, '--json', json], {
        timeoutMs: 60_000,
      });
      expect(stderr).toBe('');
      expect(code).toBe(0);
      const { runs } = (JSON.parse(readFileSync(json, 'utf8')) as JsonReport).tasks[0]!;
      expect(runs.direct).toMatchObject({ requests: 2, retries: 2 });
      expect(runs.ptc).toMatchObject({ requests: 2, retries: 2 });
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
      await emulator.close();
    }
  });

  it.each([
    ['a task without expect or check', 'tools: tools.mjs\ntasks:\n  - { name: a, prompt: b }\n', /tasks\[0\]: a task needs expect or check/],
    [
      'a tool the module lacks',
      'tools: tools.mjs\nscenarios: x.yaml\ntasks:\n  - { name: a, prompt: b, tools: [nope], expect: c }\n',
      /tasks\[0\]\.tools: .*tools\.mjs exports no tool "nope"/,
    ],
    ['a check the module lacks', 'tools: tools.mjs\ntasks:\n  - { name: a, prompt: b, check: nope }\n', /tasks\[0\]\.check: .*exports no check "nope"/],
    ['no model at all', 'tools: tools.mjs\ntasks:\n  - { name: a, prompt: b, expect: c }\n', /nothing would play the model: give the task file scenarios/],
    [
      'a scenario file that does not exist (before any worker starts)',
      'tools: tools.mjs\nscenarios: missing.yaml\ntasks:\n  - { name: a, prompt: b, expect: c }\n',
      /Scenario file .*missing\.yaml: ENOENT/,
    ],
    [
      'an expect regex that does not compile',
      'tools: tools.mjs\ntasks:\n  - { name: a, prompt: b, expect: "/[open/" }\n',
      /tasks\[0\]\.expect: a \/regex\/flags that does not compile/,
    ],
    [
      'a task name holding a |',
      'tools: tools.mjs\ntasks:\n  - { name: "a | b", prompt: b, expect: c }\n',
      /tasks\[0\]\.name: a task name is one line of text without control characters or \|/,
    ],
    ['an unknown field', 'tools: tools.mjs\ntask: []\ntasks:\n  - { name: a, prompt: b, expect: c }\n', /task file .*: \(root\): Unrecognized key: "task"/],
  ])('refuses %s with exit code 2, naming the field', async (_, tasks, message) => {
    const { code, stderr } = await runCli(['eval', taskFile('bad', { tasks, tools: lookup })]);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr.trim().split('\n')).toHaveLength(1);
  });
});
