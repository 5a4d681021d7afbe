import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startServer, type RunningServer } from './support/server.ts';

let server: RunningServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

it("the README's SDK example runs as written and prints the program's result", async () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const example = /## Use it from the SDK[\s\S]*?````js\n([\s\S]*?)````/.exec(readme)?.[1];
  expect(example).toContain('http://127.0.0.1:8787/v1');
  // A scratch directory inside the project, so `import "openai"` resolves from node_modules.
  const directory = mkdtempSync(fileURLToPath(new URL('../node_modules/.readme-example-', import.meta.url)));
  try {
    const script = join(directory, 'example.mjs');
    writeFileSync(script, example!.replace('http://127.0.0.1:8787/v1', server.baseURL));
    const { stdout } = await promisify(execFile)(process.execPath, [script], { timeout: 20_000 });
    expect(stdout.trim()).toBe('{"units":42}');
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});
