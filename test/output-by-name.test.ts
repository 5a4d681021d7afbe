import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { functionCallsOf, inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// openai 7.x lets a function_call_output leave out call_id and name its tool (and namespace)
// instead: the emulator pairs it with the one call of that tool waiting for its output.

const MODEL = 'ptc-emulator';
const TOOLS = programTools('get_a', 'get_b');

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({});
});
afterAll(() => server.close());

/** A program's first turn, paused on its calls, and the items a store: false client resends. */
async function paused(code: string): Promise<{ resent: ResponseInputItem[]; calls: ReturnType<typeof functionCallsOf> }> {
  const user: ResponseInputItem = { role: 'user', content: inlineProgram(code) };
  const first = await server.client.responses.create({ model: MODEL, store: false, input: [user], tools: TOOLS });
  return { resent: [user, ...toResponseInputItems(first.output)], calls: functionCallsOf(first) };
}

describe('a function_call_output without call_id', () => {
  it('reaches the one call of the tool it names: two parallel calls answered by name, store: false', async () => {
    const { resent, calls } = await paused('const [a, b] = await Promise.all([tools.get_a({}), tools.get_b({})]); text(`${a}+${b}`);');
    expect(calls.map((call) => call.name)).toEqual(['get_a', 'get_b']);
    const caller = calls[0]!.caller;
    // Answered in the other order, by name alone.
    const outputs: ResponseInputItem[] = [
      { type: 'function_call_output', name: 'get_b', output: 'B', caller },
      { type: 'function_call_output', name: 'get_a', output: 'A', caller },
    ];
    const done = await server.client.responses.create({ model: MODEL, store: false, input: [...resent, ...outputs], tools: TOOLS });
    expect(programOutputOf(done)).toMatchObject({ status: 'completed', result: 'A+B' });
  });

  it('is paired the same way when the conversation is stored (previous_response_id)', async () => {
    const user: ResponseInputItem = { role: 'user', content: inlineProgram('text(await tools.get_a({ n: 1 }));') };
    const first = await server.client.responses.create({ model: MODEL, input: [user], tools: TOOLS });
    const [call] = functionCallsOf(first);
    const done = await server.client.responses.create({
      model: MODEL,
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', name: 'get_a', output: 'stored', caller: call!.caller }],
      tools: TOOLS,
    });
    expect(programOutputOf(done)).toMatchObject({ status: 'completed', result: 'stored' });
  });

  it('is a 400 naming the calls when two of its tool wait, and when none does', async () => {
    const { resent, calls } = await paused('const [x, y] = await Promise.all([tools.get_a({ n: 1 }), tools.get_a({ n: 2 })]); text(x + y);');
    const caller = calls[0]!.caller;
    const ambiguous = await rejectionOf(
      server.client.responses.create({
        model: MODEL,
        store: false,
        input: [...resent, { type: 'function_call_output', name: 'get_a', output: '1', caller }],
        tools: TOOLS,
      }),
    );
    expectSdkError(ambiguous, {
      code: 'tool_output_unknown_call',
      param: `input[${resent.length}].call_id`,
      mentions: ['2 function_calls of get_a', calls[0]!.call_id, calls[1]!.call_id],
    });
    const unknown = await rejectionOf(
      server.client.responses.create({
        model: MODEL,
        store: false,
        input: [...resent, { type: 'function_call_output', name: 'get_b', output: '1', caller }],
        tools: TOOLS,
      }),
    );
    expectSdkError(unknown, { code: 'tool_output_unknown_call', param: `input[${resent.length}].name`, mentions: ['no earlier function_call of get_b'] });
  });

  it('is not paired with a call another output answers by call_id, before or after it', async () => {
    const { resent, calls } = await paused('const [x, y] = await Promise.all([tools.get_a({ n: 1 }), tools.get_a({ n: 2 })]); text(`${x},${y}`);');
    const caller = calls[0]!.caller;
    // By name first, then the other call by call_id: the by-name output can only be the first call's.
    const outputs: ResponseInputItem[] = [
      { type: 'function_call_output', name: 'get_a', output: 'one', caller },
      { type: 'function_call_output', call_id: calls[1]!.call_id, output: 'two', caller },
    ];
    const done = await server.client.responses.create({ model: MODEL, store: false, input: [...resent, ...outputs], tools: TOOLS });
    expect(programOutputOf(done)).toMatchObject({ status: 'completed', result: 'one,two' });
  });

  it('is a 400 when it names no tool either', async () => {
    const { resent, calls } = await paused('text(await tools.get_a({}));');
    const error = await rejectionOf(
      server.client.responses.create({
        model: MODEL,
        store: false,
        input: [...resent, { type: 'function_call_output', output: 'x', caller: calls[0]!.caller }],
        tools: TOOLS,
      }),
    );
    expectSdkError(error, { code: 'missing_required_parameter', param: `input[${resent.length}].call_id`, mentions: ['needs call_id, or name'] });
  });
});
