import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../runtime/limits.ts';
import { functionCallsOf, inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { metric, startServer } from './support/server.ts';

describe('a failing program over HTTP', () => {
  // Each case's limits keep the other clocks far out of reach, so that on a loaded machine the
  // one it is about fires first by a wide margin (a loop's two clocks run at the same pace, and
  // reaching the heap limit can take isolated-vm most of a second).
  const limitsFor = (cpuTimeMs: number, stepWallTimeMs: number) => ({ ...DEFAULT_LIMITS, cpuTimeMs, stepWallTimeMs, memoryMb: 16 });
  it.each([
    ['throws', 'throw new Error("boom")', limitsFor(5_000, 2_000), 'program_threw', 'Error: boom (line 1, column 7)'],
    ['loops forever', 'while (true) {}', limitsFor(5_000, 300), 'wall_time_exceeded', 'One execution step ran longer than 300 ms'],
    [
      'allocates without end',
      'const a = []; while (true) a.push(new Array(1e5).fill(1.5))',
      limitsFor(40_000, 20_000),
      'memory_limit_exceeded',
      "The program's heap exceeded 16 MiB",
    ],
  ])('that %s yields program_output incomplete with its code, and the server keeps serving', async (_, code, limits, errorCode, message) => {
    const server = await startServer({ config: { limits } });
    try {
      const response = await server.client.responses.create({ model: 'any', input: inlineProgram(code), tools: programTools() });
      expect(response.status).toBe('completed');
      const output = programOutputOf(response);
      expect(output?.status).toBe('incomplete');
      expect(JSON.parse(output?.result ?? '')).toEqual({ error: { code: errorCode, message } });
      // The final message follows, and the same server runs the next program normally.
      expect(response.output.at(-1)?.type).toBe('message');
      const next = await server.client.responses.create({ model: 'any', input: inlineProgram('text("still here")'), tools: programTools() });
      expect(programOutputOf(next)).toMatchObject({ status: 'completed', result: 'still here' });
    } finally {
      await server.close();
    }
  });
});

describe('a paused program whose isolate the server no longer holds', () => {
  const code = 'const a = await tools.get({n: 1}); const b = await tools.get({n: Number(a) + 1}); text(a + b + Math.random())';

  it.each([
    ['evicted beyond the bound on paused isolates', { maxPausedPrograms: 1 }, 0],
    // The TTL far beyond a request's time on a loaded machine (the warm resume must find the
    // isolate), the wait far beyond the TTL.
    ['idle past its TTL', { pausedTtlMs: 1500 }, 3500],
  ])('resumes by replay when %s, with the same items the warm isolate gave', async (_, config, wait) => {
    const server = await startServer({ config });
    try {
      const tools = programTools('get');
      const user: ResponseInputItem = { role: 'user', content: inlineProgram(code) };
      const first = await server.client.responses.create({ model: 'any', store: false, input: [user], tools });
      const [call] = functionCallsOf(first);
      const afterFirst: ResponseInputItem[] = [
        user,
        ...toResponseInputItems(first.output),
        { type: 'function_call_output', call_id: call!.call_id, output: '5', caller: call!.caller ?? null },
      ];

      const warm = await server.client.responses.create({ model: 'any', store: false, input: afterFirst, tools });
      expect(await metric(server, 'ptc_program_resumes_total{path="warm"}')).toBe(1);

      // Push the program's isolate out: another paused program beyond the bound, or time.
      await server.client.responses.create({ model: 'any', store: false, input: [user], tools });
      await new Promise((resolve) => setTimeout(resolve, wait));
      const replayed = await server.client.responses.create({ model: 'any', store: false, input: afterFirst, tools });
      expect(await metric(server, 'ptc_program_resumes_total{path="replay"}')).toBe(1);
      expect(replayed.output).toEqual(warm.output);
      expect(functionCallsOf(replayed)[0]?.arguments).toBe('{"n":6}');

      // And the replayed program goes on to the end like any other.
      const [second] = functionCallsOf(replayed);
      const done = await server.client.responses.create({
        model: 'any',
        store: false,
        input: [
          ...afterFirst,
          ...toResponseInputItems(replayed.output),
          { type: 'function_call_output', call_id: second!.call_id, output: '7', caller: second!.caller ?? null },
        ],
        tools,
      });
      expect(programOutputOf(done)?.result).toMatch(/^570\.\d+$/);
    } finally {
      await server.close();
    }
  });

  it('drops paused isolates beyond the heap bound, and they still resume by replay', async () => {
    const server = await startServer({ config: { maxPausedHeapBytes: 1024 * 1024 } });
    try {
      const tools = programTools('get');
      // A few MiB kept alive across the pause: more than the whole cache may hold.
      const user: ResponseInputItem = { role: 'user', content: inlineProgram('const big = new Array(5e5).fill(1.5); text(big.length + await tools.get({}))') };
      const first = await server.client.responses.create({ model: 'any', store: false, input: [user], tools });
      expect(await metric(server, 'ptc_paused_program_evictions_total{reason="memory"}')).toBe(1);
      expect(await metric(server, 'ptc_paused_programs')).toBe(0);
      const [call] = functionCallsOf(first);
      const resumed = await server.client.responses.create({
        model: 'any',
        store: false,
        input: [
          user,
          ...toResponseInputItems(first.output),
          { type: 'function_call_output', call_id: call!.call_id, output: '!', caller: call!.caller ?? null },
        ],
        tools,
      });
      expect(programOutputOf(resumed)?.result).toBe('500000!');
      expect(await metric(server, 'ptc_program_resumes_total{path="replay"}')).toBe(1);
    } finally {
      await server.close();
    }
  });

  it('counts evictions by reason in /metrics', async () => {
    const server = await startServer({ config: { maxPausedPrograms: 1 } });
    try {
      const tools = programTools('get');
      for (let i = 0; i < 3; i++) await server.client.responses.create({ model: 'any', input: inlineProgram('await tools.get({})'), tools });
      expect(await metric(server, 'ptc_paused_program_evictions_total{reason="count"}')).toBe(2);
      expect(await metric(server, 'ptc_paused_programs')).toBe(1);
      expect(await metric(server, 'ptc_programs_started_total')).toBe(3);
    } finally {
      await server.close();
    }
  });
});

describe('sequential pauses through the SDK', () => {
  it('pauses once per awaited call and resumes in order until the final message', async () => {
    const server = await startServer();
    try {
      const tools = programTools('step');
      const code = 'let total = 0; for (let i = 1; i <= 3; i++) total += Number(await tools.step({i})); text(total)';
      let response = await server.client.responses.create({ model: 'any', input: inlineProgram(code), tools });
      const seen: string[] = [];
      for (;;) {
        const calls = functionCallsOf(response);
        if (calls.length === 0) break;
        seen.push(...calls.map((call) => call.arguments));
        response = await server.client.responses.create({
          model: 'any',
          previous_response_id: response.id,
          input: calls.map((call) => ({
            type: 'function_call_output' as const,
            call_id: call.call_id,
            output: String(JSON.parse(call.arguments).i * 10),
            caller: call.caller ?? null,
          })),
          tools,
        });
      }
      expect(seen).toEqual(['{"i":1}', '{"i":2}', '{"i":3}']);
      expect(programOutputOf(response)).toMatchObject({ status: 'completed', result: '60' });
      expect(response.output_text).toBe('60');
    } finally {
      await server.close();
    }
  });
});
