/**
 * The Conversations API and `conversation` on `POST /v1/responses`, through the openai SDK
 * against a listening server, on every store: what a user of `client.conversations.*` does.
 */
import type OpenAI from 'openai';
import type { ConversationItem } from 'openai/resources/conversations/items';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { MemoryResponseStore } from '../server/platform/stores/memory-store.ts';
import type { ResponseStore } from '../server/platform/stores/response-store.ts';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { functionCallsOf, inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';
import { serverStores } from './support/store-cases.ts';

const { stores, configFor } = await serverStores('ptc-conversations-http-');

/** Every item of a conversation, oldest first, through the SDK's auto-pagination. */
async function allItems(client: OpenAI, conversationId: string, pageSize = 2): Promise<ConversationItem[]> {
  const items: ConversationItem[] = [];
  for await (const item of client.conversations.items.list(conversationId, { order: 'asc', limit: pageSize })) items.push(item);
  return items;
}

describe.each(stores)('conversations on the %s store', (store, available) => {
  let server: RunningServer;
  let client: OpenAI;
  let config: Record<string, unknown>;
  beforeEach(async ({ skip }) => {
    skip(!available, 'no Redis available');
    config = { ...configFor(store), fingerprintKey: 'conversations-http-key' };
    server = await startServer({ config });
    client = server.client;
  });
  afterEach(async () => {
    await server?.close();
  });

  test('create, retrieve, update and delete a conversation; its items paged, added, read and deleted', async () => {
    const created = await client.conversations.create({
      metadata: { topic: 'inventory' },
      items: [
        { type: 'message', role: 'user', content: 'Hello there' },
        { role: 'assistant', content: 'Hi.' },
      ],
    });
    expect(created).toEqual({
      id: expect.stringMatching(/^conv_[0-9a-f]{48}$/),
      object: 'conversation',
      created_at: expect.any(Number),
      metadata: { topic: 'inventory' },
    });
    expect(await client.conversations.retrieve(created.id)).toEqual(created);
    expect(await client.conversations.update(created.id, { metadata: { topic: 'demand', owner: 'ops' } })).toEqual({
      ...created,
      metadata: { topic: 'demand', owner: 'ops' },
    });

    const added = await client.conversations.items.create(created.id, {
      items: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'second' }] },
        { type: 'message', role: 'user', content: 'third' },
        { type: 'message', role: 'user', content: 'fourth' },
      ],
    });
    expect(added.object).toBe('list');
    expect(added.has_more).toBe(false);
    expect(added.data.map((item) => item.type)).toEqual(['message', 'message', 'message']);
    expect(added.first_id).toBe(added.data[0]!.id);
    expect(added.last_id).toBe(added.data[2]!.id);

    // Listed whole, as the SDK types them: a string content is an input_text part, with a status.
    const items = await allItems(client, created.id);
    expect(items).toHaveLength(5);
    expect(items[0]).toEqual({
      type: 'message',
      id: expect.stringMatching(/^msg_/),
      role: 'user',
      status: 'completed',
      content: [{ type: 'input_text', text: 'Hello there' }],
    });
    expect(items[1]).toMatchObject({ role: 'assistant', content: [{ type: 'output_text', text: 'Hi.', annotations: [] }] });
    const newestFirst = await client.conversations.items.list(created.id, { limit: 2 });
    expect(newestFirst.data.map((item) => item.id)).toEqual([items[4]!.id, items[3]!.id]);
    expect(newestFirst.has_more).toBe(true);

    expect(await client.conversations.items.retrieve(items[2]!.id!, { conversation_id: created.id })).toEqual(items[2]);
    const afterDelete = await client.conversations.items.delete(items[2]!.id!, { conversation_id: created.id });
    expect(afterDelete).toEqual({ ...created, metadata: { topic: 'demand', owner: 'ops' } });
    expect((await allItems(client, created.id)).map((item) => item.id)).toEqual([items[0], items[1], items[3], items[4]].map((item) => item!.id));
    expectSdkError(await rejectionOf(client.conversations.items.retrieve(items[2]!.id!, { conversation_id: created.id })), {
      code: 'conversation_item_not_found',
      param: 'item_id',
      mentions: [items[2]!.id!],
    });
    expectSdkError(await rejectionOf(client.conversations.items.delete(items[2]!.id!, { conversation_id: created.id })), {
      code: 'conversation_item_not_found',
    });

    expect(await client.conversations.delete(created.id)).toEqual({ id: created.id, object: 'conversation.deleted', deleted: true });
    const gone: (() => PromiseLike<unknown>)[] = [
      () => client.conversations.retrieve(created.id),
      () => client.conversations.update(created.id, { metadata: {} }),
      () => client.conversations.delete(created.id),
      () => client.conversations.items.list(created.id),
      () => client.conversations.items.create(created.id, { items: [{ type: 'message', role: 'user', content: 'x' }] }),
      () => client.conversations.items.retrieve(items[0]!.id!, { conversation_id: created.id }),
    ];
    for (const request of gone) expectSdkError(await rejectionOf(request()), { code: 'conversation_not_found', mentions: [created.id] });
  });

  test('a conversation made with no body at all is empty, with no metadata', async () => {
    const created = await client.conversations.create();
    expect(created.metadata).toEqual({});
    expect(await allItems(client, created.id)).toEqual([]);
    const page = await client.conversations.items.list(created.id);
    expect(page.data).toEqual([]);
    expect(page.has_more).toBe(false);
  });

  test('bad requests name what was wrong', async () => {
    const created = await client.conversations.create({ items: [{ type: 'message', role: 'user', content: 'x', id: 'msg_mine' } as never] });
    const tooMany = Array.from({ length: 21 }, () => ({ type: 'message' as const, role: 'user' as const, content: 'x' }));
    expectSdkError(await rejectionOf(client.conversations.items.create(created.id, { items: tooMany })), { code: 'invalid_value', param: 'items' });
    expectSdkError(
      await rejectionOf(client.conversations.create({ metadata: Object.fromEntries(Array.from({ length: 17 }, (_, index) => [`k${index}`, 'v'])) })),
      {
        code: 'invalid_value',
        param: 'metadata',
      },
    );
    expectSdkError(
      await rejectionOf(
        client.conversations.items.create(created.id, { items: [{ type: 'message', role: 'user', content: 'again', id: 'msg_mine' } as never] }),
      ),
      {
        code: 'duplicate_item_id',
        param: 'items[0].id',
        mentions: ['msg_mine'],
      },
    );
    expectSdkError(await rejectionOf(client.conversations.items.list(created.id, { after: 'msg_nope' })), {
      code: 'invalid_value',
      param: 'after',
      mentions: ['msg_nope'],
    });
    expectSdkError(await rejectionOf(client.conversations.items.list(created.id, { limit: 101 })), { code: 'invalid_value', param: 'limit' });
  });

  test('include, as the SDK sends it (include[]=…), is accepted on every route that takes it', async () => {
    const include = ['message.output_text.logprobs', 'code_interpreter_call.outputs'] as const;
    const created = await client.conversations.create({ items: [{ type: 'message', role: 'user', content: 'x' }] });
    const added = await client.conversations.items.create(created.id, { items: [{ type: 'message', role: 'user', content: 'y' }], include: [...include] });
    const listed = await client.conversations.items.list(created.id, { include: [...include] });
    expect(listed.data).toHaveLength(2);
    expect(await client.conversations.items.retrieve(added.data[0]!.id!, { conversation_id: created.id, include: [...include] })).toEqual(added.data[0]);
    const response = await client.responses.create({ model: 'm', input: 'hi' });
    expect((await client.responses.retrieve(response.id, { include: [...include] })).id).toBe(response.id);
    expect((await client.responses.inputItems.list(response.id, { include: [...include] })).data).toHaveLength(1);
  });

  test('items that cannot join a conversation are refused before anything is added, naming the item', async () => {
    const conversation = await client.conversations.create();
    // Two items of one request with one id: the conversation would keep one.
    expectSdkError(
      await rejectionOf(
        client.responses.create({
          model: 'm',
          conversation: conversation.id,
          input: [
            { role: 'user', content: 'A', id: 'msg_twice' },
            { role: 'user', content: 'B', id: 'msg_twice' },
          ] as never,
        }),
      ),
      { code: 'duplicate_item_id', param: 'input[1].id', mentions: ['msg_twice'] },
    );
    // A compaction item the emulator did not seal would make every later response here fail.
    expectSdkError(
      await rejectionOf(client.conversations.items.create(conversation.id, { items: [{ type: 'compaction', id: 'cmp_forged', encrypted_content: 'opaque' }] })),
      {
        code: 'invalid_value',
        param: 'items[0].encrypted_content',
        mentions: ['cmp_forged'],
      },
    );
    expectSdkError(await rejectionOf(client.conversations.create({ items: [{ type: 'message', role: 'user', content: 'x', id: 'm'.repeat(257) } as never] })), {
      code: 'invalid_value',
      param: 'items[0].id',
    });
    expectSdkError(await rejectionOf(client.conversations.items.create(conversation.id, { items: [] })), { code: 'invalid_value', param: 'items' });
    expect(await allItems(client, conversation.id)).toEqual([]);
    // What a stored item of the conversation gets wrong is named as the conversation's.
    const broken = await client.conversations.create({ items: [{ type: 'function_call_output', call_id: 'call_nope', output: 'x' }] });
    expectSdkError(await rejectionOf(client.responses.create({ model: 'm', conversation: broken.id, input: 'go on' })), {
      code: 'tool_output_unknown_call',
      param: 'conversation',
    });
  });

  test('a paused program in a conversation resumes from only the new outputs, and every item joins the conversation', async () => {
    const conversation = await client.conversations.create({ metadata: { run: store } });
    const tools = programTools('get');
    const first = await client.responses.create({
      model: 'm',
      conversation: conversation.id,
      input: inlineProgram('const a = await tools.get({n: 1}); const b = await tools.get({n: 2}); text(a + "+" + b)'),
      tools,
    });
    expect(first.conversation).toEqual({ id: conversation.id });
    const [call1] = functionCallsOf(first);
    const second = await client.responses.create({
      model: 'm',
      conversation: { id: conversation.id },
      input: [{ type: 'function_call_output', call_id: call1!.call_id, output: 'one', caller: call1!.caller ?? null }],
      tools,
    });
    const [call2] = functionCallsOf(second);
    expect(JSON.parse(call2!.arguments)).toEqual({ n: 2 });
    const third = await client.responses.create({
      model: 'm',
      conversation: conversation.id,
      input: [{ type: 'function_call_output', call_id: call2!.call_id, output: 'two', caller: call2!.caller ?? null }],
      tools,
    });
    expect(programOutputOf(third)).toMatchObject({ status: 'completed', result: 'one+two' });
    expect(third.output_text).not.toBe('');

    const items = await allItems(client, conversation.id, 3);
    const expected = [first, second, third].flatMap((response, index) => [
      index === 0 ? 'message' : 'function_call_output',
      ...response.output.map((item) => item.type),
    ]);
    expect(items.map((item) => item.type)).toEqual(expected);
    // The outputs are the response's own items, under their ids.
    const outputIds = [first, second, third].flatMap((response) => response.output.map((item) => item.id));
    expect(items.filter((item) => outputIds.includes(item.id!)).map((item) => item.id)).toEqual(outputIds);
    // Usage counts the conversation's items as context: the third turn saw the most.
    expect(third.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens);

    // A response made in a conversation is continued with it, not with previous_response_id.
    expectSdkError(await rejectionOf(client.responses.create({ model: 'm', previous_response_id: third.id, input: 'more' })), {
      code: 'invalid_value',
      param: 'previous_response_id',
      mentions: [third.id, conversation.id],
    });
  });

  test('items added through the Conversations API are the context of the next response', async () => {
    const conversation = await client.conversations.create({ items: [{ type: 'message', role: 'user', content: inlineProgram('text(await tools.get({}))') }] });
    const tools = programTools('get');
    // No new input: the conversation's last user message is what the turn answers.
    const first = await client.responses.create({ model: 'm', conversation: conversation.id, tools });
    const [call] = functionCallsOf(first);
    expect(call).toBeDefined();
    await client.conversations.items.create(conversation.id, {
      items: [{ type: 'function_call_output', call_id: call!.call_id, output: 'added by hand', caller: call!.caller ?? null }],
    });
    const second = await client.responses.create({ model: 'm', conversation: conversation.id, tools });
    expect(programOutputOf(second)).toMatchObject({ status: 'completed', result: 'added by hand' });
  });

  test('refusals: an unknown or deleted conversation, with previous_response_id, with store: false, a repeated id, a locked conversation', async () => {
    expectSdkError(await rejectionOf(client.responses.create({ model: 'm', conversation: 'conv_never', input: 'hi' })), {
      code: 'conversation_not_found',
      param: 'conversation',
      message: "Conversation with id 'conv_never' not found.",
    });
    const conversation = await client.conversations.create();
    const plain = await client.responses.create({ model: 'm', input: 'hi' });
    expectSdkError(await rejectionOf(client.responses.create({ model: 'm', conversation: conversation.id, previous_response_id: plain.id, input: 'hi' })), {
      code: 'mutually_exclusive_parameters',
      param: 'conversation',
    });
    expectSdkError(await rejectionOf(client.responses.create({ model: 'm', conversation: conversation.id, store: false, input: 'hi' })), {
      code: 'invalid_value',
      param: 'store',
    });
    const answered = await client.responses.create({ model: 'm', conversation: conversation.id, input: 'hi' });
    const messageId = answered.output.at(-1)!.id!;
    expectSdkError(
      await rejectionOf(
        client.responses.create({
          model: 'm',
          conversation: conversation.id,
          input: [{ type: 'message', role: 'user', content: 'x', id: messageId } as never],
        }),
      ),
      {
        code: 'duplicate_item_id',
        param: 'input[0].id',
        mentions: [messageId],
      },
    );
    // Nothing of a refused request joined the conversation.
    expect(await allItems(client, conversation.id, 100)).toHaveLength(2);

    // A background response waiting out the delay knob holds the conversation from the moment
    // it is accepted: the lock is taken before the queued response comes back.
    const waiting = await client.responses.create(
      { model: 'm', conversation: conversation.id, input: 'slow', background: true },
      { headers: { 'x-ptc-delay-ms': '600000' } },
    );
    expectSdkError(await rejectionOf(client.responses.create({ model: 'm', conversation: conversation.id, input: 'meanwhile' })), {
      code: 'conversation_locked',
      param: 'conversation',
      message: 'Another process is currently operating on this conversation. Please retry in a few seconds.',
    });
    // Items cannot be added meanwhile either: they would land before the response's.
    expectSdkError(
      await rejectionOf(client.conversations.items.create(conversation.id, { items: [{ type: 'message', role: 'user', content: 'sneaked in' }] })),
      {
        code: 'conversation_locked',
      },
    );
    // Cancelled, it lets the conversation go (its job stops at once and releases the lock).
    await client.responses.cancel(waiting.id);
    let after: unknown;
    for (let attempt = 0; attempt < 200 && !(after && typeof after === 'object' && 'id' in after); attempt++) {
      after = await client.responses.create({ model: 'm', conversation: conversation.id, input: 'after' }).catch((error: { code?: string }) => {
        if (error.code !== 'conversation_locked') throw error;
        return new Promise((resolve) => setTimeout(resolve, 50));
      });
    }
    expect(after).toMatchObject({ status: 'completed', conversation: { id: conversation.id } });
    // The cancelled response added nothing; the one after it did.
    expect((await allItems(client, conversation.id, 100)).map((item) => item.type)).toEqual(['message', 'message', 'message', 'message']);

    await client.conversations.delete(conversation.id);
    expectSdkError(await rejectionOf(client.responses.create({ model: 'm', conversation: conversation.id, input: 'hi' })), {
      code: 'conversation_not_found',
      param: 'conversation',
    });
  });

  test('a background response joins its conversation when it finishes', async () => {
    const conversation = await client.conversations.create();
    const queued = await client.responses.create({ model: 'm', conversation: conversation.id, input: 'in the background', background: true });
    expect(queued.conversation).toEqual({ id: conversation.id });
    let done = queued;
    while (done.status === 'queued' || done.status === 'in_progress') {
      await new Promise((resolve) => setTimeout(resolve, 20));
      done = await client.responses.retrieve(queued.id);
    }
    expect(done.status).toBe('completed');
    const items = await allItems(client, conversation.id);
    expect(items.map((item) => item.id)).toEqual([expect.stringMatching(/^msg_/), ...done.output.map((item) => item.id)]);
  });

  test('a conversation and its paused program outlive a restart', async ({ skip }) => {
    skip(store === 'memory', 'the memory store does not outlive its server');
    const conversation = await client.conversations.create();
    const tools = programTools('get');
    const first = await client.responses.create({ model: 'm', conversation: conversation.id, input: inlineProgram('text(await tools.get({}))'), tools });
    const [call] = functionCallsOf(first);
    await server.close();
    server = await startServer({ config });
    const resumed = await server.client.responses.create({
      model: 'm',
      conversation: conversation.id,
      input: [{ type: 'function_call_output', call_id: call!.call_id, output: 'after restart', caller: call!.caller ?? null }],
      tools,
    });
    expect(programOutputOf(resumed)).toMatchObject({ status: 'completed', result: 'after restart' });
  });
});

describe('a server built with a store of its own that keeps no conversations', () => {
  test('answers the Conversations API and conversation on a response with a 400 saying so', async () => {
    const memory = new MemoryResponseStore();
    // What an embedder might write: responses only.
    const store: ResponseStore = {
      get: (id) => memory.get(id),
      put: (stored) => memory.put(stored),
      delete: (id) => memory.delete(id),
      close: () => memory.close(),
    };
    const server = await startServer({ store });
    try {
      expectSdkError(await rejectionOf(server.client.conversations.create()), { code: 'conversations_unsupported', mentions: ['conversations'] });
      expectSdkError(await rejectionOf(server.client.responses.create({ model: 'm', conversation: 'conv_x', input: 'hi' })), {
        code: 'conversations_unsupported',
      });
      // Responses still work.
      expect((await server.client.responses.create({ model: 'm', input: 'hi' })).status).toBe('completed');
    } finally {
      await server.close();
    }
  });
});
