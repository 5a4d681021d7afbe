import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, cleanEnv, ROOT, serveCli, track } from './support/cli.ts';
import { startServer, type RunningServer } from './support/server.ts';

/**
 * Every runnable file of examples/ runs here as a user would run it (`node FILE`, `node --test`,
 * `vitest run`), so the examples cannot drift from what the emulator does. The CLI's `run`
 * example runs in test/cli.test.ts.
 */
async function node(args: readonly string[], cwd: string, env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = track(spawn(process.execPath, args, { cwd, env: cleanEnv(env), detached: true, stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [code] = (await once(child, 'close')) as [number | null];
  clearTimeout(timer);
  return { code, stdout, stderr };
}

const examples = `${ROOT}examples`;

describe('SDK loops against a running server', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it.each([
    ['sdk-store-false.mjs', 'get_inventory returned sku sku_123 and available_units 42; get_demand returned sku sku_123 and requested_units 31.'],
    ['sdk-previous-response-id.mjs', 'get_inventory returned sku sku_123 and available_units 42; get_demand returned sku sku_123 and requested_units 70.'],
    ['agents-session.mjs', 'get_price returned sku sku_1 and price 7; get_stock returned sku sku_1 and units 6.'],
  ])('%s prints what its header says', async (file, expected) => {
    const header = readFileSync(`${examples}/${file}`, 'utf8');
    expect(header).toContain(`→ ${expected}`);
    const { code, stdout, stderr } = await node([file], examples, { OPENAI_BASE_URL: server.baseURL });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout.trim()).toBe(expected);
  });
});

describe('the scenario example', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ scenarios: `${examples}/scenario/inventory.yaml` });
  });
  afterAll(() => server.close());

  it('client.mjs against a server loaded with inventory.yaml prints expected-output.txt', async () => {
    const { code, stdout } = await node(['client.mjs'], `${examples}/scenario`, { OPENAI_BASE_URL: server.baseURL });
    expect(code).toBe(0);
    expect(stdout).toBe(readFileSync(`${examples}/scenario/expected-output.txt`, 'utf8'));
  });
});

describe('the test helper examples, run by their runners with no Node flag', () => {
  beforeAll(assertBuilt);

  it('node --test passes the node:test example', async () => {
    // As examples/README.md says: from examples/, with a glob (Node 24's --test takes files and
    // globs, not a directory), and its default reporter.
    const { code, stdout } = await node(['--test', 'node-test/*.test.mjs'], examples);
    expect(stdout).toMatch(/ℹ pass 1\nℹ fail 0/);
    expect(code).toBe(0);
  });

  it('vitest run passes the vitest examples', async () => {
    // As examples/README.md says: from examples/, with the example's config.
    const { code, stdout, stderr } = await node([`${ROOT}node_modules/vitest/vitest.mjs`, 'run', '--config', 'vitest/vitest.config.mjs'], examples, {
      CI: 'true',
      NO_COLOR: '1',
    });
    expect(`${stdout}${stderr}`).toMatch(/✓ weather\.test\.mjs/);
    expect(`${stdout}${stderr}`).toMatch(/Tests\s+2 passed/);
    expect(code).toBe(0);
  });
});

describe('the cassette example', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ env: { PTC_REPLAY: `${examples}/cassette/cassettes` } });
  });
  afterAll(() => server.close());

  it('scenario/client.mjs against a server replaying cassette/cassettes prints scenario/expected-output.txt', async () => {
    const { code, stdout } = await node(['client.mjs'], `${examples}/scenario`, { OPENAI_BASE_URL: server.baseURL });
    expect(code).toBe(0);
    expect(stdout).toBe(readFileSync(`${examples}/scenario/expected-output.txt`, 'utf8'));
  });
});

describe('the model backend example', () => {
  it('client.mjs against `serve --model-backend URL --model NAME` with scripted-backend.mjs prints expected-output.txt', async () => {
    const folder = `${examples}/model-backend`;
    // The example's stand-in for a model server, on a free port: its first line is its API base.
    const backend = track(
      spawn(process.execPath, ['scripted-backend.mjs'], { cwd: folder, env: cleanEnv({ PORT: '0' }), detached: true, stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    try {
      const [chunk] = (await once(backend.stdout!, 'data')) as [Buffer];
      const backendUrl = chunk.toString('utf8').trim();
      expect(backendUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      const serving = await serveCli(['--model-backend', backendUrl, '--model', 'example-model', '--store', 'memory', '--workers', '0']);
      try {
        expect(serving.startLine).toContain(`model backend ${backendUrl} (example-model)`);
        const { code, stdout, stderr } = await node(['client.mjs'], folder, { OPENAI_BASE_URL: `${serving.origin}/v1` });
        expect(stderr).toBe('');
        expect(code).toBe(0);
        expect(stdout).toBe(readFileSync(`${folder}/expected-output.txt`, 'utf8'));
      } finally {
        await serving.stop();
      }
    } finally {
      backend.kill('SIGKILL');
    }
  });
});
