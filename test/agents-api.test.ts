import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { FIXED_LIMITS } from '../schemas/fixed-limits.ts';
import { AGENT_TOOLS, answerOf, PRICING_PROGRAM, PRICING_SCENARIOS } from './support/agents-api.ts';
import { inlineProgram } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';
import { storeWithoutRecords } from './support/store-without-records.ts';

type AgentSessionEvent = OpenAI.Beta.Agents.AgentSessionEvent;

const running: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.close()));
});

async function start(): Promise<RunningServer> {
  const server = await startServer({ scenarios: PRICING_SCENARIOS });
  running.push(server);
  return server;
}

const message = (text: string) => ({
  type: 'agent.session.input.message' as const,
  input: [{ role: 'user' as const, content: [{ type: 'input_text' as const, text }] }],
});

/** A stream's events, read a part at a time (a Stream can be iterated once). */
function reader(stream: AsyncIterable<AgentSessionEvent>): AsyncIterator<AgentSessionEvent> {
  return stream[Symbol.asyncIterator]();
}

/** Reads events up to and with the first one `last` accepts, running `onEvent` on each first. */
async function readUntil(
  stream: AsyncIterable<AgentSessionEvent> | AsyncIterator<AgentSessionEvent>,
  last: (event: AgentSessionEvent) => boolean,
  onEvent: (event: AgentSessionEvent) => Promise<void> = async () => {},
): Promise<AgentSessionEvent[]> {
  const whole = !('next' in stream);
  const events = whole ? reader(stream as AsyncIterable<AgentSessionEvent>) : (stream as AsyncIterator<AgentSessionEvent>);
  const seen: AgentSessionEvent[] = [];
  try {
    for (;;) {
      const next = await events.next();
      if (next.done) throw new Error(`the event stream ended after ${seen.map((event) => event.type).join(', ')}`);
      seen.push(next.value);
      await onEvent(next.value);
      if (last(next.value)) return seen;
    }
  } finally {
    // A stream read whole is closed here, as a for-await loop closes what it leaves.
    if (whole) await events.return?.();
  }
}

/** The end of a turn: it ended (any way), then the session went idle. */
function turnOver(): (event: AgentSessionEvent) => boolean {
  let ended = false;
  return (event) => {
    if (event.type === 'agent.session.turn.completed' || event.type === 'agent.session.turn.failed' || event.type === 'agent.session.turn.cancelled')
      ended = true;
    return ended && event.type === 'agent.session.idle';
  };
}

/**
 * One turn driven by hand: the session's event stream opened, the message sent, each function
 * call answered with `events.create` as it is added, until the turn is over.
 */
async function runTurn(client: OpenAI, sessionId: string, text: string, answer = answerOf): Promise<AgentSessionEvent[]> {
  const stream = await client.beta.agents.sessions.events.stream(sessionId);
  await client.beta.agents.sessions.events.create(sessionId, { events: [message(text)] });
  return readUntil(stream, turnOver(), async (event) => {
    if (event.type !== 'agent.session.turn.item.added' || event.item.type !== 'function_call') return;
    const call = event.item;
    await client.beta.agents.sessions.events.create(sessionId, {
      events: [{ type: 'agent.session.input.tool_result', turn_id: call.turn_id, call_id: call.call_id, success: true, output: answer(call.name) }],
    });
  });
}

function callsOf(events: readonly AgentSessionEvent[]) {
  return events.flatMap((event) => (event.type === 'agent.session.turn.item.added' && event.item.type === 'function_call' ? [event.item] : []));
}

function finalText(events: readonly AgentSessionEvent[]): string | undefined {
  const done = events.findLast((event) => event.type === 'agent.session.turn.item.done' && event.item.type === 'message');
  return done?.type === 'agent.session.turn.item.done' && done.item.type === 'message' ? done.item.content.map((part) => part.text).join('') : undefined;
}

async function expectApiError(promise: Promise<unknown>, status: number, code: string, message: RegExp | string, param?: string | null): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  const apiError = error as InstanceType<typeof OpenAI.APIError>;
  expect({ status: apiError.status, code: apiError.code }).toEqual({ status, code });
  if (typeof message === 'string') expect(apiError.error).toMatchObject({ message });
  else expect((apiError.error as { message: string }).message).toMatch(message);
  if (param !== undefined) expect(apiError.param).toBe(param);
}

describe('the Agents API: sessions run programs in the harness, PTC on by default', () => {
  it('a turn whose program calls both tools at once: two function_call items, answered through events.create', async () => {
    const server = await start();
    const { client } = server;
    const agent = await client.beta.agents.create({ model: 'gpt-6-astra', name: 'pricing', tools: AGENT_TOOLS });
    expect(agent).toMatchObject({ object: 'agent', model: 'gpt-6-astra', name: 'pricing' });
    const session = await client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
    expect(session).toMatchObject({ object: 'agent.session', status: 'idle', environment: { type: 'none' }, required_actions: [], agent: { id: agent.id } });

    const events = await runTurn(client, session.id, PRICING_PROGRAM);
    expect(callsOf(events).map((call) => call.name)).toEqual(['get_price', 'get_stock']);
    // Both calls were owed at once: the session required both before either was answered.
    const required = events.find((event) => event.type === 'agent.session.requires_action');
    expect(
      required?.type === 'agent.session.requires_action' && required.session.required_actions.map((action) => action.type === 'function_call' && action.name),
    ).toEqual(['get_price', 'get_stock']);
    expect(finalText(events)).toBe('{"value":42}');
    expect(events.at(-1)).toMatchObject({ type: 'agent.session.idle', session: { status: 'idle', required_actions: [] } });
    // Every event has an id of its own (the SDK's helper drops repeats).
    expect(new Set(events.map((event) => event.event_id)).size).toBe(events.length);

    const items = await client.beta.agents.sessions.items.list(session.id, { order: 'asc' });
    expect(items.data.map((item) => item.type)).toEqual([
      'message',
      'function_call',
      'function_call',
      'function_call_output',
      'function_call_output',
      'message',
    ]);
    const newestFirst = [];
    for await (const item of client.beta.agents.sessions.items.list(session.id, { limit: 4 })) newestFirst.push(item.id);
    expect(newestFirst).toEqual(items.data.map((item) => item.id).reverse());
    const [turn] = (await client.beta.agents.sessions.turns.list(session.id)).data;
    expect(turn).toMatchObject({ object: 'agent.session.turn', status: 'completed', session_id: session.id, subagent_id: null, error: null });
    expect(turn!.usage!.total_tokens).toBeGreaterThan(0);
    expect(await client.beta.agents.sessions.turns.retrieve(turn!.id, { session_id: session.id })).toEqual(turn);
    const turnItems = await client.beta.agents.sessions.turns.items.list(turn!.id, { session_id: session.id, order: 'asc', limit: 4 });
    const allTurnItems = [];
    for await (const item of turnItems) allTurnItems.push(item);
    expect(allTurnItems.map((item) => item.id)).toEqual(items.data.map((item) => item.id));
    expect((await client.beta.agents.sessions.retrieve(session.id)).status).toBe('idle');

    // The journal (and so the inspector) shows each step of the turn, with its program.
    const journal = (await (await fetch(`${server.baseURL}/emulator/journal`, { headers: { authorization: 'Bearer test-key' } })).json()) as {
      data: { method: string; path: string; programs?: { outcome: string }[] }[];
    };
    const steps = journal.data.filter((entry) => entry.method === 'AGENT').reverse();
    expect(steps.map((entry) => entry.path)).toEqual([`/v1/agents/sessions/${session.id}`, `/v1/agents/sessions/${session.id}`]);
    expect(steps.map((entry) => entry.programs?.map((program) => program.outcome))).toEqual([['paused'], ['completed']]);
  });

  it('with {type: "programmatic_tool_calling", enabled: false} the same tools are called directly, and a program is not run', async () => {
    const { client } = await start();
    const agent = await client.beta.agents.create({ model: 'gpt-6-astra', tools: [...AGENT_TOOLS, { type: 'programmatic_tool_calling', enabled: false }] });
    expect(agent.tools.at(-1)).toEqual({ type: 'programmatic_tool_calling', enabled: false });
    const session = await client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
    const events = await runTurn(client, session.id, 'What is the value of stock directly?');
    expect(callsOf(events).map((call) => call.name)).toEqual(['get_price', 'get_stock']);
    expect(finalText(events)).toBe('Outputs: ["{\\"price\\":7}","{\\"units\\":6}"]');

    const refused = await runTurn(client, session.id, PRICING_PROGRAM);
    expect(callsOf(refused)).toEqual([]);
    expect(finalText(refused)).toMatch(/programmatic_tool_calling entry has enabled: false/);
  });

  it('an in-process model function decides as for the Responses API: it sees the agent, writes the program, then answers', async () => {
    const seen: { instructions: string | null; ptc: boolean; tools: string[] }[] = [];
    const server = await startServer({
      model: (context) => {
        seen.push({ instructions: context.instructions, ptc: context.programmaticToolCalling, tools: context.tools.map((tool) => tool.name) });
        if (context.phase === 'user_turn') {
          return {
            type: 'program',
            reasoning: 'Both lookups at once.',
            code: "const [p, s] = await Promise.all([tools.get_price({ sku: 'a' }), tools.get_stock({ sku: 'a' })]); text(JSON.parse(p).price * JSON.parse(s).units);",
          };
        }
        if (context.phase === 'after_program') return { type: 'message', text: `Stock is worth ${context.program!.result}.` };
        return undefined;
      },
    });
    running.push(server);
    const { client } = server;
    const agent = await client.beta.agents.create({ model: 'm', instructions: 'Value the stock.', tools: AGENT_TOOLS });
    const session = await client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
    const events = await runTurn(client, session.id, 'How much is sku a worth?');
    expect(finalText(events)).toBe('Stock is worth 42.');
    expect(seen[0]).toEqual({ instructions: 'Value the stock.', ptc: true, tools: ['get_price', 'get_stock'] });
    const items = await client.beta.agents.sessions.items.list(session.id, { order: 'asc' });
    expect(items.data.map((item) => item.type)).toEqual([
      'message',
      'reasoning',
      'function_call',
      'function_call',
      'function_call_output',
      'function_call_output',
      'message',
    ]);
    expect(items.data[1]).toMatchObject({ type: 'reasoning', summary: [{ type: 'summary_text', text: 'Both lookups at once.' }] });
  });

  it('programmatic tool calling stays on with a bare entry, with enabled: true, and with no entry', async () => {
    const { client } = await start();
    for (const extra of [[{ type: 'programmatic_tool_calling' as const }], [{ type: 'programmatic_tool_calling' as const, enabled: true }], []]) {
      const agent = await client.beta.agents.create({ model: 'm', tools: [...AGENT_TOOLS, ...extra] });
      const session = await client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
      expect(finalText(await runTurn(client, session.id, PRICING_PROGRAM))).toBe('{"value":42}');
    }
  });

  it("the SDK's sessions.stream() helper runs the tools through toolHandlers and collects the final result", async () => {
    const { client } = await start();
    const agent = await client.beta.agents.create({ model: 'm', tools: AGENT_TOOLS });
    const session = await client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
    const result = await client.beta.agents.sessions
      .stream(session.id, {
        input: PRICING_PROGRAM,
        toolHandlers: { get_price: () => ({ price: 7 }), get_stock: () => ({ units: 6 }) },
      })
      .finalResult();
    expect(result.output_text).toBe('{"value":42}');
    expect(result.turn.status).toBe('completed');
  });

  it('sessions.create with stream: true and an inline agent: the stream starts with agent.session.created and ends once the turn is over', async () => {
    const { client } = await start();
    const stream = await client.beta.agents.sessions.create({
      agent: { model: 'm', tools: AGENT_TOOLS, instructions: 'Price things.' },
      environment: { type: 'none' },
      input: PRICING_PROGRAM,
      stream: true,
      toolHandlers: { get_price: async () => JSON.stringify({ price: 7 }), get_stock: async () => JSON.stringify({ units: 6 }) },
    });
    const result = await stream.finalResult();
    expect(result.output_text).toBe('{"value":42}');
    const sessions = await client.beta.agents.sessions.list();
    expect(sessions.data[0]).toMatchObject({ status: 'idle', agent: { instructions: 'Price things.', model: 'm' } });
  });

  it('a tool result for a call the session does not wait on is 400 "Unknown pending tool call: <id>" with the code the helper retries on', async () => {
    const { client } = await start();
    const agent = await client.beta.agents.create({ model: 'm', tools: AGENT_TOOLS });
    const session = await client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
    await expectApiError(
      client.beta.agents.sessions.events.create(session.id, {
        events: [{ type: 'agent.session.input.tool_result', turn_id: 'turn_x', call_id: 'call_nope', success: true, output: 'x' }],
      }),
      400,
      'invalid_request_error',
      'Unknown pending tool call: call_nope',
    );
  });

  it('a failed tool result reaches the program as its error; a message while a call is owed joins the turn; cancel ends the turn', async () => {
    const { client } = await start();
    const agent = await client.beta.agents.create({ model: 'm', tools: AGENT_TOOLS });
    const session = await client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
    const program = inlineProgram(`try { await tools.get_price({ sku: 'a' }); } catch (error) { text('threw'); } text(await tools.get_price({ sku: 'b' }));`);
    const stream = reader(await client.beta.agents.sessions.events.stream(session.id));
    await client.beta.agents.sessions.events.create(session.id, { events: [message(program)] });
    const first = await readUntil(stream, (event) => event.type === 'agent.session.requires_action');
    const [call] = callsOf(first);
    // A message while the call is owed steers the turn: one of its items now, read with the result.
    await client.beta.agents.sessions.events.create(session.id, { events: [message('again')] });
    await client.beta.agents.sessions.events.create(session.id, {
      events: [{ type: 'agent.session.input.tool_result', turn_id: call!.turn_id, call_id: call!.call_id, success: false, error: 'warehouse offline' }],
    });
    const second = await readUntil(stream, (event) => event.type === 'agent.session.requires_action');
    expect(second[0]).toMatchObject({ type: 'agent.session.turn.item.added', turn_id: call!.turn_id, item: { type: 'message', role: 'user' } });
    expect((await client.beta.agents.sessions.turns.list(session.id)).data).toHaveLength(1);
    const output = second.find((event) => event.type === 'agent.session.turn.item.added' && event.item.type === 'function_call_output');
    expect(output?.type === 'agent.session.turn.item.added' && output.item).toMatchObject({ status: 'failed', error: 'warehouse offline', output: null });
    expect(callsOf(second).map((next) => next.arguments)).toEqual(['{"sku":"b"}']);

    await client.beta.agents.sessions.events.create(session.id, { events: [{ type: 'agent.session.input.cancel' }] });
    const cancelled = await readUntil(stream, (event) => event.type === 'agent.session.idle');
    await stream.return?.();
    expect(cancelled.map((event) => event.type)).toEqual(['agent.session.turn.item.done', 'agent.session.turn.cancelled', 'agent.session.idle']);
    // The call the turn still waited on ends with it, on the stream as in the items.
    expect(cancelled[0]).toMatchObject({ item: { type: 'function_call', status: 'incomplete', arguments: '{"sku":"b"}' } });
    const retrieved = await client.beta.agents.sessions.retrieve(session.id);
    expect(retrieved).toMatchObject({ status: 'idle', required_actions: [] });
    expect((await client.beta.agents.sessions.turns.list(session.id)).data[0]).toMatchObject({ status: 'cancelled' });
    // The session takes a new turn after the cancelled one.
    expect(finalText(await runTurn(client, session.id, PRICING_PROGRAM))).toBe('{"value":42}');
  });

  it('an event post resent with the same Idempotency-Key applies once', async () => {
    const { client } = await start();
    const agent = await client.beta.agents.create({ model: 'm', tools: AGENT_TOOLS });
    const session = await client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
    const stream = await client.beta.agents.sessions.events.stream(session.id);
    await client.beta.agents.sessions.events.create(session.id, { events: [message(PRICING_PROGRAM)], 'Idempotency-Key': 'key-1' });
    await client.beta.agents.sessions.events.create(session.id, { events: [message(PRICING_PROGRAM)], 'Idempotency-Key': 'key-1' });
    const events = reader(stream);
    await readUntil(events, (event) => event.type === 'agent.session.requires_action');
    await events.return?.();
    expect((await client.beta.agents.sessions.turns.list(session.id)).data).toHaveLength(1);
  });
});

describe('the Agents API: a message during an active turn steers it', () => {
  const session = async (client: OpenAI) => client.beta.agents.sessions.create({ agent: { model: 'm', tools: AGENT_TOOLS }, environment: { type: 'none' } });
  const userTextOf = (event: AgentSessionEvent | undefined): string | undefined =>
    event?.type === 'agent.session.turn.item.added' && event.item.type === 'message' && event.item.role === 'user'
      ? event.item.content.map((part) => (part.type === 'input_text' ? part.text : '')).join('')
      : undefined;

  it('into a turn whose program waits on two calls: the message joins the turn, and its next step reads it after the results', async () => {
    const seen: { phase: string; lastUserText: string; tail: string[] }[] = [];
    const server = await startServer({
      model: (context) => {
        seen.push({ phase: context.phase, lastUserText: context.lastUserText, tail: context.history.slice(-3).map((item) => item.type) });
        if (context.phase === 'user_turn') {
          return {
            type: 'program',
            code: "const [p, s] = await Promise.all([tools.get_price({ sku: 'a' }), tools.get_stock({ sku: 'a' })]); text(JSON.parse(p).price * JSON.parse(s).units);",
          };
        }
        if (context.phase === 'after_program') return { type: 'message', text: `${context.program!.result}, as asked: ${context.lastUserText}` };
        return undefined;
      },
    });
    running.push(server);
    const { client } = server;
    const { id } = await session(client);
    const stream = reader(await client.beta.agents.sessions.events.stream(id));
    await client.beta.agents.sessions.events.create(id, { events: [message('What is sku a worth?')] });
    const calls = callsOf(await readUntil(stream, (event) => event.type === 'agent.session.requires_action'));
    expect(calls.map((call) => call.name)).toEqual(['get_price', 'get_stock']);
    const turnId = calls[0]!.turn_id;

    // The turn waits on both calls of its program: the message becomes an item of that turn (no
    // new turn starts, nothing is refused), and waits for the results.
    await client.beta.agents.sessions.events.create(id, { events: [message('Answer in euros.')] });
    const [added] = await readUntil(stream, (event) => event.type === 'agent.session.turn.item.added');
    expect(added).toMatchObject({ turn_id: turnId, output_index: null, item: { type: 'message', role: 'user', phase: null, turn_id: turnId } });
    expect(userTextOf(added)).toBe('Answer in euros.');
    expect(await client.beta.agents.sessions.retrieve(id)).toMatchObject({ status: 'requires_action' });
    expect(seen).toHaveLength(1);

    // The results, one post each: the program resumes with both, then the model reads the message.
    for (const call of calls) {
      await client.beta.agents.sessions.events.create(id, {
        events: [{ type: 'agent.session.input.tool_result', turn_id: turnId, call_id: call.call_id, success: true, output: answerOf(call.name) }],
      });
    }
    const rest = await readUntil(stream, turnOver());
    await stream.return?.();
    expect(finalText(rest)).toBe('42, as asked: Answer in euros.');
    expect(seen.at(-1)).toEqual({
      phase: 'after_program',
      lastUserText: 'Answer in euros.',
      tail: ['function_call_output', 'function_call_output', 'message'],
    });
    const turns = (await client.beta.agents.sessions.turns.list(id)).data;
    expect(turns.map((turn) => turn.status)).toEqual(['completed']);
    const items = (await client.beta.agents.sessions.items.list(id, { order: 'asc' })).data;
    expect(items.map((item) => item.type)).toEqual([
      'message',
      'function_call',
      'function_call',
      'message',
      'function_call_output',
      'function_call_output',
      'message',
    ]);
    expect(new Set(items.map((item) => item.turn_id))).toEqual(new Set([turnId]));
  });

  it('into a turn whose response is being made: that response stands as commentary, and the next one reads the message', async () => {
    let entered!: () => void;
    const modelEntered = new Promise<void>((resolve) => {
      entered = resolve;
    });
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const seen: string[] = [];
    const server = await startServer({
      // The first response's model waits until the test lets it go: the turn is running meanwhile.
      model: async (context) => {
        if (context.phase !== 'user_turn') return undefined;
        seen.push(context.lastUserText);
        if (context.lastUserText === 'Draft the summary.') {
          entered();
          await released;
          return { type: 'message', text: 'Drafting it now.' };
        }
        return { type: 'message', text: `Done, with: ${context.lastUserText}` };
      },
    });
    running.push(server);
    const { client } = server;
    const { id } = await session(client);
    const stream = reader(await client.beta.agents.sessions.events.stream(id));
    await client.beta.agents.sessions.events.create(id, { events: [message('Draft the summary.')] });
    await modelEntered;
    expect(await client.beta.agents.sessions.retrieve(id)).toMatchObject({ status: 'in_progress' });
    await client.beta.agents.sessions.events.create(id, { events: [message('Keep it short.')] });
    release();

    const events = await readUntil(stream, turnOver());
    await stream.return?.();
    const turnId = events.find((event) => event.type === 'agent.session.turn.created')!.turn_id;
    expect(events.flatMap((event) => userTextOf(event) ?? [])).toEqual(['Draft the summary.', 'Keep it short.']);
    const answers = events.flatMap((event) =>
      event.type === 'agent.session.turn.item.done' && event.item.type === 'message' ? [[event.item.phase, event.item.content[0]?.text]] : [],
    );
    expect(answers).toEqual([
      ['commentary', 'Drafting it now.'],
      ['final_answer', 'Done, with: Keep it short.'],
    ]);
    expect(seen).toEqual(['Draft the summary.', 'Keep it short.']);
    expect(events.filter((event) => event.type === 'agent.session.turn.completed').map((event) => event.turn_id)).toEqual([turnId]);
    expect((await client.beta.agents.sessions.turns.list(id)).data.map((turn) => turn.status)).toEqual(['completed']);
  });

  it(`a turn holds at most ${FIXED_LIMITS.steeringMessages.value} messages its next step has not read: more is a 409 active_turn_not_steerable`, async () => {
    const { client } = await start();
    const { id } = await session(client);
    const stream = reader(await client.beta.agents.sessions.events.stream(id));
    await client.beta.agents.sessions.events.create(id, { events: [message(PRICING_PROGRAM)] });
    const calls = callsOf(await readUntil(stream, (event) => event.type === 'agent.session.requires_action'));
    const limit = FIXED_LIMITS.steeringMessages.value;
    const posts = (count: number, from: number) =>
      Array.from({ length: count }, (_, index) => ({ role: 'user' as const, content: [{ type: 'input_text' as const, text: `note ${from + index}` }] }));
    for (let sent = 0; sent < limit; sent += FIXED_LIMITS.agentInputMessages.value) {
      const count = Math.min(FIXED_LIMITS.agentInputMessages.value, limit - sent);
      await client.beta.agents.sessions.events.create(id, { events: [{ type: 'agent.session.input.message', input: posts(count, sent) }] });
    }
    await expectApiError(
      client.beta.agents.sessions.events.create(id, { events: [{ type: 'agent.session.input.message', input: posts(1, limit) }] }),
      409,
      'active_turn_not_steerable',
      /steeringMessages/,
      'events[0].input',
    );
    // The results read them all; the turn ends, and the session takes messages again.
    await client.beta.agents.sessions.events.create(id, {
      events: calls.map((call) => ({
        type: 'agent.session.input.tool_result' as const,
        turn_id: call.turn_id,
        call_id: call.call_id,
        success: true,
        output: answerOf(call.name),
      })),
    });
    const rest = await readUntil(stream, turnOver());
    await stream.return?.();
    expect(rest.flatMap((event) => userTextOf(event) ?? []).length).toBe(limit);
    expect(rest.some((event) => event.type === 'agent.session.turn.completed')).toBe(true);
    const items = (await client.beta.agents.sessions.items.list(id, { limit: 100 })).data;
    expect(items.filter((item) => item.type === 'message' && item.role === 'user')).toHaveLength(limit + 1);
  });
});

describe('the Agents API: what a hostile or careless client does', () => {
  it('a post refused for one of its events changes nothing, not even by the cancel before it', async () => {
    const { client } = await start();
    const session = await client.beta.agents.sessions.create({ agent: { model: 'm', tools: AGENT_TOOLS }, environment: { type: 'none' } });
    const stream = reader(await client.beta.agents.sessions.events.stream(session.id));
    await client.beta.agents.sessions.events.create(session.id, { events: [message('take your time')] });
    await expectApiError(
      client.beta.agents.sessions.events.create(session.id, {
        events: [
          { type: 'agent.session.input.cancel' },
          { type: 'agent.session.input.tool_result', turn_id: 'turn_x', call_id: 'call_nope', success: true, output: 'x' },
        ],
      }),
      400,
      'invalid_request_error',
      'Unknown pending tool call: call_nope',
      'events[1].call_id',
    );
    const events = await readUntil(stream, turnOver());
    expect(events.find((event) => event.type === 'agent.session.turn.completed')).toBeDefined();
    expect(finalText(events)).toBe('Done slowly.');
    await stream.return?.();
  });

  it('deleting a session ends the turn its streams follow: agent.session.failed, then the stream ends', async () => {
    const { client } = await start();
    const session = await client.beta.agents.sessions.create({ agent: { model: 'm', tools: AGENT_TOOLS }, environment: { type: 'none' } });
    const stream = reader(await client.beta.agents.sessions.events.stream(session.id));
    await client.beta.agents.sessions.events.create(session.id, { events: [message(PRICING_PROGRAM)] });
    await readUntil(stream, (event) => event.type === 'agent.session.requires_action');
    await client.beta.agents.sessions.delete(session.id);
    const rest: AgentSessionEvent[] = [];
    for (let next = await stream.next(); !next.done; next = await stream.next()) rest.push(next.value);
    expect(rest.map((event) => event.type)).toEqual([
      'agent.session.turn.item.done',
      'agent.session.turn.item.done',
      'agent.session.turn.cancelled',
      'agent.session.failed',
    ]);
    expect(rest.at(-1)).toMatchObject({ session: { status: 'failed', error: 'The session was deleted.' } });
  });

  it("the SDK's list-and-delete loop goes through every page though each cursor is deleted", async () => {
    const { client } = await start();
    const agent = await client.beta.agents.create({ model: 'm' });
    for (let index = 0; index < 5; index++) await client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
    let deleted = 0;
    for await (const session of client.beta.agents.sessions.list({ agent_id: agent.id, limit: 2 })) {
      await client.beta.agents.sessions.delete(session.id);
      deleted += 1;
    }
    expect(deleted).toBe(5);
    expect((await client.beta.agents.sessions.list()).data).toEqual([]);
    await expectApiError(client.beta.agents.sessions.list({ after: 'nonsense' }), 400, 'invalid_value', /'after'/, 'after');
  });

  it('refuses what the SDK would not send: a credential without its server, an unknown list parameter, an unknown turn', async () => {
    const { client, baseURL } = await start();
    const vault = await client.beta.agents.vaults.create({});
    await expectApiError(
      client.beta.agents.vaults.credentials.create(vault.id, { name: 'c', auth: { type: 'static_bearer', token: 't' } as never }),
      400,
      'missing_required_parameter',
      /auth\.mcp_server_url/,
      'auth.mcp_server_url',
    );
    const response = await fetch(`${baseURL}/agents/sessions?foo=1`, { headers: { authorization: 'Bearer test-key' } });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string; param: string } }).error).toMatchObject({ code: 'unknown_parameter', param: 'foo' });
    const session = await client.beta.agents.sessions.create({ agent: { model: 'm' }, environment: { type: 'none' } });
    await expectApiError(client.beta.agents.sessions.turns.retrieve('turn_nope', { session_id: session.id }), 404, 'turn_not_found', /turn_nope/, 'turn_id');
    await expectApiError(
      client.beta.agents.sessions.subagents.retrieve('sub_1', { session_id: session.id }),
      404,
      'session_resource_not_found',
      /no subagents/,
      'subagent_id',
    );
    await expectApiError(
      client.beta.agents.sessions.artifacts.delete('art_1', { session_id: session.id }),
      404,
      'session_resource_not_found',
      /no artifacts/,
      'artifact_id',
    );
    // A type error inside an item names the type expected there, not the union around it.
    const wrongContent = await fetch(`${baseURL}/agents/sessions`, {
      method: 'POST',
      headers: { authorization: 'Bearer test-key', 'content-type': 'application/json' },
      body: JSON.stringify({ agent: { model: 'm' }, environment: { type: 'none' }, input: [{ role: 'user', content: 'hi' }] }),
    });
    expect(((await wrongContent.json()) as { error: unknown }).error).toMatchObject({
      code: 'invalid_type',
      param: 'input[0].content',
      message: "Invalid type for 'input[0].content': expected array, but got a string instead.",
    });
  });

  it('a server whose store keeps no Agents API records answers every route 400 agents_unsupported', async () => {
    const store = storeWithoutRecords();
    const server = await startServer({ store });
    running.push(server);
    await expectApiError(server.client.beta.agents.create({ model: 'm' }), 400, 'agents_unsupported', /keeps no Agents API records/);
    await expectApiError(server.client.beta.agents.vaults.list(), 400, 'agents_unsupported', /records/);
  });
});

describe('the Agents API: agents and sessions as resources', () => {
  it('agents: create, retrieve, update, list by cursor, delete', async () => {
    const { client } = await start();
    const created = [];
    for (const name of ['a', 'b', 'c'])
      created.push(await client.beta.agents.create({ model: 'm', name, metadata: { team: 'x' }, tools: AGENT_TOOLS, compaction: { async: true } }));
    expect(created[0]).toMatchObject({ compaction: { async: true } });
    expect(created[0]).toMatchObject({
      object: 'agent',
      instructions: null,
      metadata: { team: 'x' },
      multi_agent: { enabled: false, max_concurrent_subagents: null },
      service_tier: 'auto',
      text: { format: { type: 'text' }, verbosity: 'medium' },
    });
    expect(created[0]!.tools[0]).toEqual({ ...AGENT_TOOLS[0], defer_loading: false });
    expect(await client.beta.agents.retrieve(created[1]!.id)).toEqual(created[1]);
    const updated = await client.beta.agents.update(created[1]!.id, {
      instructions: 'Be brief.',
      tools: [{ type: 'programmatic_tool_calling', enabled: false }],
    });
    expect(updated).toMatchObject({ id: created[1]!.id, name: 'b', instructions: 'Be brief.', tools: [{ type: 'programmatic_tool_calling', enabled: false }] });
    const listed = [];
    for await (const agent of client.beta.agents.list({ limit: 2 })) listed.push(agent.name);
    expect(listed).toEqual(['c', 'b', 'a']);
    expect(await client.beta.agents.delete(created[0]!.id)).toEqual({ id: created[0]!.id, deleted: true, object: 'agent.deleted' });
    await expectApiError(client.beta.agents.retrieve(created[0]!.id), 404, 'agent_not_found', `Agent with id '${created[0]!.id}' not found.`, 'agent_id');
  });

  it('sessions: list by agent and metadata, update, delete', async () => {
    const { client } = await start();
    const agent = await client.beta.agents.create({ model: 'm', tools: AGENT_TOOLS });
    const other = await client.beta.agents.create({ model: 'm' });
    const first = await client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' }, metadata: { run: '1' } });
    await client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' }, metadata: { run: '2' } });
    await client.beta.agents.sessions.create({ agent_id: other.id, environment: { type: 'none' } });
    expect((await client.beta.agents.sessions.list({ agent_id: agent.id })).data).toHaveLength(2);
    expect((await client.beta.agents.sessions.list({ metadata: { run: '1' } })).data.map((session) => session.id)).toEqual([first.id]);
    const updated = await client.beta.agents.sessions.update(first.id, { metadata: { run: 'one' }, agent: { model: 'm2' } });
    expect(updated).toMatchObject({ metadata: { run: 'one' }, agent: { model: 'm2', id: agent.id } });
    // A session's agent has the SDK's AgentSession.Agent fields: no metadata of the saved agent.
    expect(Object.keys(updated.agent).sort()).toEqual(['id', 'instructions', 'model', 'multi_agent', 'name', 'reasoning', 'service_tier', 'text', 'tools']);
    expect(await client.beta.agents.sessions.delete(first.id)).toEqual({ id: first.id, deleted: true, object: 'agent.session.deleted' });
    await expectApiError(client.beta.agents.sessions.retrieve(first.id), 404, 'session_not_found', `Session with id '${first.id}' not found.`, 'session_id');
    expect(
      (
        await client.beta.agents.sessions.subagents.list(
          other.id === agent.id ? '' : (await client.beta.agents.sessions.list({ agent_id: other.id })).data[0]!.id,
        )
      ).data,
    ).toEqual([]);
  });

  it('null where the SDK types say it resets: tools cleared, reasoning and compaction and tier back to their defaults; omitted keeps', async () => {
    const { client } = await start();
    const agent = await client.beta.agents.create({
      model: 'm',
      tools: AGENT_TOOLS,
      reasoning: { effort: 'high' },
      service_tier: 'flex',
      compaction: { async: true },
      text: { verbosity: 'low' },
    });
    const kept = await client.beta.agents.update(agent.id, { instructions: 'Be brief.' });
    expect(kept).toMatchObject({
      tools: agent.tools,
      reasoning: { effort: 'high' },
      service_tier: 'flex',
      compaction: { async: true },
      text: { verbosity: 'low' },
    });
    const reset = await client.beta.agents.update(agent.id, { tools: null, reasoning: null, service_tier: null, compaction: null, text: null, metadata: null });
    expect(reset).toMatchObject({
      tools: [],
      reasoning: { effort: null, summary: null },
      service_tier: 'auto',
      compaction: { async: false },
      text: { format: { type: 'text' }, verbosity: 'medium' },
      metadata: {},
      instructions: 'Be brief.',
    });

    const withTools = await client.beta.agents.create({ model: 'm', tools: AGENT_TOOLS });
    const inherited = await client.beta.agents.sessions.create({ agent_id: withTools.id, environment: { type: 'none' }, agent: { instructions: 'x' } });
    expect(inherited.agent.tools).toEqual(withTools.tools);
    const cleared = await client.beta.agents.sessions.create({ agent_id: withTools.id, environment: { type: 'none' }, agent: { tools: null } });
    expect(cleared.agent.tools).toEqual([]);

    const session = await client.beta.agents.sessions.create({
      environment: { type: 'none' },
      agent: { model: 'm', tools: AGENT_TOOLS, service_tier: 'flex', reasoning: { effort: 'low' } },
    });
    const sameEffort = await client.beta.agents.sessions.update(session.id, { agent: { reasoning: {}, service_tier: null } });
    expect(sameEffort.agent).toMatchObject({ reasoning: { effort: 'low' }, service_tier: 'auto', tools: session.agent.tools });
    const defaultEffort = await client.beta.agents.sessions.update(session.id, { agent: { reasoning: { effort: null }, tools: null } });
    expect(defaultEffort.agent).toMatchObject({ reasoning: { effort: null }, tools: [] });
  });

  it("an agent's tool list past 3 MiB of JSON, and stream_options without stream: true, are 400s naming them", async () => {
    const { client } = await start();
    const huge = [{ ...AGENT_TOOLS[0]!, description: 'x'.repeat(3_300_000) }];
    await expectApiError(client.beta.agents.create({ model: 'm', tools: huge }), 400, 'invalid_value', /3 MiB \(3145728 bytes\)/, 'tools');
    const agent = await client.beta.agents.create({ model: 'm' });
    await expectApiError(client.beta.agents.update(agent.id, { tools: huge }), 400, 'invalid_value', /3 MiB/, 'tools');
    await expectApiError(
      client.beta.agents.sessions.create({ environment: { type: 'none' }, agent: { model: 'm', tools: huge } }),
      400,
      'invalid_value',
      /3 MiB/,
      'agent.tools',
    );
    await expectApiError(
      client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' }, stream_options: { include_obfuscation: false } }),
      400,
      'invalid_value',
      "'stream_options' is only allowed when 'stream' is true.",
      'stream_options',
    );
  });

  it('what is not emulated is refused by name, as a 400 the SDK raises', async () => {
    const { client } = await start();
    await expectApiError(
      client.beta.agents.create({ model: 'm', tools: [{ type: 'web_search' }] }),
      400,
      'agents_not_emulated',
      /agent tools of type 'web_search'/,
      'tools[0].type',
    );
    await expectApiError(
      client.beta.agents.sessions.create({ agent: { model: 'm' }, environment: { type: 'openai_hosted' } }),
      400,
      'agents_not_emulated',
      /environments of type 'openai_hosted'/,
      'environment.type',
    );
    await expectApiError(
      client.beta.agents.sessions.create({ environment: { type: 'none' } }),
      400,
      'missing_required_parameter',
      /'agent_id' or 'agent'/,
      'agent_id',
    );
    await expectApiError(client.beta.agents.environments.create({ environment: { type: 'openai_hosted' } }), 400, 'agents_not_emulated', /environments/);
    const session = await client.beta.agents.sessions.create({ agent: { model: 'm' }, environment: { type: 'none' } });
    await expectApiError(
      client.beta.agents.sessions.events.create(session.id, {
        events: [{ type: 'agent.session.input.mcp_approval_request_result', request_id: 'r', response: { type: 'mcp_tool_call', decision: 'approve' } }],
      }),
      400,
      'agents_not_emulated',
      /mcp_approval_request_result/,
      'events[0].type',
    );
  });

  it('automations round-trip, pause and resume, and an invocation runs its target now: a new session, or a message into one', async () => {
    const { client } = await start();
    const agent = await client.beta.agents.create({ model: 'm', tools: AGENT_TOOLS });
    const periodic = await client.beta.agents.automations.create({
      type: 'periodic',
      name: 'nightly pricing',
      expression: '0 2 * * *',
      timezone: 'Europe/Paris',
      target: {
        type: 'new_session',
        agent_id: agent.id,
        environment: { type: 'none' },
        input: [{ role: 'user', content: [{ type: 'input_text', text: 'take your time' }] }],
      },
    });
    expect(periodic).toMatchObject({
      object: 'agent.automation',
      type: 'periodic',
      status: 'active',
      created_by: { type: 'developer' },
      target: { type: 'new_session', agent: null, agent_id: agent.id, environment: { type: 'none' }, input: [{ role: 'user', type: 'message' }] },
    });
    expect(await client.beta.agents.automations.pause(periodic.id)).toMatchObject({ status: 'paused' });
    expect(await client.beta.agents.automations.resume(periodic.id)).toMatchObject({ status: 'active' });
    expect(await client.beta.agents.automations.update(periodic.id, { expression: '30 3 * * 1' })).toMatchObject({
      expression: '30 3 * * 1',
      name: 'nightly pricing',
    });
    for (const [change, param] of [
      [{ timezone: 'Mars/Olympus' }, 'timezone'],
      [{ timezone: '+05:00' }, 'timezone'],
      [{ expression: '99 99 99 99 99' }, 'expression'],
      [{ expression: 'foo bar baz qux quux' }, 'expression'],
    ] as const) {
      await expectApiError(client.beta.agents.automations.update(periodic.id, change), 400, 'invalid_value', /expected/, param);
    }
    expect(await client.beta.agents.automations.update(periodic.id, { expression: '*/15 9-17 * JAN-MAR mon,fri', timezone: 'UTC' })).toMatchObject({
      timezone: 'UTC',
    });
    await expectApiError(
      client.beta.agents.automations.create({
        type: 'once',
        name: 'late',
        run_at: 1_000,
        target: { type: 'existing_session', session_id: 'sess_x', instructions: 'x' },
      }),
      400,
      'invalid_value',
      /time to come/,
      'run_at',
    );

    const invocation = await client.beta.agents.automations.invocations.create(periodic.id);
    expect(invocation).toMatchObject({
      object: 'agent.automation.invocation',
      automation_id: periodic.id,
      status: 'completed',
      source: { type: 'manual' },
      scheduled_at: null,
      error: null,
    });
    const session = await client.beta.agents.sessions.retrieve(invocation.session_id!);
    expect(session).toMatchObject({ agent: { id: agent.id }, status: 'in_progress' });

    // A message into that session while its turn runs steers the turn: the invocation ran.
    const once = await client.beta.agents.automations.create({
      type: 'once',
      name: 'nudge',
      run_at: 2_000_000_000,
      target: { type: 'existing_session', session_id: session.id, instructions: 'Anything new?' },
    });
    const nudged = await client.beta.agents.automations.invocations.create(once.id);
    expect(nudged).toMatchObject({ status: 'completed', session_id: session.id, error: null });
    const sessionItems = await client.beta.agents.sessions.items.list(session.id, { order: 'asc' });
    const userTexts = sessionItems.data.flatMap((item) =>
      item.type === 'message' && item.role === 'user' ? item.content.flatMap((part) => (part.type === 'input_text' ? [part.text] : [])) : [],
    );
    expect(userTexts).toEqual(['take your time', 'Anything new?']);
    expect((await client.beta.agents.automations.list({ session_id: session.id })).data.map((listed) => listed.id)).toEqual([once.id]);
    expect((await client.beta.agents.automations.invocations.list(periodic.id)).data.map((listed) => listed.id)).toEqual([invocation.id]);
    expect(await client.beta.agents.automations.invocations.retrieve(nudged.id, { automation_id: once.id })).toEqual(nudged);
    expect(await client.beta.agents.automations.delete(once.id)).toEqual({ id: once.id, deleted: true, object: 'agent.automation.deleted' });
    await expectApiError(client.beta.agents.automations.retrieve(once.id), 404, 'automation_not_found', /not found/, 'automation_id');
  });

  it('vaults and credentials round-trip, and a credential never returns its secret', async () => {
    const { client } = await start();
    const vault = await client.beta.agents.vaults.create({ name: 'ci', metadata: { env: 'test' } });
    expect(vault).toMatchObject({ object: 'vault', name: 'ci', metadata: { env: 'test' } });
    const credential = await client.beta.agents.vaults.credentials.create(vault.id, {
      name: 'crm',
      auth: { type: 'static_bearer', mcp_server_url: 'https://mcp.example/mcp', token: 'sk-secret' },
    });
    expect(credential).toMatchObject({
      object: 'vault.credential',
      vault_id: vault.id,
      name: 'crm',
      auth: { type: 'static_bearer', mcp_server_url: 'https://mcp.example/mcp' },
    });
    expect(JSON.stringify(await client.beta.agents.vaults.credentials.retrieve(credential.id, { vault_id: vault.id }))).not.toContain('sk-secret');
    expect((await client.beta.agents.vaults.credentials.list(vault.id)).data.map((listed) => listed.id)).toEqual([credential.id]);
    await client.beta.agents.vaults.create({ name: 'other', metadata: { env: 'prod' } });
    expect((await client.beta.agents.vaults.list({ metadata: { env: 'test' } })).data.map((listed) => listed.name)).toEqual(['ci']);
    expect((await client.beta.agents.vaults.credentials.list(vault.id, { metadata: { none: 'x' } })).data).toEqual([]);
    expect(await client.beta.agents.vaults.update(vault.id, { name: 'ci-2' })).toMatchObject({ name: 'ci-2' });
    expect(await client.beta.agents.vaults.delete(vault.id)).toEqual({ id: vault.id, deleted: true, object: 'vault.deleted' });
    await expectApiError(
      client.beta.agents.vaults.credentials.retrieve(credential.id, { vault_id: vault.id }),
      404,
      'vault_not_found',
      /Vault with id/,
      'vault_id',
    );

    // Values are checked too, and a rotation cannot add refresh settings a credential lacks.
    const other = await client.beta.agents.vaults.create({});
    await expectApiError(
      client.beta.agents.vaults.credentials.create(other.id, { name: 'c', auth: { type: 'static_bearer', mcp_server_url: 'not a url', token: 't' } }),
      400,
      'invalid_value',
      /http\(s\) URL/,
      'auth.mcp_server_url',
    );
    const oauth = await client.beta.agents.vaults.credentials.create(other.id, {
      name: 'o',
      auth: { type: 'mcp_oauth', mcp_server_url: 'https://mcp.example/mcp', access_token: 'at', expires_at: '2030-01-01T00:00:00Z' },
    });
    expect(oauth.auth).toEqual({ type: 'mcp_oauth', mcp_server_url: 'https://mcp.example/mcp', expires_at: '2030-01-01T00:00:00Z', refresh: null });
    await expectApiError(
      client.beta.agents.vaults.credentials.update(oauth.id, { vault_id: other.id, auth: { type: 'mcp_oauth', refresh: { scope: 'all' } } }),
      400,
      'invalid_value',
      /no refresh settings/,
      'auth.refresh',
    );
    const rotated = await client.beta.agents.vaults.credentials.update(oauth.id, {
      vault_id: other.id,
      auth: { type: 'mcp_oauth', access_token: 'at-2', expires_at: '2031-01-01T00:00:00Z' },
    });
    expect(rotated.auth).toMatchObject({ expires_at: '2031-01-01T00:00:00Z' });
    expect(JSON.stringify(rotated)).not.toContain('at-2');
  });
});
