import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import type { Tool } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentLoop } from './support/agent-loop.ts';
import { cleanEnv, ROOT, serveCli, type ServingCli } from './support/cli.ts';

/**
 * A new user's first contact: their client loop, unchanged, against `ptc-emulator serve`
 * started with no flags and no scenario anywhere. The autopilot must run a real program that
 * calls their tools, with arguments from their message, and end with a message stating what
 * the tools returned: the guide's loops (JS with openai 7.60.0, Python with the official
 * package from the registry), the docs/AGENTS.md loop, and a tool set of other names.
 */

const run = promisify(execFile);
const TRAVEL_TOOLS = JSON.parse(readFileSync(join(ROOT, 'test/fixtures/travel-tools.json'), 'utf8')) as Tool[];
const TRAVEL_REQUEST = 'Plan a business trip from LIS to NRT on 2027-03-02: check the weather outlook for the city Tokyo for 5 days and search flights.';
const TRAVEL_ARGUMENTS = [
  `get_weather_outlook ${JSON.stringify({ city: 'Tokyo', days: 5 })}`,
  `search_flights ${JSON.stringify({ cabin: 'business', date: '2027-03-02', route: { from: 'LIS', to: 'NRT' } })}`,
];

/** The Python with the official `openai` package that CI installs in a venv of its own (.ci/run). */
const PYTHON = process.env['PTC_TEST_PYTHON'];
if (PYTHON === undefined && process.env['CI'])
  throw new Error('PTC_TEST_PYTHON is not set: .ci/run makes a venv with the openai package and names its python there');

let server: ServingCli;
let directory: string;
let baseURL: string;
beforeAll(async () => {
  // A directory of its own (inside the project, so that tsx and openai resolve): `serve` keeps
  // its SQLite store and key in ./data there, as it would for a user.
  directory = mkdtempSync(join(ROOT, 'node_modules', '.autopilot-serve-'));
  server = await serveCli([], { PORT: '0' }, { cwd: directory });
  baseURL = `${server.origin}/v1`;
});
afterAll(async () => {
  await server?.stop();
  rmSync(directory, { recursive: true, force: true });
});

const client = (): OpenAI => new OpenAI({ baseURL, apiKey: 'any', maxRetries: 0 });
const guideTools = (): Tool[] => {
  const source = readFileSync(join(ROOT, 'examples/sdk-store-false.mjs'), 'utf8');
  return new Function(`return ${/const tools = (\[[\s\S]*?\n\]);/.exec(source)![1]!}`)() as Tool[];
};

describe('ptc-emulator serve, started with no flags', () => {
  it('says so in its start line: the autopilot decides what nothing else does', () => {
    expect(server.startLine).toContain('autopilot');
  });

  it.each([
    ['store: false', false],
    ['previous_response_id', true],
  ])("the guide's JS loop (%s): a program calls both tools with sku_123, and the message states both numbers", async (_, store) => {
    const result = await agentLoop(
      client(),
      { model: 'gpt-6-astra', input: 'Compare inventory with demand for sku_123.', tools: guideTools() },
      {
        functions: { get_inventory: ({ sku }) => ({ sku, available_units: 42 }), get_demand: ({ sku }) => ({ sku, requested_units: 31 }) },
      },
      { store },
    );
    const [first] = result.responses;
    const program = first!.output.find((item) => item.type === 'program')!;
    expect(program.code).toContain('tools.get_inventory(');
    const calls = first!.output.filter((item) => item.type === 'function_call');
    expect(calls.map((call) => [call.name, call.arguments, call.caller])).toEqual([
      ['get_inventory', '{"sku":"sku_123"}', { type: 'program', caller_id: program.call_id }],
      ['get_demand', '{"sku":"sku_123"}', { type: 'program', caller_id: program.call_id }],
    ]);
    expect(result.text).toBe('get_inventory returned sku sku_123 and available_units 42; get_demand returned sku sku_123 and requested_units 31.');
  });

  it.each(['sdk-store-false.mjs', 'sdk-previous-response-id.mjs'])('examples/%s prints the message its header says', async (file) => {
    const source = readFileSync(join(ROOT, 'examples', file), 'utf8');
    const expected = /→ (.*)$/m.exec(source)![1]!;
    const { stdout } = await run(process.execPath, [join(ROOT, 'examples', file)], { env: cleanEnv({ OPENAI_BASE_URL: baseURL }), timeout: 30_000 });
    expect(stdout.trim()).toBe(expected);
  });

  it("the docs/AGENTS.md by-hand loop: the session's program calls both tools, and the message states both numbers", async () => {
    const doc = readFileSync(join(ROOT, 'docs/AGENTS.md'), 'utf8');
    const example = /## A turn by hand[\s\S]*?````js\n([\s\S]*?)````/.exec(doc)![1]!;
    expect(example).not.toContain('```js');
    const scratch = mkdtempSync(join(ROOT, 'node_modules', '.agents-loop-'));
    try {
      writeFileSync(join(scratch, 'agents-loop.mjs'), example.replace('http://127.0.0.1:8787/v1', baseURL));
      const { stdout } = await run(process.execPath, [join(scratch, 'agents-loop.mjs')], { env: cleanEnv(), timeout: 30_000 });
      expect(stdout.trim()).toBe('get_price returned sku sku_123 and price 7; get_stock returned sku sku_123 and units 6.');
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it.each([
    ['store: false', false],
    ['previous_response_id', true],
  ])('a tool set of other names, with nested and enum parameters (JS, %s)', async (_, store) => {
    const seen: string[] = [];
    const result = await agentLoop(
      client(),
      { model: 'gpt-6-astra', input: TRAVEL_REQUEST, tools: TRAVEL_TOOLS },
      {
        functions: {
          search_flights: (args) => (seen.push(`search_flights ${JSON.stringify(sorted(args))}`), { cheapest_fare: 612.5, flights: 3 }),
          get_weather_outlook: (args) => (seen.push(`get_weather_outlook ${JSON.stringify(sorted(args))}`), { high_c: 14, summary: 'mild' }),
        },
      },
      { store },
    );
    expect(seen.sort()).toEqual(TRAVEL_ARGUMENTS);
    expect(result.text).toContain('cheapest_fare 612.5');
    expect(result.text).toContain('high_c 14');
  });

  describe.skipIf(PYTHON === undefined)('the official openai package for Python (PTC_TEST_PYTHON)', () => {
    it("the guide's Python loop, unchanged", async () => {
      const { stdout } = await run(PYTHON!, [join(ROOT, 'examples/guide-loop.py')], {
        env: cleanEnv({ OPENAI_BASE_URL: baseURL, OPENAI_API_KEY: 'any' }),
        timeout: 60_000,
      });
      expect(stdout.trim()).toBe('get_inventory returned sku sku_123 and available_units 42; get_demand returned sku sku_123 and requested_units 31.');
    });

    it.each(['store', 'stateless'])('the same loop over the travel tools (%s)', async (mode) => {
      const { stdout, stderr } = await run(PYTHON!, [join(ROOT, 'test/fixtures/travel-loop.py'), TRAVEL_REQUEST, mode], {
        env: cleanEnv({ OPENAI_BASE_URL: baseURL, OPENAI_API_KEY: 'any' }),
        timeout: 60_000,
      });
      expect(stderr.trim().split('\n').sort()).toEqual(TRAVEL_ARGUMENTS);
      expect(stdout).toContain('cheapest_fare 612.5');
      expect(stdout).toContain('high_c 14');
    });
  });
});

/** An object with its keys sorted, deeply, as Python's json.dumps(sort_keys=True) writes it. */
function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, inner]) => [key, sorted(inner)]),
  );
}
