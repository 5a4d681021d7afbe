import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, track } from './support/cli.ts';
import { inlineProgram } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// The official `openai` package for Python (3.22.1, the venv .ci/run makes) driving a listening
// emulator as a Python user writes it: the scripts in test/fixtures/python-sdk/ are the guide's
// client loop over its two tools, answering each program call and copying its `caller`, with
// store (previous_response_id), without (the output items resent, program and program_output
// included) and through a conversation; streamed through the SDK's stream helper, through
// `create(stream=True)` and on AsyncOpenAI; with a tool that fails; and through the SDK's
// parse helpers. The program is the user's: a fenced js block in the message (docs/STAND-IN.md).
// Each script prints one JSON line of what its loop did (the arguments each tool got, the caller
// it copied, each item as the SDK typed it), and checks what it read from the wire (every
// response, every raw stream event, every listed item) against the SDK's own types: pydantic
// validation of the member the SDK chose by `type`, and no field the types lack (`wire`).

/** The Python with the official openai package that CI installs in a venv of its own (.ci/run). */
const PYTHON = process.env['PTC_TEST_PYTHON'];
if (PYTHON === undefined && process.env['CI'])
  throw new Error('PTC_TEST_PYTHON is not set: .ci/run makes a venv with the openai package and names its python there');

const FIXTURES = fileURLToPath(new URL('./fixtures/python-sdk/', import.meta.url));

/** The guide's program: both tools at once, the results combined into one JSON object. */
const GUIDE_PROGRAM = `const [stock, demand] = await Promise.all([tools.get_inventory({ sku: 'sku_123' }), tools.get_demand({ sku: 'sku_123' })]);
text(JSON.stringify({ sku: stock.sku, available_units: stock.available_units, requested_units: demand.requested_units, shortage_units: Math.max(demand.requested_units - stock.available_units, 0) }));`;
const GUIDE_RESULT = '{"sku":"sku_123","available_units":42,"requested_units":31,"shortage_units":0}';

/** A second turn's program, pausing twice: the second call takes an argument from the first's result. */
const SEQUENTIAL_PROGRAM = `const stock = await tools.get_inventory({ sku: 'sku_777' });
const demand = await tools.get_demand({ sku: stock.sku });
text(\`\${stock.sku}: \${stock.available_units} in stock, \${demand.requested_units} asked for\`);`;
const SEQUENTIAL_RESULT = 'sku_777: 42 in stock, 31 asked for';

interface Summary {
  type: string;
  class: string;
  id: string;
  call_id?: string;
  code?: string;
  name?: string;
  arguments?: string;
  caller?: Caller | null;
  status?: string;
  result?: string;
  text?: string;
}
interface Caller {
  type: string;
  caller_id?: string;
}
interface Report {
  calls: { name: string; arguments: Record<string, unknown>; caller: Caller | null; response: number }[];
  responses: { id: string; status: string; previous_response_id: string | null; output: Summary[]; output_text: string }[];
  /** Every departure from the Python SDK's types the script found: none, or the test says which. */
  wire: string[];
  text?: string;
  [fact: string]: unknown;
}

let server: RunningServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.close());

/** The Python processes still running: killed after each test, however it ended (and by track() when the file ends). */
const running = new Set<ChildProcess>();
afterEach(async () => {
  await Promise.all(
    [...running].map(
      (child) =>
        new Promise<void>((resolve) => {
          child.once('close', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
});

/** Runs a script of test/fixtures/python-sdk/ against the server; its report, or an error carrying its stderr. */
function python(script: string, args: string[], knobs: Record<string, string> = {}): Promise<Report> {
  const child = track(
    spawn(PYTHON!, [`${FIXTURES}${script}`, ...args], {
      env: cleanEnv({
        OPENAI_BASE_URL: server.baseURL,
        OPENAI_API_KEY: 'test-key',
        PTC_KNOB_HEADERS: JSON.stringify(knobs),
        // Nothing written into the fixtures directory (ptc_client's bytecode).
        PYTHONDONTWRITEBYTECODE: '1',
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      running.delete(child);
      if (code !== 0) return reject(new Error(`${script} ${args.slice(0, 2).join(' ')} ended with ${code ?? signal}:\n${stderr}${stdout}`));
      resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as Report);
    });
  });
}

const program = (callId: string): Caller => ({ type: 'program', caller_id: callId });
/** Each response's items, as type and the SDK class the Python SDK read it as. */
const shapes = (report: Report): string[][] => report.responses.map((response) => response.output.map((item) => `${item.type} ${item.class}`));
const programsOf = (report: Report): Summary[] => report.responses.flatMap((response) => response.output.filter((item) => item.type === 'program'));
const programOutputsOf = (report: Report): Summary[] =>
  report.responses.flatMap((response) => response.output.filter((item) => item.type === 'program_output'));

/** The calls each program made, as the Python loop answered them: the arguments its tools got and the caller it copied. */
function expectGuideCalls(report: Report): void {
  const [first, second] = programsOf(report);
  expect(first!.code?.trim()).toBe(GUIDE_PROGRAM);
  expect(second!.code?.trim()).toBe(SEQUENTIAL_PROGRAM);
  expect(report.calls).toEqual([
    { name: 'get_inventory', arguments: { sku: 'sku_123' }, caller: program(first!.call_id!), response: 0 },
    { name: 'get_demand', arguments: { sku: 'sku_123' }, caller: program(first!.call_id!), response: 0 },
    { name: 'get_inventory', arguments: { sku: 'sku_777' }, caller: program(second!.call_id!), response: 2 },
    { name: 'get_demand', arguments: { sku: 'sku_777' }, caller: program(second!.call_id!), response: 3 },
  ]);
  expect(programOutputsOf(report).map(({ call_id, status, result }) => ({ call_id, status, result }))).toEqual([
    { call_id: first!.call_id, status: 'completed', result: GUIDE_RESULT },
    { call_id: second!.call_id, status: 'completed', result: SEQUENTIAL_RESULT },
  ]);
}

describe.skipIf(PYTHON === undefined)('the official openai package for Python (PTC_TEST_PYTHON)', () => {
  describe("the guide's loop over its two tools, two user turns", () => {
    const turns = [inlineProgram(GUIDE_PROGRAM), inlineProgram(SEQUENTIAL_PROGRAM)];
    /** One run of the loop per mode, which the tests of that mode read. */
    const runs = new Map<string, Promise<Report>>();
    const guideLoop = (mode: string): Promise<Report> => {
      if (!runs.has(mode)) runs.set(mode, python('guide_loop.py', [mode, ...turns]));
      return runs.get(mode)!;
    };

    it.each(['stateless', 'store', 'conversation'])('%s: each program gets its arguments, pauses, and ends in its result and message', async (mode) => {
      const report = await guideLoop(mode);
      expect(report.wire).toEqual([]);
      expect(shapes(report)).toEqual([
        ['program Program', 'function_call ResponseFunctionToolCall', 'function_call ResponseFunctionToolCall'],
        ['program_output ProgramOutput', 'message ResponseOutputMessage'],
        ['program Program', 'function_call ResponseFunctionToolCall'],
        ['function_call ResponseFunctionToolCall'],
        ['program_output ProgramOutput', 'message ResponseOutputMessage'],
      ]);
      expectGuideCalls(report);
      expect(report.responses.map((response) => response.output_text)).toEqual(['', GUIDE_RESULT, '', '', SEQUENTIAL_RESULT]);
      expect(report.text).toBe(SEQUENTIAL_RESULT);
      const chained = report.responses.map((response, index) => response.previous_response_id === (index === 0 ? null : report.responses[index - 1]!.id));
      expect(chained).toEqual(report.responses.map((_, index) => mode === 'store' || index === 0));
    });

    it('stateless: the last request resent the whole conversation in order, program and program_output included, caller on every output', async () => {
      const report = await guideLoop('stateless');
      const [first, second] = programsOf(report);
      const [inventory, demand, laterInventory, laterDemand] = report.responses.flatMap((response) =>
        response.output.filter((item) => item.type === 'function_call').map((item) => item.call_id),
      );
      const user = { type: 'message', role: 'user', caller: null, call_id: null };
      const assistant = { type: 'message', role: 'assistant', caller: null, call_id: null };
      const item = (type: string, callId: string, caller: Caller | null = null) => ({ type, role: null, caller, call_id: callId });
      expect(report['resent']).toEqual([
        user,
        item('program', first!.call_id!),
        item('function_call', inventory!, program(first!.call_id!)),
        item('function_call', demand!, program(first!.call_id!)),
        item('function_call_output', inventory!, program(first!.call_id!)),
        item('function_call_output', demand!, program(first!.call_id!)),
        item('program_output', first!.call_id!),
        assistant,
        user,
        item('program', second!.call_id!),
        item('function_call', laterInventory!, program(second!.call_id!)),
        item('function_call_output', laterInventory!, program(second!.call_id!)),
        item('function_call', laterDemand!, program(second!.call_id!)),
        item('function_call_output', laterDemand!, program(second!.call_id!)),
      ]);
    });

    it('store: retrieve gives back each response as create did, and input_items.list pages through what each request sent', async () => {
      const report = await guideLoop('store');
      expect(report.wire).toEqual([]);
      expect(report['retrieved_equal']).toEqual([true, true, true, true, true]);
      const [first, second] = programsOf(report).map((item) => program(item.call_id!));
      const output = (caller: Caller) => ({ type: 'function_call_output', caller });
      expect(report['input_items']).toEqual([
        [{ type: 'message', caller: null }],
        [output(first!), output(first!)],
        [{ type: 'message', caller: null }],
        [output(second!)],
        [output(second!)],
      ]);
    });

    it('conversation: the conversation holds every item of both turns, programs and their outputs, each call and output with its caller', async () => {
      const report = await guideLoop('conversation');
      expect(report.wire).toEqual([]);
      expect(report['conversations']).toEqual([true, true, true, true, true]);
      const [first, second] = programsOf(report).map((item) => program(item.call_id!));
      const plain = (type: string) => ({ type, caller: null });
      const by = (type: string, caller: Caller) => ({ type, caller });
      expect(report['conversation_items']).toEqual([
        plain('message'),
        plain('program'),
        by('function_call', first!),
        by('function_call', first!),
        by('function_call_output', first!),
        by('function_call_output', first!),
        plain('program_output'),
        plain('message'),
        plain('message'),
        plain('program'),
        by('function_call', second!),
        by('function_call_output', second!),
        by('function_call', second!),
        by('function_call_output', second!),
        plain('program_output'),
        plain('message'),
      ]);
    });

    it.each(['stateless', 'store'])('%s: a final message one response after program_output (x-ptc-final-message: next) is waited for', async (mode) => {
      const report = await python('guide_loop.py', [mode, turns[0]!], { 'x-ptc-final-message': 'next' });
      expect(report.wire).toEqual([]);
      expect(shapes(report).map((items) => items.map((item) => item.split(' ')[0]))).toEqual([
        ['program', 'function_call', 'function_call'],
        ['program_output'],
        ['message'],
      ]);
      expect(report.text).toBe(GUIDE_RESULT);
    });
  });

  describe('streamed', () => {
    /** The guide's two calls at once, then one more: two pauses, then the result. */
    const STREAMED_PROGRAM = `const [stock, demand] = await Promise.all([tools.get_inventory({ sku: 'sku_123' }), tools.get_demand({ sku: 'sku_123' })]);
const other = await tools.get_inventory({ sku: 'sku_456' });
text(JSON.stringify({ shortage_units: Math.max(demand.requested_units - stock.available_units, 0), other_units: other.available_units }));`;
    const STREAMED_RESULT = '{"shortage_units":0,"other_units":42}';
    const FUNCTION_CALL_EVENTS = [
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
    ];

    /** One run of the loop per way and mode, which the tests of that run read. */
    const runs = new Map<string, Promise<Report>>();
    const streamLoop = (how: string, mode: string): Promise<Report> => {
      const key = `${how} ${mode}`;
      if (!runs.has(key)) runs.set(key, python('stream_loop.py', [how, mode, inlineProgram(STREAMED_PROGRAM)]));
      return runs.get(key)!;
    };

    interface Streamed {
      events: string[];
      added: [number, string][];
      arguments: Record<string, string>;
      snapshots: Record<string, string>;
      done: Record<string, string>;
      text: string;
    }

    it.each([
      ['helper', 'store'],
      ['helper', 'stateless'],
      ['create', 'store'],
      ['create', 'stateless'],
      ['async', 'store'],
      ['async', 'stateless'],
    ])('%s, %s: the events build each item, and the program resumes twice to its result', async (how, mode) => {
      const report = await streamLoop(how, mode);
      expect(report.wire).toEqual([]);
      const [code] = programsOf(report);
      expect(code!.code?.trim()).toBe(STREAMED_PROGRAM);
      const caller = program(code!.call_id!);
      expect(report.calls).toEqual([
        { name: 'get_inventory', arguments: { sku: 'sku_123' }, caller, response: 0 },
        { name: 'get_demand', arguments: { sku: 'sku_123' }, caller, response: 0 },
        { name: 'get_inventory', arguments: { sku: 'sku_456' }, caller, response: 1 },
      ]);
      const parsed = how === 'create' ? '' : 'Parsed';
      expect(shapes(report)).toEqual([
        ['program Program', `function_call ${parsed}ResponseFunctionToolCall`, `function_call ${parsed}ResponseFunctionToolCall`],
        [`function_call ${parsed}ResponseFunctionToolCall`],
        ['program_output ProgramOutput', `message ${parsed}ResponseOutputMessage`],
      ]);
      expect(programOutputsOf(report).map(({ status, result }) => ({ status, result }))).toEqual([{ status: 'completed', result: STREAMED_RESULT }]);
      expect(report.text).toBe(STREAMED_RESULT);
      expect(report.responses.map((response) => response.previous_response_id !== null)).toEqual([false, mode === 'store', mode === 'store']);

      const streamed = report['streamed'] as Streamed[];
      const start = ['response.created', 'response.in_progress'];
      expect(streamed.map((response) => response.events)).toEqual([
        [...start, 'response.output_item.added', 'response.output_item.done', ...FUNCTION_CALL_EVENTS, ...FUNCTION_CALL_EVENTS, 'response.completed'],
        [...start, ...FUNCTION_CALL_EVENTS, 'response.completed'],
        [
          ...start,
          'response.output_item.added',
          'response.output_item.done',
          'response.output_item.added',
          'response.content_part.added',
          'response.output_text.delta',
          'response.output_text.done',
          'response.content_part.done',
          'response.output_item.done',
          'response.completed',
        ],
      ]);
      expect(streamed.map((response) => response.added)).toEqual([
        [
          [0, 'program'],
          [1, 'function_call'],
          [2, 'function_call'],
        ],
        [[0, 'function_call']],
        [
          [0, 'program_output'],
          [1, 'message'],
        ],
      ]);
      // The deltas of each call build its arguments, as `done` and the final item carry them
      // (and as the helper's own snapshot has them).
      report.responses.forEach((response, index) => {
        const calls = Object.fromEntries(response.output.filter((item) => item.type === 'function_call').map((item) => [item.id, item.arguments]));
        expect(streamed[index]!.arguments).toEqual(calls);
        expect(streamed[index]!.done).toEqual(calls);
        expect(streamed[index]!.snapshots).toEqual(how === 'create' ? {} : calls);
      });
      expect(streamed.map((response) => response.text)).toEqual(['', '', STREAMED_RESULT]);
    });

    it('store: stream(response_id=...) replays the first stored stream into the same response, and retrieve(stream=True, starting_after) goes on from there', async () => {
      const report = await streamLoop('helper', 'store');
      const replayed = report['replayed'] as { events: string[]; output: Summary[]; same_as_retrieved: boolean; after_2: number[] };
      expect(replayed.events).toEqual((report['streamed'] as Streamed[])[0]!.events);
      expect(replayed.output).toEqual(report.responses[0]!.output);
      expect(replayed.same_as_retrieved).toBe(true);
      expect(replayed.after_2).toEqual([3, 4, 5]);
    });

    it('arguments and text beyond the BMP arrive whole in every delta: joined in Python (code points, not UTF-16), they are the items', async () => {
      const sku = 'sku_🎉👩‍👩‍👧‍👦_東京';
      const code = `const stock = await tools.get_inventory({ sku: '${sku}' });
text(\`\${stock.sku} ✔︎ \${'a😀'.repeat(9000)}\`);`;
      const report = await python('stream_loop.py', ['helper', 'stateless', inlineProgram(code)]);
      expect(report.wire).toEqual([]);
      expect(report.calls.map(({ arguments: args }) => args)).toEqual([{ sku }]);
      const streamed = report['streamed'] as Streamed[];
      const [call] = report.responses[0]!.output.filter((item) => item.type === 'function_call');
      expect(streamed[0]!.arguments).toEqual({ [call!.id]: JSON.stringify({ sku }) });
      expect(streamed[1]!.text).toBe(`${sku} ✔︎ ${'a😀'.repeat(9000)}`);
      expect(report.text).toBe(streamed[1]!.text);
    });

    it('the autopilot, with no program in the message: the stream helper runs its program to the message stating both results', async () => {
      const report = await python('stream_loop.py', ['helper', 'stateless', 'Compare inventory with demand for sku_123.']);
      expect(report.wire).toEqual([]);
      expect(report.calls.map(({ name, arguments: args }) => [name, args])).toEqual([
        ['get_inventory', { sku: 'sku_123' }],
        ['get_demand', { sku: 'sku_123' }],
      ]);
      expect(report.text).toBe('get_inventory returned sku sku_123 and available_units 42; get_demand returned sku sku_123 and requested_units 31.');
    });
  });

  describe('a tool that fails: the client answers with the error as the output', () => {
    const ERROR_TEXT = 'Error: ConnectionError: the demand service is unavailable for sku_123';

    it.each(['stateless', 'store'])("%s, with output_schema: the program's try/catch gets the failure and goes on", async (mode) => {
      const code = `const stock = tools.get_inventory({ sku: 'sku_123' });
const demand = tools.get_demand({ sku: 'sku_123' });
let requested;
try {
  requested = (await demand).requested_units;
} catch (error) {
  requested = { failed: error.name, message: error.message };
}
text(JSON.stringify({ available_units: (await stock).available_units, requested_units: requested }));`;
      const report = await python('failing_tool.py', ['schema', mode, inlineProgram(code)]);
      expect(report.wire).toEqual([]);
      expect(report.calls.map(({ name, arguments: args, response }) => [name, args, response])).toEqual([
        ['get_inventory', { sku: 'sku_123' }, 0],
        ['get_demand', { sku: 'sku_123' }, 0],
      ]);
      const [output] = programOutputsOf(report);
      expect(output!.status).toBe('completed');
      const result = JSON.parse(output!.result!) as { available_units: number; requested_units: { failed: string; message: string } };
      expect(result.available_units).toBe(42);
      expect(result.requested_units.failed).toBe('TypeError');
      expect(result.requested_units.message).toContain('tools.get_demand');
      expect(result.requested_units.message).toContain(JSON.stringify(ERROR_TEXT));
      expect(report.text).toBe(output!.result);
    });

    it.each(['stateless', 'store'])('%s, without output_schema: the program reads the error text as the output and says what failed', async (mode) => {
      const code = `const [stock, demand] = await Promise.all([tools.get_inventory({ sku: 'sku_123' }), tools.get_demand({ sku: 'sku_123' })]);
text(JSON.stringify(demand.startsWith('Error: ') ? { failed: 'get_demand', reason: demand.slice(7), available_units: JSON.parse(stock).available_units } : { demand }));`;
      const report = await python('failing_tool.py', ['plain', mode, inlineProgram(code)]);
      expect(report.wire).toEqual([]);
      const [output] = programOutputsOf(report);
      const expected = { failed: 'get_demand', reason: ERROR_TEXT.slice(7), available_units: 42 };
      expect({ status: output!.status, result: JSON.parse(output!.result!) as unknown }).toEqual({ status: 'completed', result: expected });
      expect(JSON.parse(report.text!)).toEqual(expected);
    });

    it.each(['stateless', 'store'])('%s, uncaught: the program ends incomplete with program_threw, and the loop still gets its message', async (mode) => {
      const report = await python('failing_tool.py', ['schema', mode, inlineProgram(GUIDE_PROGRAM)]);
      expect(report.wire).toEqual([]);
      expect(report.responses.map((response) => response.status)).toEqual(['completed', 'completed']);
      const [output] = programOutputsOf(report);
      expect(output!.status).toBe('incomplete');
      const { error } = JSON.parse(output!.result!) as { error: { code: string; message: string } };
      expect(error.code).toBe('program_threw');
      expect(error.message).toMatch(/^TypeError: tools\.get_demand /);
      expect(error.message).toContain(JSON.stringify(ERROR_TEXT));
      expect(report.text).toBe(output!.result);
    });
  });

  describe("the SDK's parse helpers", () => {
    it('responses.parse: the tools run with parsed_arguments, and output_parsed is the program result as the Pydantic model; stream(text_format=...) parses it too', async () => {
      const report = await python('parse_helpers.py', ['parse', inlineProgram(GUIDE_PROGRAM)]);
      expect(report.wire).toEqual([]);
      expect(report.calls.map(({ name, arguments: args }) => [name, args])).toEqual([
        ['get_inventory', { sku: 'sku_123' }],
        ['get_demand', { sku: 'sku_123' }],
        ['get_inventory', { sku: 'sku_123' }],
        ['get_demand', { sku: 'sku_123' }],
      ]);
      const shortage = { sku: 'sku_123', available_units: 42, requested_units: 31, shortage_units: 0 };
      expect(report['parsed']).toEqual({ class: 'Shortage', ...shortage });
      expect(report['text_format']).toBe('json_schema');
      expect(report['streamed_parsed']).toEqual([{ class: 'Shortage', ...shortage }]);
      expect(report['streamed_output_parsed']).toEqual(shortage);
    });

    // The client's own behaviour (docs/DEVIATIONS.md): the stream helper's response carries the
    // SDK's parse fields, which the API does not take back. Sent as the SDK objects they are, a
    // call leaves its parsed_arguments out and a message keeps its content's `parsed`; through the
    // guide's model_dump(exclude_none=True), a call keeps parsed_arguments; through a bare
    // model_dump(), the first null the API does not take is refused.
    it.each([
      ['objects', [{ text: GUIDE_RESULT }, { status: 400, code: 'unknown_parameter', param: 'input[7].content[0].parsed' }]],
      ['model_dump', [{ status: 400, code: 'unknown_parameter', param: 'input[2].parsed_arguments' }]],
      // Without exclude_none, every unset field goes as null: `namespace` is a string or absent.
      ['model_dump_all', [{ status: 400, code: 'invalid_type', param: 'input[2].namespace' }]],
    ])('store=False, resending get_final_response().output as %s: what the API does not take back is a 400 naming it', async (how, turns) => {
      const report = await python('parse_helpers.py', ['resend', how, inlineProgram(GUIDE_PROGRAM)]);
      expect(report.wire).toEqual([]);
      expect(report['turns']).toEqual(turns);
    });
  });
});
