import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../testing/start-emulator.ts';
import { assertBuilt, cleanEnv, track } from './support/cli.ts';

const PROGRAM_TOOLS = [
  { type: 'function' as const, name: 'lookup', parameters: { type: 'object', properties: {} }, strict: false, allowed_callers: ['programmatic' as const] },
  { type: 'programmatic_tool_calling' as const },
];

describe('startEmulator', () => {
  let emulator: RunningEmulator;
  beforeAll(async () => {
    emulator = await startEmulator({
      model: (context) => (context.phase === 'user_turn' ? { type: 'program', code: 'text(await tools.lookup({}))' } : undefined),
      config: { apiKey: 'secret' },
    });
  });
  afterAll(() => emulator.close());

  it('serves on a free loopback port; its journal lists what ran and reset() empties it', async () => {
    expect(emulator.baseURL).toBe(`http://127.0.0.1:${emulator.port}/v1`);
    const client = new OpenAI({ baseURL: emulator.baseURL, apiKey: 'secret', maxRetries: 0 });
    const first = await client.responses.create({ model: 'm', input: 'go', tools: PROGRAM_TOOLS });
    const call = first.output.find((item) => item.type === 'function_call')!;
    const final = await client.responses.create({
      model: 'm',
      previous_response_id: first.id,
      tools: PROGRAM_TOOLS,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'found', caller: call.caller }],
    });
    expect(final.output.find((item) => item.type === 'program_output')).toMatchObject({ status: 'completed', result: 'found' });
    const journal = await emulator.journal();
    expect(journal.map((entry) => [entry.method, entry.path, entry.status])).toEqual([
      ['POST', '/v1/responses', 200],
      ['POST', '/v1/responses', 200],
    ]);
    await emulator.reset();
    expect(await emulator.journal()).toEqual([]);
  });

  it('runs isolates in a worker process, so the test runner needs no Node flag', async () => {
    const health = (await (await fetch(`${emulator.url}/health`)).json()) as { workers?: number[] };
    expect(health.workers).toHaveLength(1);
  });

  it('takes some limits and keeps the defaults of the rest, checks them, and reads no setting from the environment', async () => {
    const saved = process.env.PTC_CPU_TIME_MS;
    process.env.PTC_CPU_TIME_MS = 'fast';
    try {
      const limited = await startEmulator({
        config: { limits: { maxCalls: 1 } },
        model: () => ({ type: 'program', code: 'await tools.lookup({}); await tools.lookup({})' }),
      });
      try {
        const client = new OpenAI({ baseURL: limited.baseURL, apiKey: 'any', maxRetries: 0 });
        const first = await client.responses.create({ model: 'm', input: 'go', tools: PROGRAM_TOOLS });
        const call = first.output.find((item) => item.type === 'function_call')!;
        const next = await client.responses.create({
          model: 'm',
          previous_response_id: first.id,
          tools: PROGRAM_TOOLS,
          input: [{ type: 'function_call_output', call_id: call.call_id, output: 'x', caller: call.caller }],
        });
        expect(JSON.parse(next.output.find((item) => item.type === 'program_output')!.result)).toMatchObject({ error: { code: 'call_limit_exceeded' } });
      } finally {
        await limited.close();
      }
      await expect(startEmulator({ config: { limits: { maxCalls: -1 } } })).rejects.toThrow('config.limits: Limit maxCalls must be a positive integer, got -1');
    } finally {
      if (saved === undefined) delete process.env.PTC_CPU_TIME_MS;
      else process.env.PTC_CPU_TIME_MS = saved;
    }
  });

  it('close() can be called twice', async () => {
    const other = await startEmulator();
    await other.close();
    await other.close();
  });
});

describe('nothing is written to disk', () => {
  const dist = (path: string) => JSON.stringify(new URL(`../dist/${path}`, import.meta.url).href);
  const converse = `
const body = { model: 'm', input: '\`\`\`js\\ntext(await tools.f({}))\\n\`\`\`', tools: [{ type: 'function', name: 'f', parameters: { type: 'object' }, allowed_callers: ['programmatic'] }, { type: 'programmatic_tool_calling' }] };
async function converse(origin) {
  const post = async (payload) => (await fetch(origin + '/v1/responses', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload) })).json();
  const first = await post(body);
  const call = first.output.find((item) => item.type === 'function_call');
  const last = await post({ ...body, previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: call.call_id, output: 'ok', caller: call.caller }] });
  return last.output.find((item) => item.type === 'program_output').result;
}
`;

  /** Runs the script in an empty working directory; returns what it printed and what the directory then holds. */
  async function inEmptyDirectory(script: string, env: Record<string, string>): Promise<{ stdout: string; files: string[] }> {
    assertBuilt();
    const cwd = mkdtempSync(join(tmpdir(), 'ptc-helper-cwd-'));
    const file = join(tmpdir(), `${cwd.split('/').pop()}.mjs`);
    try {
      writeFileSync(file, `${converse}\n${script}`);
      const child = track(spawn(process.execPath, [file], { cwd, env: cleanEnv(env), detached: true, stdio: ['ignore', 'pipe', 'inherit'] }));
      let stdout = '';
      child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      const [code] = (await once(child, 'close')) as [number | null];
      expect(code).toBe(0);
      return { stdout, files: readdirSync(cwd) };
    } finally {
      rmSync(cwd, { recursive: true, force: true });
      rmSync(file, { force: true });
    }
  }

  it('by startEmulator, even when the environment asks for SQLite in ./data', async () => {
    const { stdout, files } = await inEmptyDirectory(
      `import { startEmulator } from ${dist('testing/index.js')};
const emulator = await startEmulator();
console.log(await converse(emulator.url));
await emulator.close();`,
      { PTC_STORE: 'sqlite', PTC_DATA_DIR: './data' },
    );
    expect(stdout).toBe('ok\n');
    expect(files).toEqual([]);
  });

  it('by buildServer with the memory store and no data directory', async () => {
    const { stdout, files } = await inEmptyDirectory(
      `import { buildServer } from ${dist('server/index.js')};
const app = await buildServer({ store: 'memory', logger: false, config: { workers: 1 } });
await app.listen({ port: 0, host: '127.0.0.1' });
console.log(await converse('http://127.0.0.1:' + app.server.address().port));
await app.close();`,
      { PTC_STORE: 'sqlite' },
    );
    expect(stdout).toBe('ok\n');
    expect(files).toEqual([]);
  });
});
