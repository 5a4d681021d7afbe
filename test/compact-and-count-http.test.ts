/**
 * `client.responses.inputTokens.count` and `client.responses.compact` through the openai SDK
 * against a listening server, on every store: a count equals the usage of the response it
 * predicts, and a program paused across a compaction resumes from the compacted items.
 */
import type OpenAI from 'openai';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { functionCallsOf, inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';
import { serverStores } from './support/store-cases.ts';

const { stores, configFor } = await serverStores('ptc-compact-http-');

describe.each(stores)('input_tokens and compact on the %s store', (store, available) => {
  let server: RunningServer;
  let client: OpenAI;
  beforeEach(async ({ skip }) => {
    skip(!available, 'no Redis available');
    // Counting is the subject, not the stand-in: with the autopilot off each turn is one message, no calls to answer.
    server = await startServer({ config: { ...configFor(store), autopilot: false } });
    client = server.client;
  });
  afterEach(async () => {
    await server?.close();
  });

  test('a count is the input_tokens of the response it predicts: alone, after a stored chain, in a conversation', async () => {
    const tools = programTools('get', 'put');
    const request = { model: 'm', instructions: 'Be brief.', input: 'What is in stock? “ünïcödé” 🚀', tools };
    const counted = await client.responses.inputTokens.count(request);
    expect(counted).toEqual({ object: 'response.input_tokens', input_tokens: expect.any(Number) });
    const first = await client.responses.create(request);
    expect(counted.input_tokens).toBe(first.usage!.input_tokens);

    const next = { model: 'm', previous_response_id: first.id, input: 'And tomorrow?', tools };
    const countedNext = await client.responses.inputTokens.count(next);
    expect(countedNext.input_tokens).toBe((await client.responses.create(next)).usage!.input_tokens);
    expect(countedNext.input_tokens).toBeGreaterThan(counted.input_tokens);

    const conversation = await client.conversations.create({ items: [{ type: 'message', role: 'user', content: 'Earlier words.' }] });
    const inConversation = { model: 'm', conversation: conversation.id, input: 'Now.' };
    const countedInConversation = await client.responses.inputTokens.count(inConversation);
    expect(countedInConversation.input_tokens).toBe((await client.responses.create(inConversation)).usage!.input_tokens);
    // Counting adds nothing to the conversation.
    const items = await client.conversations.items.list(conversation.id);
    expect(items.data).toHaveLength(3);
  });

  test('a count with no body is of nothing; its refusals are those of a response', async () => {
    expect(await client.responses.inputTokens.count()).toEqual({ object: 'response.input_tokens', input_tokens: 0 });
    expectSdkError(await rejectionOf(client.responses.inputTokens.count({ previous_response_id: 'resp_never' })), {
      code: 'previous_response_not_found',
      param: 'previous_response_id',
    });
    expectSdkError(await rejectionOf(client.responses.inputTokens.count({ conversation: 'conv_never' })), {
      code: 'conversation_not_found',
      param: 'conversation',
    });
    expectSdkError(await rejectionOf(client.responses.inputTokens.count({ input: 'x', stream: true } as never)), {
      code: 'unknown_parameter',
      param: 'stream',
    });
  });

  test('compact keeps the user messages and a paused program, which resumes from the compacted items', async () => {
    const tools = programTools('get');
    const done = await client.responses.create({ model: 'm', input: inlineProgram('text("first program done")'), tools });
    expect(programOutputOf(done)?.status).toBe('completed');
    const paused = await client.responses.create({
      model: 'm',
      previous_response_id: done.id,
      input: inlineProgram('const v = await tools.get({}); text("got " + v)'),
      tools,
    });
    const [call] = functionCallsOf(paused);

    const compacted = await client.responses.compact({ model: 'm', previous_response_id: paused.id });
    expect(compacted).toMatchObject({ id: expect.stringMatching(/^resp_/), object: 'response.compaction', created_at: expect.any(Number) });
    expect(compacted.output.map((item) => item.type)).toEqual(['message', 'message', 'compaction']);
    expect(compacted.output.slice(0, 2)).toEqual([
      expect.objectContaining({ role: 'user', content: [{ type: 'input_text', text: inlineProgram('text("first program done")') }] }),
      expect.objectContaining({ role: 'user' }),
    ]);
    expect(compacted.usage.total_tokens).toBe(compacted.usage.input_tokens + compacted.usage.output_tokens);
    // What was dropped (the first program, its answer) costs nothing after the compaction.
    expect(compacted.usage.output_tokens).toBeLessThan(compacted.usage.input_tokens);

    // The compacted items stand for the whole history: the paused program resumes from them.
    const resumed = await client.responses.create({
      model: 'm',
      store: false,
      input: [
        ...(compacted.output as ResponseInputItem[]),
        { type: 'function_call_output', call_id: call!.call_id, output: '42', caller: call!.caller ?? null },
      ],
      tools,
    });
    expect(programOutputOf(resumed)).toMatchObject({ status: 'completed', result: 'got 42' });
    expect(resumed.usage!.input_tokens).toBeLessThan(
      (
        await client.responses.inputTokens.count({
          previous_response_id: paused.id,
          input: [{ type: 'function_call_output', call_id: call!.call_id, output: '42', caller: call!.caller ?? null }],
          tools,
        })
      ).input_tokens,
    );
  });

  test('compact of input alone: its user messages kept in order, the assistant message dropped', async () => {
    const compacted = await client.responses.compact({
      model: 'm',
      input: [
        { role: 'user', content: 'one' },
        { role: 'assistant', content: 'two' },
        { role: 'user', content: 'three' },
      ],
    });
    expect(compacted.output.map((item) => (item.type === 'message' ? `${item.role}:${(item.content[0] as { text: string }).text}` : item.type))).toEqual([
      'user:one',
      'user:three',
      'compaction',
    ]);
    // A compaction with nothing running holds nothing; the next response reads it as no items.
    const after = await client.responses.create({ model: 'm', input: [...(compacted.output as ResponseInputItem[]), { role: 'user', content: 'four' }] });
    expect(after.status).toBe('completed');
  });

  test('an altered compaction item is refused, naming it', async () => {
    const compacted = await client.responses.compact({ model: 'm', input: 'hello' });
    const item = compacted.output.at(-1) as { type: 'compaction'; encrypted_content: string; id: string };
    const altered = { ...item, encrypted_content: item.encrypted_content.replace(/\.[^.]+$/, '.AAAA') };
    expectSdkError(await rejectionOf(client.responses.create({ model: 'm', input: [{ role: 'user', content: 'x' }, altered] })), {
      code: 'invalid_value',
      param: 'input[1].encrypted_content',
      mentions: ['seal does not verify'],
    });
    expectSdkError(await rejectionOf(client.responses.inputTokens.count({ input: [{ ...item, encrypted_content: 'opaque-from-elsewhere' }] })), {
      code: 'invalid_value',
      param: 'input[0].encrypted_content',
    });
  });
});
