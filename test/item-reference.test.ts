import type OpenAI from 'openai';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { functionCallsOf, inlineProgram, programTools } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// `item_reference` input items (ResponseInputItem.ItemReference of openai 7.60.0): an item of a
// stored response named by its id, read as that item — what the Vercel AI SDK sends for its
// `store: true` conversations — and the hosted 404 for an id no stored response emitted.

let server: RunningServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.close());

const PROGRAM = 'const [a, b] = await Promise.all([tools.left({}), tools.right({})]); text(`${a}+${b}`);';
const TOOLS = programTools('left', 'right');
const HOSTED_MESSAGE = (id: string) =>
  `Item with id '${id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`;

/** A paused program's first response, and the input that resumes it with every stored item given by reference. */
async function pausedByReference(client: OpenAI, store = true) {
  const question: ResponseInputItem = { role: 'user', content: inlineProgram(PROGRAM) };
  const paused = await client.responses.create({ model: 'm', input: [question], tools: TOOLS, store });
  const references: ResponseInputItem[] = paused.output
    .filter((item) => item.type !== 'function_call')
    .map((item) => ({ type: 'item_reference', id: item.id as string }));
  const calls = functionCallsOf(paused);
  const outputs: ResponseInputItem[] = calls.map((call, index) => ({
    type: 'function_call_output',
    call_id: call.call_id,
    output: String(index + 1),
    caller: call.caller!,
  }));
  // The calls themselves whole, as the Vercel AI SDK resends them.
  const whole: ResponseInputItem[] = calls.map(({ call_id, name, arguments: args, caller }) => ({
    type: 'function_call',
    call_id,
    name,
    arguments: args,
    caller: caller!,
  }));
  return { paused, question, references, whole, outputs };
}

describe('item_reference', () => {
  it('a stored program sent by reference resumes: the program ends with its output, then the message', async () => {
    const { paused, question, references, whole, outputs } = await pausedByReference(server.client);
    // The inline stand-in writes no reasoning: the program is the one stored item besides the calls.
    expect(references.map((item) => (item as { id: string }).id.split('_')[0])).toEqual(['cm']);
    const done = await server.client.responses.create({ model: 'm', input: [question, ...references, ...whole, ...outputs], tools: TOOLS });
    expect(done.output.map((item) => item.type)).toEqual(['program_output', 'message']);
    const programOutput = done.output[0] as { call_id: string; result: string };
    expect(programOutput.call_id).toBe((paused.output[0] as { call_id: string }).call_id);
    expect(programOutput.result).toBe('1+2');

    // The response stores the items the references named, not the references.
    const listed = [];
    for await (const item of server.client.responses.inputItems.list(done.id, { order: 'asc' })) listed.push(item);
    expect(listed.map((item) => item.type)).toEqual(['message', 'program', 'function_call', 'function_call', 'function_call_output', 'function_call_output']);
    expect(listed[1]).toEqual(paused.output[0]);
  });

  it('an input item that is only an id (the type is optional in the SDK) is a reference too', async () => {
    const { question, references, whole, outputs } = await pausedByReference(server.client);
    const bare = references.map((item) => ({ id: (item as { id: string }).id }) as ResponseInputItem);
    const done = await server.client.responses.create({ model: 'm', input: [question, ...bare, ...whole, ...outputs], tools: TOOLS });
    expect(done.output.map((item) => item.type)).toEqual(['program_output', 'message']);
  });

  it('an id no stored response emitted is the hosted 404, naming the item', async () => {
    const error = await rejectionOf(
      server.client.responses.create({
        model: 'm',
        input: [
          { role: 'user', content: 'hi' },
          { type: 'item_reference', id: 'msg_doesnotexist' },
        ],
      }),
    );
    expectSdkError(error, { code: 'item_not_found', param: 'input[1]', message: HOSTED_MESSAGE('msg_doesnotexist') });
  });

  it('an item of a store: false response, or of a deleted one, is not found', async () => {
    const unstored = await pausedByReference(server.client, false);
    const programId = (unstored.references[0] as { id: string }).id;
    const error = await rejectionOf(
      server.client.responses.create({ model: 'm', input: [unstored.question, ...unstored.references, ...unstored.whole, ...unstored.outputs], tools: TOOLS }),
    );
    expectSdkError(error, { code: 'item_not_found', param: 'input[1]', message: HOSTED_MESSAGE((unstored.references[0] as { id: string }).id) });

    const stored = await pausedByReference(server.client);
    await server.client.responses.delete(stored.paused.id);
    const gone = await rejectionOf(
      server.client.responses.create({ model: 'm', input: [stored.question, ...stored.references, ...stored.whole, ...stored.outputs], tools: TOOLS }),
    );
    expectSdkError(gone, { code: 'item_not_found', param: 'input[1]' });
    expect(programId).toMatch(/^cm_/);
  });

  it('a referenced program continued without its calls is the client-loop 400, with no advice about store: false', async () => {
    const { question, references } = await pausedByReference(server.client);
    const { paused } = await pausedByReference(server.client);
    const calls = functionCallsOf(paused);
    // Outputs for another program's calls, whose program item is nowhere in this conversation.
    const stray: ResponseInputItem[] = calls.map((call) => ({
      type: 'function_call',
      call_id: call.call_id,
      name: call.name,
      arguments: call.arguments,
      caller: call.caller!,
    }));
    const error = await rejectionOf(server.client.responses.create({ model: 'm', input: [question, ...references, ...stray], tools: TOOLS }));
    expectSdkError(error, { code: 'program_item_missing', param: 'input[2].caller.caller_id', mentions: ['item_reference'] });
    expect((error as Error).message).not.toContain('store: false');
  });

  it('an item twice in one input is the hosted duplicate 400: two references, or a reference and the item whole', async () => {
    const { question, references, whole, outputs, paused } = await pausedByReference(server.client);
    const duplicate = (input: ResponseInputItem[]) => rejectionOf(server.client.responses.create({ model: 'm', input, tools: TOOLS }));
    const programId = paused.output[0]!.id as string;
    for (const input of [
      [question, ...references, ...references, ...whole, ...outputs],
      [question, ...references, paused.output[0] as ResponseInputItem, ...whole, ...outputs],
    ]) {
      expectSdkError(await duplicate(input), {
        code: 'duplicate_item_id',
        param: 'input[2].id',
        message: `Duplicate item found with id ${programId}. Remove duplicate items from your input and try again.`,
      });
    }
  });

  it('two branches of one paused program answered differently end in two program_outputs with ids of their own, each read back as itself', async () => {
    const { question, references, whole, paused } = await pausedByReference(server.client);
    const branch = async (answer: string) => {
      const outputs: ResponseInputItem[] = functionCallsOf(paused).map((call) => ({
        type: 'function_call_output',
        call_id: call.call_id,
        output: answer,
        caller: call.caller!,
      }));
      const done = await server.client.responses.create({ model: 'm', input: [question, ...references, ...whole, ...outputs], tools: TOOLS });
      return done.output[0] as { id: string; result: string };
    };
    const [one, two] = [await branch('1'), await branch('2')];
    expect([one.result, two.result]).toEqual(['1+1', '2+2']);
    expect(one.id).not.toBe(two.id);
    const conversation = await server.client.conversations.create({
      items: [
        { type: 'item_reference', id: one.id },
        { type: 'item_reference', id: two.id },
      ],
    });
    const items = await server.client.conversations.items.list(conversation.id, { order: 'asc' });
    expect(items.data.map((item) => (item as { result?: string }).result)).toEqual(['1+1', '2+2']);
  });

  it('the items references name are bounded by the body limit, measured before they are read: a 413 saying so', async () => {
    const small = await startServer({ config: { bodyLimitBytes: 48 * 1024 } });
    try {
      // Each response's program_output carries ~20 KB; three of them come to more than 48 KiB.
      const ids: string[] = [];
      for (let index = 0; index < 3; index += 1) {
        const response = await small.client.responses.create({ model: 'm', input: inlineProgram(`text("${index}".repeat(20000))`), tools: TOOLS });
        ids.push(response.output.find((item) => item.type === 'program_output')!.id as string);
      }
      const two = await small.client.responses.inputTokens.count({ model: 'm', input: ids.slice(0, 2).map((id) => ({ type: 'item_reference', id })) });
      expect(two.input_tokens).toBeGreaterThan(0);
      const error = await rejectionOf(
        small.client.responses.create({ model: 'm', input: ids.map((id): ResponseInputItem => ({ type: 'item_reference', id })), tools: TOOLS }),
      );
      expectSdkError(error, { code: 'request_too_large', param: 'input', mentions: ['PTC_BODY_LIMIT_BYTES', `${48 * 1024} bytes`] });
    } finally {
      await small.close();
    }
  });

  it('the Conversations API and input token counts read references as their items', async () => {
    const { paused } = await pausedByReference(server.client);
    const program = paused.output.find((item) => item.type === 'program')!;
    const conversation = await server.client.conversations.create({ items: [{ type: 'item_reference', id: program.id as string }] });
    const items = await server.client.conversations.items.list(conversation.id);
    expect(items.data.map((item) => [item.type, item.id])).toEqual([['program', program.id]]);

    const byReference = await server.client.responses.inputTokens.count({ model: 'm', input: [{ type: 'item_reference', id: program.id as string }] });
    const whole = await server.client.responses.inputTokens.count({ model: 'm', input: [program as ResponseInputItem] });
    expect(byReference.input_tokens).toBe(whole.input_tokens);
    const missing = await rejectionOf(server.client.conversations.items.create(conversation.id, { items: [{ type: 'item_reference', id: 'cm_nope' }] }));
    expectSdkError(missing, { code: 'item_not_found', param: 'items[0]' });
  });
});
