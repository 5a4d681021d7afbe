import type ivm from 'isolated-vm';
import { afterEach, describe, expect, it } from 'vitest';
import {
  dispatchArguments,
  guestLimitMessages,
  GUEST_LIMIT_CODES,
  parseCheckerReply,
  parseGuestReply,
  type CheckerOp,
  type GuestOp,
  type RepliedGuestOp,
  type SandboxConfig,
} from '../../runtime/guest-protocol.ts';
import { checkerContext, prepareIsolate, prepareIsolateBeside } from '../../runtime/prepared-isolate.ts';
import { ProgramRuntime } from '../../runtime/program-runtime.ts';
import { DEFAULT_LIMITS, LIMIT_DEFINITIONS, limitMessage, limitTemplate, type LimitCode } from '../../runtime/limits.ts';
import { runProgram, type HostTool } from '../../runtime/run-program.ts';

const running = '{"state":"running","inFlight":2,"calls":[{"seq":0,"tool":"a","args":"{}"},{"seq":1,"tool":"ns.b","args":"text"}]}';

describe('parseGuestReply', () => {
  it.each<[RepliedGuestOp, string]>([
    ['answers', '{"state":"done"}'],
    ['start', '{"state":"done"}'],
    // Not the prelude's constant text: checked as any reply is.
    ['start', '{ "state": "done" }'],
    ['warm', '{"state" :"done"}'],
    ['deliver', '{"state":"done"}'],
    ['report', running],
    ['report', '{"state":"running","inFlight":0,"calls":[]}'],
    ['report', '{"state":"settled","status":"completed","result":"out"}'],
    ['report', '{"state":"settled","status":"failed","code":"program_threw","message":"Error: x"}'],
    ['report', '{"state":"settled","status":"failed","code":"call_limit_exceeded","message":"The program made more than 3 tool calls"}'],
    ['report', '{"state":"withheld"}'],
    ['report', '{"state":"replaying"}'],
    ['report', '{"state":"needs_answers","from":0}'],
    ['report', '{"state":"needs_answers","from":17}'],
    ['report', '{"state":"resume_limit"}'],
    ...(['answers', 'start', 'deliver', 'warm', 'report'] as const).map((op): [RepliedGuestOp, string] => [op, '{"state":"fault"}']),
  ])('accepts the reply to %s %s', (op, text) => {
    expect(parseGuestReply(op, text)).toEqual(JSON.parse(text));
  });

  it.each<[string, RepliedGuestOp, unknown]>([
    ['an empty string (the bare reply of old)', 'start', ''],
    ['text that is not JSON', 'report', '{"state":'],
    ['JSON that is not an object', 'report', '"replaying"'],
    ['null', 'report', 'null'],
    ['an array', 'report', '[{"state":"done"}]'],
    ['a value that is not a string', 'report', 42],
    ['no value at all', 'start', undefined],
    ['a state the protocol does not have', 'report', '{"state":"poll"}'],
    ['no state', 'report', '{"inFlight":0,"calls":[]}'],
    ['a key the shape does not have', 'start', '{"state":"done","extra":1}'],
    ['a state another op gives: done to report', 'report', '{"state":"done"}'],
    ['a state another op gives: running to deliver', 'deliver', running],
    ['a state another op gives: replaying to answers', 'answers', '{"state":"replaying"}'],
    ['a checker reply', 'report', '{"state":"conforms"}'],
    ['running with a negative count in flight', 'report', '{"state":"running","inFlight":-1,"calls":[]}'],
    ['running without its calls', 'report', '{"state":"running","inFlight":0}'],
    ['running with a call of a fractional seq', 'report', '{"state":"running","inFlight":1,"calls":[{"seq":0.5,"tool":"a","args":"{}"}]}'],
    ['running with arguments that are not text', 'report', '{"state":"running","inFlight":1,"calls":[{"seq":0,"tool":"a","args":{}}]}'],
    ['settled with no status', 'report', '{"state":"settled","result":"out"}'],
    ['settled completed without a result', 'report', '{"state":"settled","status":"completed"}'],
    ['settled failed with a code the emulator does not have', 'report', '{"state":"settled","status":"failed","code":"nope","message":"x"}'],
    ['settled failed with an API error code', 'report', '{"state":"settled","status":"failed","code":"invalid_json","message":"x"}'],
    ['settled failed without a message', 'report', '{"state":"settled","status":"failed","code":"program_threw"}'],
    ['needs_answers without from', 'report', '{"state":"needs_answers"}'],
    ['needs_answers from a negative call', 'report', '{"state":"needs_answers","from":-1}'],
    ['needs_answers from a string', 'report', '{"state":"needs_answers","from":"3"}'],
    ['fault with a detail', 'report', '{"state":"fault","message":"x"}'],
    ['a state that is not a string', 'report', '{"state":["done"]}'],
    ['a state an object inherits', 'report', '{"state":"toString"}'],
    ['a reply with a __proto__ key', 'start', '{"state":"done","__proto__":{}}'],
    ['running with calls that are not a list', 'report', '{"state":"running","inFlight":0,"calls":{}}'],
    ['running with a count in flight as text', 'report', '{"state":"running","inFlight":"1","calls":[]}'],
    ['running with a fractional count in flight', 'report', '{"state":"running","inFlight":1.5,"calls":[]}'],
    ['running with a count in flight past the safe integers', 'report', '{"state":"running","inFlight":9007199254740993,"calls":[]}'],
    ['running with a key the shape does not have', 'report', '{"state":"running","inFlight":0,"calls":[],"extra":1}'],
    ['running with a call that is a list', 'report', '{"state":"running","inFlight":1,"calls":[[0,"a","{}"]]}'],
    ['running with a call that is null', 'report', '{"state":"running","inFlight":1,"calls":[null]}'],
    ['running with a call of a key its shape does not have', 'report', '{"state":"running","inFlight":1,"calls":[{"seq":0,"tool":"a","args":"{}","x":1}]}'],
    ['running with a call without its tool', 'report', '{"state":"running","inFlight":1,"calls":[{"seq":0,"args":"{}","x":1}]}'],
    [
      'running whose second call is broken',
      'report',
      '{"state":"running","inFlight":2,"calls":[{"seq":0,"tool":"a","args":"{}"},{"seq":-1,"tool":"a","args":"{}"}]}',
    ],
    ['settled completed with a result that is not text', 'report', '{"state":"settled","status":"completed","result":1}'],
    ['settled completed with a code too', 'report', '{"state":"settled","status":"completed","result":"x","code":"program_threw"}'],
    ['settled failed with a code an object inherits', 'report', '{"state":"settled","status":"failed","code":"constructor","message":"x"}'],
    ['settled failed with a result instead of a message', 'report', '{"state":"settled","status":"failed","code":"program_threw","result":"x"}'],
    ['settled with a status the protocol does not have', 'report', '{"state":"settled","status":"cancelled","result":"x"}'],
    ['needs_answers with a key the shape does not have', 'report', '{"state":"needs_answers","from":0,"to":1}'],
  ])('refuses %s', (_, op, text) => {
    expect(() => parseGuestReply(op, text)).toThrow(/^The program's context (gave a reply the guest protocol does not have|replied \w+ to \w+)$/);
  });

  it("keeps the reply out of its message: it can hold the program's text", () => {
    expect(() => parseGuestReply('report', '{"state":"settled","status":"failed","code":"nope","message":"memory limit"}')).toThrow(
      "The program's context gave a reply the guest protocol does not have",
    );
  });
});

describe('parseCheckerReply', () => {
  it.each([
    '{"state":"conforms"}',
    '{"state":"violation","index":0,"violation":"arguments is missing the required property \'a\'"}',
    '{"state":"violation","index":12,"violation":""}',
    '{"state":"fault"}',
  ])('accepts %s', (text) => {
    expect(parseCheckerReply('check', text)).toEqual(JSON.parse(text));
  });

  it.each<[string, unknown]>([
    ['an empty string (the bare reply of old)', ''],
    ['the unlabelled violation of old', '{"index":0,"violation":"x"}'],
    ['a violation at a negative index', '{"state":"violation","index":-1,"violation":"x"}'],
    ['a violation at a fractional index', '{"state":"violation","index":1.5,"violation":"x"}'],
    ['a violation that does not say what', '{"state":"violation","index":0}'],
    ['a violation that is not text', '{"state":"violation","index":0,"violation":["x"]}'],
    ["a program context's reply", '{"state":"running","inFlight":0,"calls":[]}'],
    ['a key the shape does not have', '{"state":"conforms","index":0}'],
    ['a value that is not a string', { state: 'conforms' }],
    ['text that is not JSON', 'conforms'],
  ])('refuses %s', (_, text) => {
    expect(() => parseCheckerReply('check', text)).toThrow("The checker's context gave a reply the guest protocol does not have");
  });

  it("refuses a reply of another op's: `done` to a check, a verdict to `configure`", () => {
    expect(() => parseCheckerReply('check', '{"state":"done"}')).toThrow("The checker's context replied done to check");
    expect(() => parseCheckerReply('configure', '{"state":"conforms"}')).toThrow("The checker's context replied conforms to configure");
    expect(parseCheckerReply('configure', '{"state":"done"}')).toEqual({ state: 'done' });
  });
});

describe('dispatchArguments', () => {
  const config: SandboxConfig = {
    seed: 1,
    clock: 0,
    tools: [],
    limits: { maxCalls: 1, maxCallsInFlight: 1, maxArgumentBytes: 1, maxOutputBytes: 1, maxResumes: 1 },
  };
  const configJson = JSON.stringify(config);
  it.each<[GuestOp | CheckerOp, [string, string]]>([
    [{ op: 'start', payload: { config, code: 'text("a")' } }, ['start', `{"config":${configJson},"code":"text(\\"a\\")"}`]],
    [{ op: 'report', payload: null }, ['report', 'null']],
    [{ op: 'repeat', payload: 'report' }, ['repeat', '"report"']],
    [{ op: 'deliver', payload: [{ seq: 0, output: 'x' }] }, ['deliver', '[{"seq":0,"output":"x"}]']],
    [
      { op: 'start', payload: { config, record: { count: 2, entries: [{ seq: 0, tool: 'a', args: '{}', withheld: true }] }, code: '' } },
      ['start', `{"config":${configJson},"record":{"count":2,"entries":[{"seq":0,"tool":"a","args":"{}","withheld":true}]},"code":""}`],
    ],
    [{ op: 'check', payload: [{ tool: 'a', args: '{}' }] }, ['check', '[{"tool":"a","args":"{}"}]']],
  ])('%j is sent as its name and its payload as JSON', (op, expected) => {
    expect(dispatchArguments(op)).toEqual(expected);
  });
});

describe('the prelude answers every op with a reply of the protocol', () => {
  let isolate: ivm.Isolate | undefined;
  let context: ivm.Context | undefined;
  afterEach(() => {
    if (isolate && !isolate.isDisposed) isolate.dispose();
    isolate = undefined;
  });

  /**
   * An isolate made from the prelude's snapshot, as every program's is: its context's `dispatch`
   * (no program's configuration yet), or with `config` a checker's context, configured with it.
   */
  async function install(config?: SandboxConfig): Promise<(op: string, payload: string) => unknown> {
    const prepared = prepareIsolate(32);
    isolate = prepared.isolate;
    context = prepared.context;
    const dispatch = config === undefined ? prepared.dispatch : checkerContext(prepared.isolate);
    const call = (op: string, payload: string) => dispatch.applySync(undefined, [op, payload]);
    if (config !== undefined)
      expect(parseCheckerReply('configure', call(...dispatchArguments({ op: 'configure', payload: config })))).toEqual({ state: 'done' });
    return call;
  }

  const config: SandboxConfig = {
    seed: 1,
    clock: 0,
    tools: [{ id: 'a', keys: ['a'], text: false, parseJson: false }],
    limits: { maxCalls: 10, maxCallsInFlight: 10, maxArgumentBytes: 100, maxOutputBytes: 100, maxResumes: 10 },
  };

  /**
   * Runs, through `send`, a program that reads `typeof Atomics` and makes one call: it starts,
   * pauses on the call, and ends with the call's output once it is delivered.
   */
  function runsAProgram(send: (op: GuestOp) => unknown): void {
    expect(parseGuestReply('start', send({ op: 'start', payload: { config, code: 'text(typeof Atomics + " " + await tools.a({}))' } }))).toEqual({
      state: 'done',
    });
    expect(parseGuestReply('report', send({ op: 'report', payload: null }))).toEqual({
      state: 'running',
      inFlight: 1,
      calls: [{ seq: 0, tool: 'a', args: '{}' }],
    });
    expect(parseGuestReply('deliver', send({ op: 'deliver', payload: [{ seq: 0, output: 'out' }] }))).toEqual({ state: 'done' });
    expect(parseGuestReply('report', send({ op: 'report', payload: null }))).toEqual({ state: 'settled', status: 'completed', result: 'undefined out' });
  }

  it('a live run: start, report, deliver, report; an unknown op and repeats', async () => {
    const dispatch = await install();
    const send = (op: GuestOp) => dispatch(...dispatchArguments(op));
    expect(parseGuestReply('start', send({ op: 'start', payload: { config, code: 'text(await tools.a({n: 1}))' } }))).toEqual({ state: 'done' });
    expect(parseGuestReply('report', send({ op: 'report', payload: null }))).toEqual({
      state: 'running',
      inFlight: 1,
      calls: [{ seq: 0, tool: 'a', args: '{"n":1}' }],
    });
    expect(parseGuestReply('deliver', send({ op: 'deliver', payload: [{ seq: 0, output: 'out' }] }))).toEqual({ state: 'done' });
    expect(parseGuestReply('report', send({ op: 'report', payload: null }))).toEqual({ state: 'settled', status: 'completed', result: 'out' });
    expect(parseGuestReply('report', send({ op: 'repeat', payload: 'report' }))).toEqual({ state: 'settled', status: 'completed', result: 'out' });
    // Each op's last reply is kept: the host may have queued the next op before it asks again.
    expect(parseGuestReply('deliver', send({ op: 'repeat', payload: 'deliver' }))).toEqual({ state: 'done' });
    expect(parseGuestReply('report', dispatch('repeat', '"poll"'))).toEqual({ state: 'fault' });
    expect(parseGuestReply('report', dispatch('poll', 'null'))).toEqual({ state: 'fault' });
    expect(parseGuestReply('deliver', dispatch('deliver', 'not json'))).toEqual({ state: 'fault' });
    // A program is configured once: a second start is a fault, and changes nothing.
    expect(parseGuestReply('start', send({ op: 'start', payload: { config, code: 'text("again")' } }))).toEqual({ state: 'fault' });
    expect(parseGuestReply('report', send({ op: 'report', payload: null }))).toEqual({ state: 'settled', status: 'completed', result: 'out' });
  });

  it("an isolate whose context was made on isolated-vm's thread (under load) holds the same prelude, unconfigured", async () => {
    const prepared = await prepareIsolateBeside(32);
    isolate = prepared.isolate;
    const send = (op: GuestOp) => prepared.dispatch.applySync(undefined, dispatchArguments(op));
    expect(prepared.context.evalSync('[typeof tools, typeof text, typeof __ptcDispatch, typeof __ptcInstallSandbox].join()')).toBe(
      'undefined,undefined,undefined,undefined',
    );
    runsAProgram(send);
  });

  it('programs started together with no isolate made ahead each make their own, and run as alone', async () => {
    const runtime = new ProgramRuntime({ pausedTtlMs: 60_000, maxPausedPrograms: 20, maxPausedHeapBytes: 2 ** 30, warmIsolates: 0 });
    try {
      const spec = (n: number) => ({
        code: `text(String(${n} + await tools.a({ n: ${n} })))`,
        tools: [{ name: 'a', parseOutputAsJson: true }],
        seed: n,
        clock: 0,
        limits: DEFAULT_LIMITS,
      });
      const started = await Promise.all(Array.from({ length: 8 }, (_, n) => runtime.start(`p${n}`, spec(n))));
      expect(started.map((event) => event.type)).toEqual(Array(8).fill('paused'));
      const ended = await Promise.all(
        started.map(async (event, n) => {
          if (event.type !== 'paused') throw new Error(event.type);
          const recorded = [{ tool: 'a', argumentsJson: event.calls[0]!.argumentsJson, output: String(n * 10) }];
          return (await runtime.resume(`p${n}`, spec(n), recorded)).event;
        }),
      );
      expect(ended.map((event) => (event.type === 'completed' ? event.result : event.type))).toEqual(Array.from({ length: 8 }, (_, n) => String(n + n * 10)));
    } finally {
      await runtime.close();
    }
  });

  it('before its start, an isolate made ahead holds no program: no tools, text or image', async () => {
    const dispatch = await install();
    expect(parseGuestReply('report', dispatch('report', 'null'))).toEqual({ state: 'running', inFlight: 0, calls: [] });
    expect(context!.evalSync('[typeof tools, typeof text, typeof image].join()')).toBe('undefined,undefined,undefined');
  });

  it('warm, in a context made ahead: the globals no program has go, and nothing of a program is there; its start then runs as any', async () => {
    const dispatch = await install();
    const send = (op: GuestOp) => dispatch(...dispatchArguments(op));
    const globals = '[typeof console, typeof Atomics, typeof SharedArrayBuffer, typeof WebAssembly, typeof tools, typeof text, typeof image].join()';
    expect(context!.evalSync(globals)).toBe('object,object,function,object,undefined,undefined,undefined');
    const sample = { config: { ...config, tools: [{ id: 'probe', keys: ['probe'], text: false, parseJson: true }] } };
    expect(parseGuestReply('warm', send({ op: 'warm', payload: sample }))).toEqual({ state: 'done' });
    expect(context!.evalSync(globals)).toBe(Array(7).fill('undefined').join());
    // Nothing of a program is there yet: no call, no outcome.
    expect(parseGuestReply('report', send({ op: 'report', payload: null }))).toEqual({ state: 'running', inFlight: 0, calls: [] });
    runsAProgram(send);
    // Once a program is configured, a warm is a fault and changes nothing.
    expect(parseGuestReply('warm', send({ op: 'warm', payload: sample }))).toEqual({ state: 'fault' });
    expect(parseGuestReply('report', send({ op: 'report', payload: null }))).toEqual({ state: 'settled', status: 'completed', result: 'undefined out' });
  });

  it('a replay: start with the record, report (needs_answers), answers, report (replaying), report (settled)', async () => {
    const dispatch = await install();
    const send = (op: GuestOp) => dispatch(...dispatchArguments(op));
    expect(parseGuestReply('start', send({ op: 'start', payload: { config, record: { count: 1, entries: [] }, code: 'text(await tools.a({}))' } }))).toEqual({
      state: 'done',
    });
    expect(parseGuestReply('report', send({ op: 'report', payload: null }))).toEqual({ state: 'needs_answers', from: 0 });
    expect(parseGuestReply('answers', send({ op: 'answers', payload: [{ seq: 0, tool: 'a', args: '{}', output: 'recorded' }] }))).toEqual({ state: 'done' });
    expect(parseGuestReply('report', send({ op: 'report', payload: null }))).toEqual({ state: 'replaying' });
    expect(parseGuestReply('report', send({ op: 'report', payload: null }))).toEqual({ state: 'settled', status: 'completed', result: 'recorded' });
  });

  it('a replay past the resume limit, and one at a withheld answer', async () => {
    const limited = await install();
    limited(
      ...dispatchArguments({
        op: 'start',
        payload: {
          config: { ...config, limits: { ...config.limits, maxResumes: 0 } },
          record: { count: 1, entries: [{ seq: 0, tool: 'a', args: '{}', output: 'x' }] },
          code: 'await tools.a({})',
        },
      }),
    );
    expect(parseGuestReply('report', limited(...dispatchArguments({ op: 'report', payload: null })))).toEqual({ state: 'resume_limit' });
    isolate?.dispose();
    const withheld = await install();
    withheld(
      ...dispatchArguments({
        op: 'start',
        payload: { config, record: { count: 1, entries: [{ seq: 0, tool: 'a', args: '{}', withheld: true }] }, code: 'await tools.a({})' },
      }),
    );
    expect(parseGuestReply('report', withheld(...dispatchArguments({ op: 'report', payload: null })))).toEqual({ state: 'withheld' });
  });

  it('the checker: conforms, violation, fault', async () => {
    const schema =
      'module.exports = function validate(data) { validate.errors = [{ keyword: "type", instancePath: "", params: {}, message: "must be object" }]; return typeof data === "object"; }';
    const check = await install({ ...config, tools: [{ id: 'a', keys: ['a'], text: false, parseJson: false, checkInput: schema }] });
    const send = (op: CheckerOp) => check(...dispatchArguments(op));
    expect(parseCheckerReply('check', send({ op: 'check', payload: [{ tool: 'a', args: '{}' }] }))).toEqual({ state: 'conforms' });
    expect(
      parseCheckerReply(
        'check',
        send({
          op: 'check',
          payload: [
            { tool: 'a', args: '{}' },
            { tool: 'a', args: '1' },
          ],
        }),
      ),
    ).toEqual({ state: 'violation', index: 1, violation: 'arguments must be object' });
    expect(parseCheckerReply('check', send({ op: 'check', payload: [{ tool: 'b', args: '{}' }] }))).toEqual({
      state: 'violation',
      index: 0,
      violation: 'names no strict tool of this program',
    });
    expect(parseCheckerReply('check', send({ op: 'check', payload: [{ tool: 'a', args: 'not json' }] }))).toEqual({ state: 'fault' });
  });
});

describe('limit messages', () => {
  // The texts as programs have always received them.
  const MESSAGES: readonly [LimitCode, Record<string, string | number>, string][] = [
    ['cpu_time_exceeded', { limit: 5000 }, 'The program used more than 5000 ms of CPU'],
    ['wall_time_exceeded', { limit: 2000 }, 'One execution step ran longer than 2000 ms'],
    ['memory_limit_exceeded', { limit: 64 }, "The program's heap exceeded 64 MiB"],
    ['code_too_large', { limit: 262144 }, "The program's code exceeds 262144 bytes"],
    ['call_limit_exceeded', { limit: 1000 }, 'The program made more than 1000 tool calls'],
    ['calls_in_flight_exceeded', { limit: 128 }, 'More than 128 tool calls pending at once'],
    ['resume_limit_exceeded', { limit: 1000 }, 'The program was resumed more than 1000 times'],
    ['arguments_too_large', { tool: 'echo', limit: 1048576 }, 'Arguments of tools.echo exceed 1048576 bytes'],
    ['tool_output_too_large', { what: 'output', tool: 'ns.fetch', limit: 100 }, 'The output of tools.ns.fetch exceeds 100 bytes'],
    ['tool_output_too_large', { what: 'error message', tool: 'big', limit: 100 }, 'The error message of tools.big exceeds 100 bytes'],
    ['output_limit_exceeded', { limit: 1048576 }, 'Program output exceeds 1048576 bytes'],
  ];

  it.each(MESSAGES)("%s renders today's text", (code, values, text) => {
    expect(limitMessage(code, values as never)).toBe(text);
  });

  it('every limit has a message, and each is tested above', () => {
    expect(new Set(MESSAGES.map(([code]) => code))).toEqual(new Set(Object.values(LIMIT_DEFINITIONS).map((definition) => definition.code)));
  });

  it('fills placeholders in one pass: a value holding a placeholder stays as it is', () => {
    expect(limitMessage('arguments_too_large', { tool: '{limit}', limit: 7 })).toBe('Arguments of tools.{limit} exceed 7 bytes');
  });

  it('hands the prelude the templates of the limits it reports, unformatted', () => {
    expect(guestLimitMessages()).toEqual(Object.fromEntries(GUEST_LIMIT_CODES.map((code) => [code, limitTemplate(code)])));
    expect(guestLimitMessages().calls_in_flight_exceeded).toBe('More than {limit} tool calls pending at once');
  });

  const echo: HostTool = { run: (args) => JSON.stringify(args) };
  const odd: HostTool = { run: () => 'x' };
  // Each stopped by the prelude, inside the isolate, before the host sees the call.
  it.each<[string, string, Record<string, HostTool>, Partial<typeof DEFAULT_LIMITS>, string]>([
    ['call_limit_exceeded', 'for (let i = 0; i < 4; i++) await tools.echo({i})', { echo }, { maxCalls: 3 }, 'The program made more than 3 tool calls'],
    [
      'calls_in_flight_exceeded',
      'await Promise.all([1, 2, 3].map((i) => tools.echo({i})))',
      { echo },
      { maxCallsInFlight: 2 },
      'More than 2 tool calls pending at once',
    ],
    ['arguments_too_large', 'await tools.echo({s: "x".repeat(200)})', { echo }, { maxArgumentBytes: 100 }, 'Arguments of tools.echo exceed 100 bytes'],
    [
      'arguments_too_large',
      'await tools["x{limit}"]({s: "x".repeat(200)})',
      { 'x{limit}': odd },
      { maxArgumentBytes: 100 },
      'Arguments of tools.x{limit} exceed 100 bytes',
    ],
    ['output_limit_exceeded', 'for (;;) text("0123456789")', {}, { maxOutputBytes: 1000 }, 'Program output exceeds 1000 bytes'],
    [
      'output_limit_exceeded',
      'String.prototype.replace = () => "forged"; RegExp.prototype.exec = () => null; String.prototype.slice = () => ""; for (;;) text("0123456789")',
      {},
      { maxOutputBytes: 1000 },
      'Program output exceeds 1000 bytes',
    ],
  ])('the prelude formats %s from its template: %s', async (code, program, tools, limits, message) => {
    const run = await runProgram(program, { tools, limits });
    expect(run.error).toEqual({ code, message });
  });
});
