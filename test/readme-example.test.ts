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

/**
 * Runs the SDK example fenced with ```` under `heading` of a doc as a script against the test
 * server (its base URL swapped in), from a scratch directory inside the project so that
 * `import "openai"` resolves from node_modules; what it printed.
 */
async function runSdkExample(docPath: string, heading: string, scriptName: string): Promise<string> {
  const doc = readFileSync(new URL(docPath, import.meta.url), 'utf8');
  const example = new RegExp(`## ${heading}[\\s\\S]*?\`\`\`\`js\\n([\\s\\S]*?)\`\`\`\``).exec(doc)?.[1];
  expect(example).toContain('http://127.0.0.1:8787/v1');
  const directory = mkdtempSync(fileURLToPath(new URL(`../node_modules/.${scriptName}-`, import.meta.url)));
  try {
    const script = join(directory, `${scriptName}.mjs`);
    writeFileSync(script, example!.replace('http://127.0.0.1:8787/v1', server.baseURL));
    const { stdout } = await promisify(execFile)(process.execPath, [script], { timeout: 20_000 });
    return stdout.trim();
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

it("the README's SDK example runs as written and prints the program's result", async () => {
  expect(await runSdkExample('../README.md', 'Use it from the SDK', 'example')).toBe(
    'get_inventory returned available_units 42; get_demand returned requested_units 31.',
  );
});

it("the by-hand loop of docs/AGENTS.md runs as written and prints the program's result", async () => {
  expect(await runSdkExample('../docs/AGENTS.md', 'A turn by hand', 'agents-loop')).toBe(
    'get_price returned sku sku_123 and price 7; get_stock returned sku sku_123 and units 6.',
  );
});

it("the README's vitest snippet is examples/vitest/weather.test.mjs, which test/examples.test.ts runs", () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const snippet = /then \(vitest\)[\s\S]*?```js\n([\s\S]*?)```/.exec(readme)?.[1];
  expect(snippet).toBe(readFileSync(new URL('../examples/vitest/weather.test.mjs', import.meta.url), 'utf8'));
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
