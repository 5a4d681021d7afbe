/**
 * A program's fingerprint seals its tools, so it grows with them: a program with hundreds of
 * tools must resume as any other, and one whose fingerprint could not be opened is not started.
 */
import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_FINGERPRINT_LENGTH } from '../runtime/fingerprint.ts';
import { functionCallsOf, inlineProgram, programOutputOf } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

function manyTools(count: number, nameLength = 12): OpenAI.Responses.Tool[] {
  return [
    ...Array.from(
      { length: count },
      (_, index): OpenAI.Responses.Tool => ({
        type: 'function',
        name: `t${String(index).padStart(nameLength - 1, '0')}`,
        parameters: null,
        strict: false,
        allowed_callers: ['programmatic'],
      }),
    ),
    { type: 'programmatic_tool_calling' },
  ];
}

let server: RunningServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

describe('programs with many tools', () => {
  it('a program with 400 tools (a fingerprint over 16 KiB) pauses and resumes with store: false (every resume opens its fingerprint)', async () => {
    const tools = manyTools(400);
    const input: ResponseInputItem[] = [{ role: 'user', content: inlineProgram('text(await tools.t00000000399({}))') }];
    const first = await server.client.responses.create({ model: 'm', store: false, input, tools });
    const program = first.output.find((item) => item.type === 'program');
    expect(program && 'fingerprint' in program ? program.fingerprint.length : 0).toBeGreaterThan(16 * 1024);
    const [call] = functionCallsOf(first);
    const resumed = await server.client.responses.create({
      model: 'm',
      store: false,
      tools,
      input: [
        ...input,
        ...toResponseInputItems(first.output),
        { type: 'function_call_output', call_id: call!.call_id, output: 'deep', caller: call!.caller ?? null },
      ],
    });
    expect(programOutputOf(resumed)).toMatchObject({ status: 'completed', result: 'deep' });
  });

  it('a program whose fingerprint would be over what a server opens is not started: the stand-in says why', async () => {
    // Names of 64 characters: each sealed tool is over 100 characters of fingerprint (base64 of its JSON).
    const count = Math.ceil(MAX_FINGERPRINT_LENGTH / 100);
    const response = await server.client.responses.create({ model: 'm', input: inlineProgram('text("never runs")'), tools: manyTools(count, 64) });
    expect(response.output.map((item) => item.type)).toEqual(['message']);
    expect(response.output_text).toContain(`the fingerprint of a program with ${count} tools would be`);
    expect(response.output_text).toContain(`over the ${MAX_FINGERPRINT_LENGTH} a server opens`);
  });
});
