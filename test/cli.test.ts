import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { settingFlag, settingRows } from '../server/platform/config.ts';
import { assertBuilt, cleanEnv, runCli, serveCli, track } from './support/cli.ts';
import { ICU_RUNAWAY } from './support/hostile-programs.ts';
import { closedPort } from './support/ports.ts';

const scratch = mkdtempSync(join(tmpdir(), 'ptc-cli-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('serve', () => {
  it('prints one readable start line (base URL with /v1, store and path, workers, scenario rules) and answers GET / and GET /v1', async () => {
    const dataDir = join(scratch, 'data');
    const server = await serveCli(['--workers', '1', '--data-dir', dataDir, '--scenarios', 'examples/scenario/inventory.yaml']);
    try {
      expect(server.startLine).toMatch(
        /^ptc-emulator \d+\.\d+\.\d+ · API at http:\/\/127\.0\.0\.1:\d+\/v1 · store sqlite \(.*ptc-emulator\.sqlite\) · 1 worker · 1 scenario rule from examples\/scenario\/inventory\.yaml · autopilot on$/,
      );
      expect(server.startLine).toContain(join(dataDir, 'ptc-emulator.sqlite'));
      // Nothing else at start: no raw log line beside it.
      expect(server.output().trim().split('\n')).toEqual([server.startLine]);
      for (const path of ['/', '/v1']) {
        const response = await fetch(`${server.origin}${path}`);
        expect(response.status).toBe(200);
        const body = (await response.json()) as Record<string, unknown>;
        expect(body).toMatchObject({ object: 'ptc_emulator', name: 'ptc-emulator', base_url: `${server.origin}/v1` });
        expect(body.docs).toMatch(/^https:\/\//);
      }
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('takes every setting as a flag, which wins over the environment', async () => {
    // PTC_MAX_CALLS from the environment is not a number: the flag mends it.
    const server = await serveCli(['--store', 'memory', '--workers', '0', '--models', 'from-flag', '--max-calls', '5'], {
      PTC_MODELS: 'from-env',
      PTC_STORE: 'sqlite',
      PTC_MAX_CALLS: 'many',
    });
    try {
      expect(server.startLine).toContain('store memory (lost on exit) · isolates in process');
      const models = (await (await fetch(`${server.origin}/v1/models`)).json()) as { data: { id: string }[] };
      expect(models.data.map((model) => model.id)).toEqual(['from-flag']);
    } finally {
      await server.stop();
    }
  });

  it('--help lists the flag of every setting of the configuration table', async () => {
    const { code, stdout } = await runCli(['serve', '--help']);
    expect(code).toBe(0);
    for (const row of settingRows()) {
      expect(stdout).toContain(`${settingFlag(row.env)} <value>`);
      expect(stdout).toContain(row.env);
    }
  });

  it.each([
    ['an unknown flag', ['--bogus', '1'], {}, /unknown flag --bogus for serve/],
    ['a flag without a value', ['--port'], {}, /--port needs a value/],
    ['a bad LOG_LEVEL', [], { LOG_LEVEL: 'verbose' }, /LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"/],
    ['a bad value given by flag', ['--max-calls', 'many'], {}, /^ptc-emulator: --max-calls \(PTC_MAX_CALLS must be a whole number/],
    ['an unknown store', ['--store', 'disk'], {}, /PTC_STORE must be one of memory, sqlite, redis, got "disk"/],
    ['a port past 65535', ['--port', '99999'], {}, /PORT must be a whole number from 0 to 65535, got "99999"/],
    ['a port in hexadecimal', ['--port', '0x1F90'], {}, /PORT must be a whole number from 0 to 65535, got "0x1F90"/],
    ['a delay Node timers cannot hold', ['--shutdown-timeout-ms', '3000000000'], {}, /PTC_SHUTDOWN_TIMEOUT_MS must be a whole number from 0 to 2147483647/],
    ['an empty host', ['--host='], {}, /HOST must not be empty/],
    ['a missing scenario file', ['--scenarios', 'no/such.yaml'], {}, /Scenario file no\/such\.yaml: ENOENT/],
  ])('%s is one line on stderr and exit code 2', async (_, args, env, message) => {
    const { code, stdout, stderr } = await runCli(['serve', '--port', '0', '--store', 'memory', ...args], { env: cleanEnv(env) });
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(message);
  });

  it('with a Redis store it cannot reach, it serves and warns in one line that the store is unavailable', async () => {
    const server = await serveCli(['--store', 'redis', '--workers', '0'], { REDIS_URL: `redis://127.0.0.1:${await closedPort()}` });
    try {
      await expect
        .poll(() => server.output(), { timeout: 15_000 })
        .toMatch(/ptc-emulator: warning: the response store is unavailable \(Redis ping failed: .*\); requests that need it are answered 503 until it is back/);
      expect((await fetch(`${server.origin}/health`)).status).toBe(503);
    } finally {
      await server.stop();
    }
  });

  it('a port in use is one line and exit code 2', async () => {
    const holder = createServer().listen(0, '127.0.0.1');
    await once(holder, 'listening');
    const { port } = holder.address() as { port: number };
    try {
      const { code, stderr } = await runCli(['serve', '--store', 'memory', '--workers', '0', '--port', String(port)]);
      expect(code).toBe(2);
      expect(stderr.trim()).toBe(`ptc-emulator: port ${port} on 127.0.0.1 is already in use (set --port or PORT; 0 picks a free one)`);
    } finally {
      holder.close();
    }
  });

  it('a data directory it cannot use is one line and exit code 2', async () => {
    const file = join(scratch, 'a-file');
    writeFileSync(file, '');
    const { code, stderr } = await runCli(['serve', '--port', '0', '--data-dir', file]);
    expect(code).toBe(2);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(new RegExp(`PTC_DATA_DIR ${file} cannot be used: ${file}: (EEXIST|ENOTDIR)`));
  });

  it.each([
    ['a directory where its key file goes', 'fingerprint.key', /PTC_DATA_DIR .* cannot be used: EISDIR/],
    ['a SQLite file that is not one', 'ptc-emulator.sqlite', /PTC_DATA_DIR .* cannot be used: file is not a database/],
    ['an empty key file', 'empty-key', /the key file .*fingerprint\.key is empty: delete it/],
  ])('a data directory holding %s is one line and exit code 2', async (_, what, message) => {
    const dataDir = mkdtempSync(join(scratch, 'data-'));
    if (what === 'fingerprint.key') mkdirSync(join(dataDir, what));
    else if (what === 'empty-key') writeFileSync(join(dataDir, 'fingerprint.key'), '\n');
    else writeFileSync(join(dataDir, what), 'not a database, just some text long enough to fill a header');
    const { code, stderr } = await runCli(['serve', '--port', '0', '--workers', '0', '--data-dir', dataDir]);
    expect(code).toBe(2);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(message);
  });

  it('a server started without the Node flag runs itself again with it, and a SIGKILL of the first process stops the second', async () => {
    const server = await serveCli(['--store', 'memory', '--workers', '0']);
    try {
      // Isolates in process: a program runs only because the CLI supplied --no-node-snapshot.
      const response = await fetch(`${server.origin}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', input: '```js\ntext(6 * 7)\n```', tools: [{ type: 'programmatic_tool_calling' }] }),
      });
      expect(
        ((await response.json()) as { output_text?: string; output: { type: string; result?: string }[] }).output.find((item) => item.type === 'program_output')
          ?.result,
      ).toBe('42');
      const children = readFileSync(`/proc/${server.child.pid}/task/${server.child.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
      expect(children).toHaveLength(1);
      const reexecuted = children[0]!;
      expect(readFileSync(`/proc/${reexecuted}/cmdline`, 'utf8').split('\0')).toContain('--no-node-snapshot');
      server.child.kill('SIGKILL');
      // The re-executed server notices its parent is gone and drains; allow it ample time.
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && alive(reexecuted)) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(alive(reexecuted)).toBe(false);
    } finally {
      // Whatever failed above, neither process outlives the test.
      try {
        process.kill(-server.child.pid!, 'SIGKILL');
      } catch {
        // Both gone, as they should be.
      }
    }
  });

  it('a worker frozen for a runaway does not outlive a server killed with SIGKILL: the other worker kills it when it sees the server go', async () => {
    const server = await serveCli(['--store', 'memory', '--workers', '1']);
    // The server is the CLI's process, or its child when it ran itself again with the Node flag.
    const descendants = (pid: number): number[] => {
      const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
      return children.flatMap((child) => [child, ...descendants(child)]);
    };
    const stat = (pid: number): string[] => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    let frozen: number | undefined;
    try {
      // Fills its heap, and goes on in ICU after its isolate is disposed: its worker is frozen for it.
      const code = ICU_RUNAWAY;
      void fetch(`${server.origin}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', store: false, input: `\`\`\`js\n${code}\n\`\`\``, tools: [{ type: 'programmatic_tool_calling' }] }),
      }).catch(() => {});
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline && frozen === undefined) {
        try {
          frozen = descendants(server.child.pid!).find((pid) => stat(pid)[0] === 'T');
        } catch {
          // A process ended while it was read: look again.
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(frozen).toBeDefined();
      expect(readFileSync(`/proc/${frozen}/cmdline`, 'utf8')).toContain('worker-main');
      // Frozen, the worker cannot see its channel close; the server goes without a chance to kill it.
      process.kill(Number(stat(frozen!)[1]), 'SIGKILL');
      const gone = Date.now() + 20_000;
      while (Date.now() < gone && alive(frozen!)) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(alive(frozen!)).toBe(false);
    } finally {
      // Whatever failed above, no process outlives the test.
      for (const pid of [frozen, -server.child.pid!]) {
        try {
          if (pid !== undefined) process.kill(pid, 'SIGKILL');
        } catch {
          // Gone, as it should be.
        }
      }
    }
  });
});

function alive(pid: number): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
    return state !== 'Z';
  } catch {
    return false;
  }
}

describe('run', () => {
  const example = (file: string) => `examples/run/${file}`;

  it('runs a program file with its tools and answers, printing its batches and program_output (exit 0)', async () => {
    const { code, stdout } = await runCli(['run', example('inventory.js'), '--tools', example('tools.json'), '--outputs', example('answers.json')]);
    expect(code).toBe(0);
    expect(stdout).toMatch(
      /^program call_\w+\nbatch 1\n {2}call get_inventory\(\{"sku":"sku_123"\}\)\n {2}call get_demand_forecast\(\{"sku":"sku_123","days":30\}\)\n/,
    );
    expect(stdout).toContain('program_output completed: {"sku":"sku_123","reorder":true,"shortfall":28}');
  });

  it('--json prints the output items as the Responses API returns them', async () => {
    const { code, stdout } = await runCli(['run', example('inventory.js'), '--tools', example('tools.json'), '--outputs', example('answers.json'), '--json']);
    expect(code).toBe(0);
    const items = JSON.parse(stdout) as { type: string; caller?: { type: string } }[];
    expect(items.map((item) => item.type)).toEqual([
      'program',
      'function_call',
      'function_call',
      'function_call_output',
      'function_call_output',
      'program_output',
      'message',
    ]);
    expect(items[1]!.caller?.type).toBe('program');
  });

  it('stops with exit code 3 at a call the outputs file cannot answer', async () => {
    const { code, stdout, stderr } = await runCli(['run', example('inventory.js'), '--tools', example('tools.json')]);
    expect(code).toBe(3);
    expect(stdout).toContain('call get_inventory');
    expect(stderr.trim()).toBe('ptc-emulator: waiting on get_inventory: the outputs file has no answer for it');
  });

  it('a program that fails ends incomplete with its code (exit 1); strict parameters hold as on the server', async () => {
    const program = join(scratch, 'bad-arguments.js');
    writeFileSync(program, 'await tools.get_inventory({ sku: 42 });');
    const { code, stdout } = await runCli(['run', program, '--tools', example('tools.json'), '--outputs', example('answers.json')]);
    expect(code).toBe(1);
    expect(stdout).toContain(
      'program_output incomplete: {"error":{"code":"program_threw","message":"TypeError: tools.get_inventory: arguments.sku must be string',
    );
  });

  it("makes a namespace's tools callable by programs too, and answers them by their full name", async () => {
    const program = join(scratch, 'namespace.js');
    const tools = join(scratch, 'namespace-tools.json');
    const answers = join(scratch, 'namespace-answers.json');
    writeFileSync(program, "text(await tools.crm.add_note({ text: 'hi' }))");
    writeFileSync(
      tools,
      JSON.stringify([{ type: 'namespace', name: 'crm', description: 'CRM', tools: [{ type: 'function', name: 'add_note', parameters: { type: 'object' } }] }]),
    );
    writeFileSync(answers, JSON.stringify({ 'crm.add_note': 'noted' }));
    const { code, stdout } = await runCli(['run', program, '--tools', tools, '--outputs', answers]);
    expect(stdout).toContain('program_output completed: noted');
    expect(code).toBe(0);
  });

  it('stops with exit code 3, saying why, at a shell call it does not answer', async () => {
    const program = join(scratch, 'shell.js');
    const tools = join(scratch, 'shell-tools.json');
    writeFileSync(program, "text(await tools.shell({ commands: ['id'] }))");
    writeFileSync(tools, JSON.stringify([{ type: 'shell' }]));
    const { code, stderr } = await runCli(['run', program, '--tools', tools]);
    expect(stderr.trim()).toBe('ptc-emulator: waiting on a shell_call, which run does not answer (it answers function and custom tools)');
    expect(code).toBe(3);
  });

  it.each([
    ['an unknown flag', ['run', 'examples/run/inventory.js', '--tool', 'x'], /^ptc-emulator: unknown flag --tool for run \(see ptc-emulator run --help\)\n$/],
    ['a flag without its value', ['run', 'examples/run/inventory.js', '--tools'], /^ptc-emulator: --tools needs a value/],
    ['no program file', ['run'], /run takes one program file/],
    ['a program file that is missing', ['run', 'no/such.js'], /cannot read program no\/such\.js: ENOENT/],
    ['a program that is not a regular file (a FIFO would block)', ['run', 'examples'], /program examples is not a regular file/],
    [
      'an outputs file nested past the depth limit',
      ['run', 'examples/run/inventory.js', '--outputs', 'test/fixtures/deep.json'],
      /outputs file test\/fixtures\/deep\.json nests deeper than/,
    ],
    [
      'a tools file that is not JSON',
      ['run', 'examples/run/inventory.js', '--tools', 'examples/run/inventory.js'],
      /tools file examples\/run\/inventory\.js is not JSON/,
    ],
    [
      'a tool the emulator refuses',
      ['run', 'examples/run/inventory.js', '--tools', 'test/fixtures/bad-tools.json'],
      /the emulator refused the program: .*\(tools\[0\]/,
    ],
  ])('%s is one line and exit code 2', async (_, args, message) => {
    const { code, stderr } = await runCli(args);
    expect(code).toBe(2);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(message);
  });
});

describe('validate', () => {
  it('says how many rules a valid scenario file holds (exit 0)', async () => {
    const { code, stdout } = await runCli(['validate', 'examples/scenario/inventory.yaml']);
    expect(code).toBe(0);
    expect(stdout.trim()).toBe('examples/scenario/inventory.yaml: 1 rule; valid');
  });

  it('names the field of an invalid one (exit 1)', async () => {
    const file = join(scratch, 'bad.yaml');
    writeFileSync(file, 'rules:\n  - match: { user: hi }\n    program: 42\n');
    const { code, stderr } = await runCli(['validate', file]);
    expect(code).toBe(1);
    expect(stderr.trim()).toMatch(new RegExp(`^ptc-emulator: Scenario file ${file}: rules\\[0\\]\\.program: `));
  });
});

it('the library used in a process without the Node flag says what is missing instead of crashing later', async () => {
  assertBuilt();
  const script = `import { runProgram } from ${JSON.stringify(new URL('../dist/runtime/index.js', import.meta.url).href)};
try { await runProgram('text(1)'); console.log('ran'); } catch (error) { console.log(error.name + ': ' + error.message); }`;
  const child = track(spawn(process.execPath, ['--input-type=module', '-e', script], { env: cleanEnv(), stdio: ['ignore', 'pipe', 'inherit'] }));
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  await once(child, 'close');
  expect(stdout.trim()).toMatch(/^MissingNodeFlagError: ptc-emulator runs programs with isolated-vm, which needs Node started with --no-node-snapshot/);
});
