import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { Response, ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { answer, generatedProgram, JSON_TOOL, STRING_TOOLS } from './support/program-generator.ts';
import { functionCallsOf, inlineProgram } from './support/programs.ts';
import { metric, startServer, type RunningServer } from './support/server.ts';

const TOOLS: OpenAI.Responses.Tool[] = [
  ...[...STRING_TOOLS, JSON_TOOL].map(
    (name): OpenAI.Responses.Tool => ({
      type: 'function',
      name,
      parameters: { type: 'object' },
      strict: false,
      ...(name === JSON_TOOL ? { output_schema: { type: 'object' } } : {}),
      allowed_callers: ['programmatic'],
    }),
  ),
  { type: 'programmatic_tool_calling' },
];

// Two deployments sharing a fingerprint key: `live` keeps each program's isolate paused between
// requests; `cold` has never seen the programs and must replay every one from the items.
let live: RunningServer;
let cold: RunningServer;
beforeAll(async () => {
  const fingerprintKey = randomUUID();
  live = await startServer({ config: { fingerprintKey } });
  cold = await startServer({ config: { fingerprintKey, maxPausedPrograms: 0 } });
});
afterAll(async () => {
  await live.close();
  await cold.close();
});

/** Items as they would compare byte for byte; only the final message's id is random. */
function comparable(response: Response): string {
  return JSON.stringify(response.output.map((item) => (item.type === 'message' ? { ...item, id: 'msg' } : item)));
}

it('a cold server replaying from the items answers every step of generated programs byte for byte like the live one', async () => {
  await fc.assert(
    fc.asyncProperty(generatedProgram, async (code) => {
      const input: ResponseInputItem[] = [{ role: 'user', content: inlineProgram(code) }];
      for (;;) {
        const fromLive = await live.client.responses.create({ model: 'm', store: false, input, tools: TOOLS });
        if (input.length > 1) {
          const fromCold = await cold.client.responses.create({ model: 'm', store: false, input, tools: TOOLS });
          expect(comparable(fromCold)).toBe(comparable(fromLive));
        }
        input.push(...toResponseInputItems(fromLive.output));
        const calls = functionCallsOf(fromLive);
        if (calls.length === 0) break;
        for (const call of calls) {
          input.push({ type: 'function_call_output', call_id: call.call_id, output: answer(call.name, call.arguments), caller: call.caller ?? null });
        }
      }
    }),
    { numRuns: 40 },
  );
  expect(await metric(live, 'ptc_program_resumes_total{path="replay"}')).toBe(0);
  expect(await metric(cold, 'ptc_program_resumes_total{path="warm"}')).toBe(0);
  expect(await metric(cold, 'ptc_program_resumes_total{path="replay"}')).toBeGreaterThan(40);
});
