import { describe, expect, it } from 'vitest';
import { IsolateProgram } from '../../runtime/isolate-program.ts';
import { DEFAULT_LIMITS } from '../../runtime/limits.ts';
import type { ProgramEvent } from '../../runtime/program-events.ts';

const TOOLS = ['a', 'b', 'c'].map((name) => ({ name, parseOutputAsJson: false }));

function start(code: string): { program: IsolateProgram; first: Promise<ProgramEvent> } {
  const program = new IsolateProgram({ code, tools: TOOLS, seed: 1, clock: 0, limits: DEFAULT_LIMITS });
  return { program, first: program.start() };
}

/** The batches a program pauses on, answering each call with `<tool><seq>`, and its final result. */
async function batches(code: string): Promise<{ batches: string[][]; result: string }> {
  const { program, first } = start(code);
  const seen: string[][] = [];
  let event = await first;
  while (event.type === 'paused') {
    seen.push(event.calls.map((call) => `${call.tool}${call.argumentsJson}`));
    event = await program.resume(event.calls.map((call) => ({ seq: call.seq, output: `${call.tool}${call.seq}` })));
  }
  if (event.type !== 'completed') throw new Error(JSON.stringify(event));
  return { batches: seen, result: event.result };
}

describe('batching: every call made before the program goes idle is one batch', () => {
  it.each([
    [
      'Promise.all: one batch in the order of creation',
      'const r = await Promise.all([tools.b({}), tools.a({}), tools.c({})]); text(r.join())',
      [['b{}', 'a{}', 'c{}']],
      'b0,a1,c2',
    ],
    ['sequential awaits: one pause per call', 'text(await tools.a({})); text(await tools.b({}))', [['a{}'], ['b{}']], 'a0b1'],
    ['a call started before an await joins the awaited one', 'const p = tools.a({}); const q = await tools.b({}); text(await p + q)', [['a{}', 'b{}']], 'a0b1'],
    [
      'calls made in a loop',
      'const r = []; for (const n of [1, 2, 3]) r.push(tools.c({n})); text((await Promise.all(r)).join())',
      [['c{"n":1}', 'c{"n":2}', 'c{"n":3}']],
      'c0,c1,c2',
    ],
    [
      'two phases: calls that depend on earlier results',
      'const [x, y] = await Promise.all([tools.a({}), tools.b({})]); text(await tools.c({x, y}))',
      [['a{}', 'b{}'], ['c{"x":"a0","y":"b1"}']],
      'c2',
    ],
    [
      'nested async functions keep creation order',
      'const f = async (t) => tools[t]({t}); text((await Promise.all([f("c"), f("a")])).join())',
      [['c{"t":"c"}', 'a{"t":"a"}']],
      'c0,a1',
    ],
    ['Promise.race resumes when the whole batch is answered', 'text(await Promise.race([tools.a({}), tools.b({})]))', [['a{}', 'b{}']], 'a0'],
  ])('%s', async (_, code, expectedBatches, expectedResult) => {
    const run = await batches(code);
    expect(run.batches).toEqual(expectedBatches);
    expect(run.result).toBe(expectedResult);
  });

  it('discards calls still pending when the body settles', async () => {
    const { first } = start('tools.a({}); text("done early")');
    expect(await first).toMatchObject({ type: 'completed', result: 'done early' });
  });

  it('numbers calls by creation order across batches', async () => {
    const { program, first } = start('await tools.a({}); await Promise.all([tools.b({}), tools.c({})]); text("ok")');
    const one = await first;
    expect(one.type === 'paused' && one.calls.map((call) => call.seq)).toEqual([0]);
    const two = await program.resume([{ seq: 0, output: '' }]);
    expect(two.type === 'paused' && two.calls.map((call) => call.seq)).toEqual([1, 2]);
    expect(
      await program.resume([
        { seq: 2, output: '' },
        { seq: 1, output: '' },
      ]),
    ).toMatchObject({ type: 'completed', result: 'ok' });
  });

  it('a promise rejection the program leaves unhandled, at every step, changes neither its batches nor its result', async () => {
    // isolated-vm throws such a rejection out of the call that ran the program's code, in place
    // of its reply, while the report queued behind it has run: the host asks for that op's reply again.
    const code = 'Promise.reject(new Error("s")); const x = await tools.a({}); Promise.reject(new Error("d")); const y = await tools.b({}); text(x + y)';
    expect(await batches(code)).toEqual({ batches: [['a{}'], ['b{}']], result: 'a0b1' });
    // And in a replay, where the recorded batch is answered by a report.
    const replayed = new IsolateProgram({ code, tools: TOOLS, seed: 1, clock: 0, limits: DEFAULT_LIMITS });
    const paused = await replayed.start([{ tool: 'a', argumentsJson: '{}', output: 'a0' }]);
    expect(paused).toMatchObject({ type: 'paused', calls: [{ seq: 1, tool: 'b', argumentsJson: '{}' }] });
    expect(await replayed.resume([{ seq: 1, output: 'b1' }])).toMatchObject({ type: 'completed', result: 'a0b1' });
  });

  it.each([
    [
      'calls made by microtasks that a getter of the rejection queued, at the start',
      'Promise.reject({ get message() { Promise.resolve().then(() => tools.b({})); return "m"; } }); const x = await tools.a({}); text(x)',
      [['a{}', 'b{}']],
      'a0',
    ],
    [
      'a call made by the getter itself',
      'Promise.reject({ get message() { tools.b({}); return "m"; } }); const x = await tools.a({}); text(x)',
      [['a{}', 'b{}']],
      'a0',
    ],
    [
      'calls made by microtasks that a getter of the rejection queued, after a delivery',
      'const x = await tools.a({}); Promise.reject({ get stack() { Promise.resolve().then(() => tools.c({})); return "s"; } }); text(x + await tools.b({}))',
      [['a{}'], ['b{}', 'c{}']],
      'a0b1',
    ],
  ])(
    'a rejection left unhandled, whose copying out of the isolate runs the program: %s join the batch, live and replayed',
    async (_, code, expectedBatches, expectedResult) => {
      // isolated-vm copies such a rejection (reading its message and stack) after the call's
      // microtasks ran: what the program does then runs after a report queued behind the call.
      expect(await batches(code)).toEqual({ batches: expectedBatches, result: expectedResult });
      const record = expectedBatches.flat().map((call, seq) => ({ tool: call[0]!, argumentsJson: call.slice(1), output: `${call[0]}${seq}` }));
      const replayed = new IsolateProgram({ code, tools: TOOLS, seed: 1, clock: 0, limits: DEFAULT_LIMITS });
      expect(await replayed.start(record)).toMatchObject({ type: 'completed', result: expectedResult });
    },
  );

  it("a rejection left unhandled that reads like isolated-vm's timeout is still only a rejection", async () => {
    const code =
      'Promise.reject(new Error("Script execution timed out.")); const x = await tools.a({}); Promise.reject(new Error("timed out")); text(x + await tools.b({}))';
    expect(await batches(code)).toEqual({ batches: [['a{}'], ['b{}']], result: 'a0b1' });
  });

  it.each(['message', 'stack'])(
    "rejections left unhandled without end, each made as the last one's %s is read, end program_threw, whatever their text says",
    async (property) => {
      const forged = 'Isolate was disposed during execution due to memory limit';
      const code = `const forge = () => { const e = new Error(${JSON.stringify(forged)}); Object.defineProperty(e, '${property}', { get() { Promise.resolve().then(forge); return ${JSON.stringify(forged)} } }); Promise.reject(e) }
forge(); text(await tools.a({}))`;
      const program = new IsolateProgram({ code, tools: TOOLS, seed: 1, clock: 0, limits: DEFAULT_LIMITS });
      const event = await program.start();
      expect(event).toMatchObject({ type: 'incomplete', error: { code: 'program_threw' } });
      expect(event.type === 'incomplete' && event.error.message).toMatch(/unhandled at each of \d+ calls in a row/);
    },
  );

  it('refuses a resume that does not answer every pending call', async () => {
    const { program, first } = start('await Promise.all([tools.a({}), tools.b({})])');
    await first;
    await expect(program.resume([{ seq: 0, output: '' }])).rejects.toThrow(/exactly one output per pending call/);
    program.dispose();
  });
});

describe('tool arguments and outputs', () => {
  it.each([
    ['no arguments as {}', 'await tools.a()', '{}'],
    ['an object with nested values', 'await tools.a({n: 1, s: "é", l: [true, null], o: {d: 1.5}})', '{"n":1,"s":"é","l":[true,null],"o":{"d":1.5}}'],
    ['an object with toJSON', 'await tools.a({toJSON() { return {via: "toJSON"} }})', '{"via":"toJSON"}'],
    ['undefined members dropped', 'await tools.a({keep: 1, drop: undefined})', '{"keep":1}'],
  ])('a function tool serialises %s', async (_, code, argumentsJson) => {
    const { program, first } = start(code);
    const event = await first;
    expect(event.type === 'paused' && event.calls[0]?.argumentsJson).toBe(argumentsJson);
    program.dispose();
  });

  it.each([
    ['a string', 'tools.a("x")'],
    ['an array', 'tools.a([1])'],
    ['null', 'tools.a(null)'],
    ['a cyclic object', '((o) => { o.o = o; return tools.a(o) })({})'],
    ['a BigInt inside', 'tools.a({n: 1n})'],
  ])('rejects %s as arguments inside the program, as a TypeError it can catch', async (_, call) => {
    const { first } = start(`try { await ${call}; text("sent") } catch (e) { text(e.name) }`);
    expect(await first).toMatchObject({ type: 'completed', result: 'TypeError' });
  });

  it('hands a tool with output_schema the parsed JSON and one without it the string', async () => {
    const program = new IsolateProgram({
      code: 'const [j, s] = await Promise.all([tools.json({}), tools.str({})]); text([typeof j, j.n, typeof s, s])',
      tools: [
        { name: 'json', parseOutputAsJson: true },
        { name: 'str', parseOutputAsJson: false },
      ],
      seed: 1,
      clock: 0,
      limits: DEFAULT_LIMITS,
    });
    await program.start();
    const event = await program.resume([
      { seq: 0, output: '{"n":5}' },
      { seq: 1, output: '{"n":5}' },
    ]);
    expect(event).toMatchObject({ type: 'completed', result: '["object",5,"string","{\\"n\\":5}"]' });
  });

  it('throws inside the program when a tool with output_schema returns something that is not JSON', async () => {
    const program = new IsolateProgram({
      code: 'try { await tools.json({}) } catch (e) { text(e.name + ": " + e.message) }',
      tools: [{ name: 'json', parseOutputAsJson: true }],
      seed: 1,
      clock: 0,
      limits: DEFAULT_LIMITS,
    });
    await program.start();
    expect(await program.resume([{ seq: 0, output: 'not json' }])).toMatchObject({
      type: 'completed',
      result: 'TypeError: tools.json declares output_schema but its output is not JSON: "not json"',
    });
  });
});
