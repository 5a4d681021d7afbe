import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IsolateProgram, type ProgramSpec } from '../../runtime/isolate-program.ts';
import { DEFAULT_LIMITS } from '../../runtime/limits.ts';
import type { ProgramEvent, RecordedCall } from '../../runtime/program-events.ts';
import { ProgramRuntime } from '../../runtime/program-runtime.ts';
import { answer, generatedProgram, JSON_TOOL, STRING_TOOLS } from '../support/program-generator.ts';

const TOOLS = [...STRING_TOOLS.map((name) => ({ name, parseOutputAsJson: false })), { name: JSON_TOOL, parseOutputAsJson: true }];

function spec(code: string, seed = 11): ProgramSpec {
  return { code, tools: TOOLS, seed, clock: Date.UTC(2026, 10, 30, 12, 34, 56), limits: { ...DEFAULT_LIMITS, maxCalls: 200 } };
}

/** Events without their stats: CPU time differs between runs, nothing else may. */
function observable(event: ProgramEvent): unknown {
  const { stats: _stats, ...rest } = event;
  return rest;
}

/** Runs a program live to the end, answering every batch; returns each step's event and the calls with their outputs. */
async function liveRun(code: string): Promise<{ events: ProgramEvent[]; history: RecordedCall[] }> {
  const program = new IsolateProgram(spec(code));
  const events: ProgramEvent[] = [];
  const history: RecordedCall[] = [];
  let event = await program.start();
  events.push(event);
  while (event.type === 'paused') {
    const outputs = event.calls.map((call) => ({ seq: call.seq, output: answer(call.tool, call.argumentsJson) }));
    for (const call of event.calls) history.push({ tool: call.tool, argumentsJson: call.argumentsJson, output: answer(call.tool, call.argumentsJson) });
    event = await program.resume(outputs);
    events.push(event);
  }
  return { events, history };
}

describe('replay', () => {
  it.each([
    ['its CPU budget', 'for (;;) {}', 'cpu_time_exceeded', { cpuTimeMs: 150, stepWallTimeMs: 20_000 }],
    [
      'its heap',
      'const kept = []; for (;;) kept.push(new Array(1e5).fill(a + b))',
      'memory_limit_exceeded',
      { memoryMb: 16, cpuTimeMs: 20_000, stepWallTimeMs: 20_000 },
    ],
  ] as const)('counts the step that runs out of %s after a recorded batch, as the live run did', async (_, tail, code, limits) => {
    const program = `const a = await tools.alpha({}); const b = await tools.beta({ a }); ${tail}`;
    const limited = { ...spec(program), limits: { ...DEFAULT_LIMITS, ...limits } };
    const { events, history } = await (async () => {
      const live = new IsolateProgram(limited);
      const steps: ProgramEvent[] = [await live.start()];
      const record: RecordedCall[] = [];
      while (steps.at(-1)!.type === 'paused') {
        const { calls } = steps.at(-1) as Extract<ProgramEvent, { type: 'paused' }>;
        for (const call of calls) record.push({ tool: call.tool, argumentsJson: call.argumentsJson, output: answer(call.tool, call.argumentsJson) });
        steps.push(await live.resume(calls.map((call) => ({ seq: call.seq, output: answer(call.tool, call.argumentsJson) }))));
      }
      return { events: steps, history: record };
    })();
    const ended = events.at(-1)!;
    expect(ended).toMatchObject({ type: 'incomplete', error: { code }, stats: { steps: 3, calls: 2 } });
    const replayed = await new IsolateProgram(limited).start(history);
    expect(replayed).toMatchObject({ type: 'incomplete', error: { code }, stats: { steps: 3, calls: 2 } });
  });

  it('gives the same event as the live run at every pause, for generated programs', async () => {
    await fc.assert(
      fc.asyncProperty(generatedProgram, async (code) => {
        const { events, history } = await liveRun(code);
        let answered = 0;
        for (const event of events) {
          const replay = new IsolateProgram(spec(code));
          const replayed = await replay.start(history.slice(0, answered));
          replay.dispose();
          expect(observable(replayed)).toEqual(observable(event));
          if (event.type === 'paused') answered += event.calls.length;
        }
      }),
      { numRuns: 120 },
    );
  });

  it('serves a warm resume and a replay of the same history with the same events (ProgramRuntime)', async () => {
    const runtime = new ProgramRuntime({ pausedTtlMs: 60_000, maxPausedPrograms: 100, maxPausedHeapBytes: 1e9, warmIsolates: 2 });
    try {
      await fc.assert(
        fc.asyncProperty(generatedProgram, fc.integer({ min: 0, max: 2 ** 32 - 1 }), async (code, seed) => {
          const id = `p${seed}-${Math.random()}`;
          const history: RecordedCall[] = [];
          let warm = await runtime.start(id, spec(code, seed));
          while (warm.type === 'paused') {
            for (const call of warm.calls) history.push({ tool: call.tool, argumentsJson: call.argumentsJson, output: answer(call.tool, call.argumentsJson) });
            const cold = `${id}-cold-${history.length}`;
            const replayed = await runtime.resume(cold, spec(code, seed), history);
            const resumed = await runtime.resume(id, spec(code, seed), history);
            expect(replayed.path).toBe('replay');
            expect(resumed.path).toBe('warm');
            expect(observable(replayed.event)).toEqual(observable(resumed.event));
            runtime.dispose(cold);
            warm = resumed.event;
          }
        }),
        { numRuns: 60 },
      );
      expect(runtime.stats().resumes.warm).toBeGreaterThan(0);
    } finally {
      await runtime.close();
    }
  });

  it('resumes warm only a record whose earlier answers are those the program received, hashing an appended record as it grows (ProgramRuntime)', async () => {
    const runtime = new ProgramRuntime({ pausedTtlMs: 60_000, maxPausedPrograms: 100, maxPausedHeapBytes: 1e9 });
    const code = 'const a = await tools.alpha({}); const b = await tools.beta({}); const c = await tools.alpha({ n: 2 }); text(a + b + c)';
    const call = (event: ProgramEvent): RecordedCall => {
      if (event.type !== 'paused') throw new Error(`expected a pause, got ${JSON.stringify(event)}`);
      return { tool: event.calls[0]!.tool, argumentsJson: event.calls[0]!.argumentsJson, output: '' };
    };
    try {
      // One array, appended to at each pause: every resume is warm.
      const record: RecordedCall[] = [{ ...call(await runtime.start('same', spec(code))), output: '1' }];
      const second = await runtime.resume('same', spec(code), record);
      record.push({ ...call(second.event), output: '2' });
      const third = await runtime.resume('same', spec(code), record);
      record.push({ ...call(third.event), output: '3' });
      const done = await runtime.resume('same', spec(code), record);
      expect([second.path, third.path, done.path]).toEqual(['warm', 'warm', 'warm']);
      expect(done.event).toMatchObject({ type: 'completed', result: '123' });

      // The same calls (none depends on an answer), the first answer changed, in a new array: the
      // live program received another one, so the resume replays; the outcome is the new record's.
      const first = { ...call(await runtime.start('forked', spec(code))), output: '1' };
      const paused = await runtime.resume('forked', spec(code), [first]);
      expect(paused.path).toBe('warm');
      const forked = [
        { ...first, output: '9' },
        { ...call(paused.event), output: '2' },
      ];
      const resumed = await runtime.resume('forked', spec(code), forked);
      expect(resumed.path).toBe('replay');
      forked.push({ ...call(resumed.event), output: '3' });
      const end = await runtime.resume('forked', spec(code), forked);
      expect(end.event).toMatchObject({ type: 'completed', result: '923' });
    } finally {
      await runtime.close();
    }
  });

  it('reproduces the microtask interleaving of calls answered as a batch', async () => {
    // Resolving recorded calls as they are made would run `c` before `b` and renumber them.
    const code = 'tools.alpha({}).then(() => tools.gamma({})); await null; text(await tools.beta({})); text(await tools.gamma({x: 1}))';
    const { events, history } = await liveRun(code);
    const replay = new IsolateProgram(spec(code));
    const replayed = await replay.start(history.slice(0, 2));
    expect(observable(replayed)).toEqual(observable(events[1]!));
    expect(replayed.type === 'paused' && replayed.calls.map((call) => call.tool)).toEqual(['gamma', 'gamma']);
    replay.dispose();
  });

  it('rejects a call answered with an error, live, warm and replayed alike, and never mistakes an error for an output', async () => {
    const code =
      'const seen = []; for (const t of ["alpha", "beta"]) { try { seen.push(await tools[t]({})) } catch (e) { seen.push(e.name + ": " + e.message) } } text(seen.join("|"))';
    const runtime = new ProgramRuntime({ pausedTtlMs: 60_000, maxPausedPrograms: 10, maxPausedHeapBytes: 1e9, warmIsolates: 2 });
    try {
      const first = await runtime.start('err', spec(code));
      expect(first).toMatchObject({ type: 'paused' });
      const failed: RecordedCall = { tool: 'alpha', argumentsJson: '{}', output: '', error: 'denied by the user' };
      const afterError = await runtime.resume('err', spec(code), [failed]);
      expect(afterError.path).toBe('warm');
      const history = [failed, { tool: 'beta', argumentsJson: '{}', output: 'fine' }];
      const warm = await runtime.resume('err', spec(code), history);
      const replayed = await runtime.resume('err-cold', spec(code), history);
      expect([warm.path, replayed.path]).toEqual(['warm', 'replay']);
      for (const { event } of [warm, replayed]) expect(event).toMatchObject({ type: 'completed', result: 'Error: denied by the user|fine' });
      // A warm program that got an error for a call is not paused where a history with an output for it leaves it.
      await runtime.start('err-2', spec(code));
      await runtime.resume('err-2', spec(code), [failed]);
      const asOutput = await runtime.resume('err-2', spec(code), [{ ...failed, error: undefined as never, output: 'denied by the user' }, history[1]!]);
      expect(asOutput.path).toBe('replay');
    } finally {
      await runtime.close();
    }
  });

  it('treats arguments that differ only in key order or spacing as the same call', async () => {
    const replay = new IsolateProgram(spec('await tools.alpha({x: 1, y: [2, {b: 1, a: 2}]}); text("same")'));
    expect(await replay.start([{ tool: 'alpha', argumentsJson: '{ "y": [2, {"a": 2, "b": 1}], "x": 1 }', output: '' }])).toMatchObject({
      type: 'completed',
      result: 'same',
    });
  });
});

describe('the resume limit', () => {
  it('ends a replay at the same resume as the live run', async () => {
    const code = 'for (let i = 0; i < 5; i++) await tools.alpha({i}); text("done")';
    const limited = { ...spec(code), limits: { ...spec(code).limits, maxResumes: 2 } };
    const history = [0, 1, 2].map((i) => ({ tool: 'alpha', argumentsJson: `{"i":${i}}`, output: '' }));
    const live = new IsolateProgram(limited);
    await live.start();
    await live.resume([{ seq: 0, output: '' }]);
    await live.resume([{ seq: 1, output: '' }]);
    const third = await live.resume([{ seq: 2, output: '' }]);
    const replayed = await new IsolateProgram(limited).start(history);
    expect(third).toMatchObject({ type: 'incomplete', error: { code: 'resume_limit_exceeded' } });
    expect(observable(replayed)).toEqual(observable(third));
  });
});

describe('replay_diverged: a replay that does not retrace the recorded run ends incomplete, naming the step', () => {
  it.each([
    [
      'a different call at step 1, because an earlier output changed',
      'const x = await tools.alpha({}); if (x === "yes") await tools.beta({}); else await tools.gamma({}); text("end")',
      [
        { tool: 'alpha', argumentsJson: '{}', output: 'no' },
        { tool: 'beta', argumentsJson: '{}', output: '' },
      ],
      'The replay diverged at call 1, tools.gamma({}), where the recorded run made tools.beta({}). Did an earlier tool output change since the program first received it?',
    ],
    [
      'different arguments at step 0',
      'await tools.alpha({n: 2}); text("end")',
      [{ tool: 'alpha', argumentsJson: '{"n":1}', output: '' }],
      'The replay diverged at call 0, tools.alpha({"n":2}), where the recorded run made tools.alpha({"n":1}). Did an earlier tool output change since the program first received it?',
    ],
    [
      'fewer calls than recorded: the program ends',
      'await tools.alpha({}); text("short")',
      [
        { tool: 'alpha', argumentsJson: '{}', output: '' },
        { tool: 'beta', argumentsJson: '{}', output: '' },
      ],
      'The replay diverged at call 1: the program ended after 1 calls, but the recorded run made 2',
    ],
    [
      'fewer calls than recorded: the program waits on nothing',
      'await tools.alpha({}); await new Promise(() => {})',
      [
        { tool: 'alpha', argumentsJson: '{}', output: '' },
        { tool: 'beta', argumentsJson: '{}', output: '' },
      ],
      'The replay diverged at call 1: the program stopped making calls after 1 calls, but the recorded run made 2',
    ],
    [
      'more calls in a batch than the recorded run made',
      'await Promise.all([tools.alpha({}), tools.beta({})]); text("end")',
      [{ tool: 'alpha', argumentsJson: '{}', output: '' }],
      'The replay diverged at call 1 (tools.beta), made in the same batch as recorded calls: the recorded run made only 1 calls by then. Did an earlier tool output change since the program first received it?',
    ],
  ])('%s', async (_, code, recorded, message) => {
    const replay = new IsolateProgram(spec(code));
    expect(await replay.start(recorded)).toMatchObject({ type: 'incomplete', error: { code: 'replay_diverged', message } });
  });
});

describe('tool_output_too_large: a warm resume and a replay end at the same answer', () => {
  // Call 0 alone, then calls 1 (beta) and 2 (gamma) in one batch; gamma's error is caught, so a
  // program that got past an oversized answer would complete.
  const code =
    'const a = await tools.alpha({}); const [b, c] = await Promise.all([tools.beta({}), tools.gamma({}).catch((e) => "E:" + e.message)]); text(a + "|" + b.length + "|" + c.length)';
  const limited = (seed = 11): ProgramSpec => ({ ...spec(code, seed), limits: { ...spec(code, seed).limits, maxToolOutputBytes: 100 } });
  const first: RecordedCall = { tool: 'alpha', argumentsJson: '{}', output: 'ok' };
  const beta = (output: string): RecordedCall => ({ tool: 'beta', argumentsJson: '{}', output });
  const gamma = (error: string): RecordedCall => ({ tool: 'gamma', argumentsJson: '{}', output: '', error });

  it.each([
    ['an output over the limit', beta('x'.repeat(101)), gamma('no'), 'The output of tools.beta exceeds 100 bytes'],
    ['an error message over the limit', beta('fine'), gamma('e'.repeat(101)), 'The error message of tools.gamma exceeds 100 bytes'],
    [
      'an error message over the limit in UTF-8 bytes, not in characters',
      beta('fine'),
      gamma('é'.repeat(60)),
      'The error message of tools.gamma exceeds 100 bytes',
    ],
    ['both over the limit: the first in seq order is named', beta('x'.repeat(101)), gamma('e'.repeat(101)), 'The output of tools.beta exceeds 100 bytes'],
    ['both exactly at the limit', beta('x'.repeat(100)), gamma('e'.repeat(100)), undefined],
  ])('%s', async (_, betaAnswer, gammaAnswer, message) => {
    const history = [first, betaAnswer, gammaAnswer];
    const runtime = new ProgramRuntime({ pausedTtlMs: 60_000, maxPausedPrograms: 10, maxPausedHeapBytes: 1e9, warmIsolates: 2 });
    try {
      await runtime.start('live', limited());
      const batch = await runtime.resume('live', limited(), [first]);
      expect(batch.event.type === 'paused' && batch.event.calls.map((call) => call.tool)).toEqual(['beta', 'gamma']);
      const warm = await runtime.resume('live', limited(), history);
      const replayed = await runtime.resume('cold', limited(), history);
      expect([warm.path, replayed.path]).toEqual(['warm', 'replay']);
      expect(observable(replayed.event)).toEqual(observable(warm.event));
      if (message === undefined) expect(warm.event).toMatchObject({ type: 'completed', result: `ok|100|${'E:'.length + 100}` });
      else expect(warm.event).toMatchObject({ type: 'incomplete', error: { code: 'tool_output_too_large', message } });
    } finally {
      await runtime.close();
    }
  });

  it('checks a warm batch in seq order, whatever order its outputs are handed in', async () => {
    const live = new IsolateProgram(limited());
    await live.start();
    await live.resume([{ seq: 0, output: 'ok' }]);
    const ended = await live.resume([
      { seq: 2, output: '', error: 'e'.repeat(101) },
      { seq: 1, output: 'x'.repeat(101) },
    ]);
    const replayed = await new IsolateProgram(limited()).start([first, beta('x'.repeat(101)), gamma('e'.repeat(101))]);
    expect(ended).toMatchObject({ type: 'incomplete', error: { code: 'tool_output_too_large', message: 'The output of tools.beta exceeds 100 bytes' } });
    expect(observable(replayed)).toEqual(observable(ended));
  });

  it('ends a replay at the batch of the oversized answer, not before: an earlier divergence is reported as such', async () => {
    const replay = new IsolateProgram(limited());
    const event = await replay.start([{ ...first, argumentsJson: '{"n":1}' }, beta('x'.repeat(101)), gamma('no')]);
    expect(event).toMatchObject({ type: 'incomplete', error: { code: 'replay_diverged' } });
  });

  it('is not fooled by a program that sets Object.prototype.withheld', async () => {
    const polluting = 'Object.prototype.withheld = true; ' + code;
    const runtime = new ProgramRuntime({ pausedTtlMs: 60_000, maxPausedPrograms: 10, maxPausedHeapBytes: 1e9, warmIsolates: 2 });
    const pollutingSpec: ProgramSpec = { ...limited(), code: polluting };
    const history = [first, beta('fine'), gamma('no')];
    try {
      await runtime.start('live', pollutingSpec);
      await runtime.resume('live', pollutingSpec, [first]);
      const warm = await runtime.resume('live', pollutingSpec, history);
      const replayed = await runtime.resume('cold', pollutingSpec, history);
      expect([warm.path, replayed.path]).toEqual(['warm', 'replay']);
      expect(warm.event).toMatchObject({ type: 'completed', result: 'ok|4|4' });
      expect(observable(replayed.event)).toEqual(observable(warm.event));
    } finally {
      await runtime.close();
    }
  });
});

describe('calls a program makes while a replayed batch is delivered', () => {
  // Delivering an answer can run program code: here a getter of Object.prototype.then, read
  // when a JSON output (delta) settles the program's promise. A call made then belongs to the
  // next batch and is checked against the record like any other, as in the live run.
  const code = `
const log = [];
let armed = true, inner;
Object.defineProperty(Object.prototype, 'then', { configurable: true, get() { if (armed) { armed = false; inner = tools.beta({ v: this.v }); inner.then(() => log.push('beta')); } return undefined; } });
const d = await tools.delta({});
log.push('delta');
for (let i = 0; i < 5; i++) await null;
log.push('ticks');
await tools.gamma({});
text(log.join(',') + ' / ' + (await inner));
`;

  it('land in the batch they land in live, so a replay pauses and ends where the live run did', async () => {
    const { events, history } = await liveRun(code);
    let answered = 0;
    for (const event of events) {
      const replayed = await new IsolateProgram(spec(code)).start(history.slice(0, answered));
      expect(observable(replayed)).toEqual(observable(event));
      if (event.type === 'paused') answered += event.calls.length;
    }
    expect(events.at(-1)).toMatchObject({ type: 'completed' });
  });

  it('are checked against the record: an altered earlier answer that changes one is a divergence', async () => {
    const { history } = await liveRun(code);
    const altered = history.map((call) => (call.tool === 'delta' ? { ...call, output: '{"v":-1}' } : call));
    const replayed = await new IsolateProgram(spec(code)).start(altered);
    expect(replayed).toMatchObject({ type: 'incomplete', error: { code: 'replay_diverged', message: expect.stringContaining('tools.beta({"v":-1})') } });
  });
});

describe('a replay of large outputs', () => {
  it('holds only part of the record in the isolate at a time, so outputs the program drops fit as they did live', async () => {
    // 24 outputs of 1 MiB: 24 MiB in all, over the 16 MiB heap, but one at a time live.
    const code = 'let total = 0; for (let i = 0; i < 24; i++) total += (await tools.alpha({ i })).length; text(total)';
    const small: ProgramSpec = { ...spec(code), limits: { ...spec(code).limits, memoryMb: 16 } };
    const output = 'x'.repeat(1024 * 1024);
    const live = new IsolateProgram(small);
    let event = await live.start();
    const history: RecordedCall[] = [];
    while (event.type === 'paused') {
      for (const call of event.calls) history.push({ tool: call.tool, argumentsJson: call.argumentsJson, output });
      event = await live.resume(event.calls.map((call) => ({ seq: call.seq, output })));
    }
    expect(event).toMatchObject({ type: 'completed', result: String(24 * output.length) });
    const replayed = await new IsolateProgram(small).start(history);
    expect(observable(replayed)).toEqual(observable(event));
    // Paused half way, a replay goes on from there as the live run did.
    const halfway = await new IsolateProgram(small).start(history.slice(0, 12));
    expect(halfway).toMatchObject({ type: 'paused', calls: [{ seq: 12, tool: 'alpha' }] });
  });
});

describe('a replay ends where the live run ended', () => {
  /** Runs `code` live with `answer` for every call, then replays the whole history. */
  async function liveThenReplay(programSpec: ProgramSpec, answerOf: (seq: number) => string): Promise<{ live: ProgramEvent; replayed: ProgramEvent }> {
    const program = new IsolateProgram(programSpec);
    let live = await program.start();
    const history: RecordedCall[] = [];
    while (live.type === 'paused') {
      for (const call of live.calls) history.push({ tool: call.tool, argumentsJson: call.argumentsJson, output: answerOf(call.seq) });
      live = await program.resume(live.calls.map((call) => ({ seq: call.seq, output: answerOf(call.seq) })));
    }
    return { live, replayed: await new IsolateProgram(programSpec).start(history) };
  }

  it('with outputs that grow under JSON escaping, and large arguments the program let go', async () => {
    const code = 'let n = 0; for (let i = 0; i < 12; i++) n += (await tools.alpha({ i, blob: "m".repeat(900000) })).length; text(n)';
    const small: ProgramSpec = { ...spec(code), limits: { ...spec(code).limits, memoryMb: 16 } };
    // A control character is one byte, and six as JSON: 12 × 6 MiB would not fit at once.
    const { live, replayed } = await liveThenReplay(small, () => '\u0001'.repeat(1024 * 1024));
    expect(live).toMatchObject({ type: 'completed', result: String(12 * 1024 * 1024) });
    expect(observable(replayed)).toEqual(observable(live));
  });

  it('when delivering a batch throws in an output_schema check the program broke', async () => {
    const tools = [
      { name: 'alpha', parseOutputAsJson: false },
      { name: 'delta', parseOutputAsJson: true, outputSchema: { type: 'object', properties: { v: { type: 'array' } } } },
    ];
    const code =
      'const b = tools.alpha({}); const d = tools.delta({}); d.catch(() => {}); Array.isArray = () => { throw new Error("boom") }; text("b=" + (await b) + " d=" + (await d.catch((e) => e.message)))';
    const { live, replayed } = await liveThenReplay({ ...spec(code), tools }, (seq) => (seq === 0 ? 'B' : '{"v":[]}'));
    expect(live).toMatchObject({ type: 'completed', result: 'b=B d=boom' });
    expect(observable(replayed)).toEqual(observable(live));
  });

  it('at the resume limit, before the program runs on past it', async () => {
    const code = 'await tools.alpha({}); await tools.alpha({}); await tools.alpha({}); for (;;) {}';
    const limited: ProgramSpec = { ...spec(code), limits: { ...spec(code).limits, maxResumes: 2, stepWallTimeMs: 300 } };
    const { live, replayed } = await liveThenReplay(limited, () => 'o');
    expect(live).toMatchObject({ type: 'incomplete', error: { code: 'resume_limit_exceeded' } });
    expect(observable(replayed)).toEqual(observable(live));
  });
});
