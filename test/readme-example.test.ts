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

it('the by-hand loop of docs/AGENTS.md runs as written and prints the program\'s result', async () => {
  const doc = readFileSync(new URL('../docs/AGENTS.md', import.meta.url), 'utf8');
  const example = /## A turn by hand[\s\S]*?````js\n([\s\S]*?)````/.exec(doc)?.[1];
  expect(example).toContain('http://127.0.0.1:8787/v1');
  const directory = mkdtempSync(fileURLToPath(new URL('../node_modules/.agents-example-', import.meta.url)));
  try {
    const script = join(directory, 'agents-loop.mjs');
    writeFileSync(script, example!.replace('http://127.0.0.1:8787/v1', server.baseURL));
    const { stdout } = await promisify(execFile)(process.execPath, [script], { timeout: 20_000 });
    expect(stdout.trim()).toBe('{"value":42}');
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});

it("the README's embedding example runs as written from a project that installed the package", async () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const example = /## Embedding and the library[\s\S]*?```js\n([\s\S]*?)```/.exec(readme)?.[1];
  expect(example).toContain('from "ptc-emulator"');
  // Inside the package's own folder, `ptc-emulator` resolves to itself through its exports map,
  // as it does from a project that installed it (test:package checks that case).
  const directory = mkdtempSync(fileURLToPath(new URL('../tmp-scratch-', import.meta.url)));
  try {
    const script = join(directory, 'embed.mjs');
    writeFileSync(
      script,
      `${example!}
const { port } = app.server.address();
const post = async (body) => (await fetch(\`http://127.0.0.1:\${port}/v1/responses\`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })).json();
const tools = [{ type: "function", name: "get_inventory", parameters: { type: "object" }, allowed_callers: ["programmatic"] }, { type: "programmatic_tool_calling" }];
const first = await post({ model: "m", input: "How many?", tools });
const call = first.output.find((item) => item.type === "function_call");
const last = await post({ model: "m", tools, previous_response_id: first.id, input: [{ type: "function_call_output", call_id: call.call_id, output: "42", caller: call.caller }] });
console.log(last.output_text ?? last.output.at(-1).content[0].text);
await app.close();
`,
    );
    // No Node flag: the server runs its isolates in worker processes, which get it themselves.
    const { stdout } = await promisify(execFile)(process.execPath, [script], { timeout: 30_000, cwd: directory, env: { PATH: process.env.PATH ?? '' } });
    expect(stdout.trim()).toBe('Result: 42');
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
});
