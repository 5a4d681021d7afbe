import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { type APIError } from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { Response, ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SQLITE_FILE_NAME } from '../server/platform/stores/create-store.ts';
import { SqliteResponseStore } from '../server/platform/stores/sqlite-store.ts';
import type { JournalEntry } from '../server/engine/journal-details.ts';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { functionCallsOf, inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

const TOOLS = programTools('get_inventory', 'get_demand');
const PROGRAM =
  "const [s, d] = await Promise.all([tools.get_inventory({sku: 'a'}), tools.get_demand({sku: 'a'})]); text(`stock ${s} demand ${d}, a long enough final message to cut in the middle`)";
const USER = inlineProgram(PROGRAM);
const ANSWERS: Record<string, string> = { get_inventory: '42', get_demand: '31' };

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({
    scenarios: {
      rules: [
        { match: { user: 'flaky scenario' }, message: 'made it', knobs: { error_status: 500, error_times: 1 } },
        { match: { user: 'deferred scenario' }, program: 'text(await tools.get_inventory({}))', knobs: { final_message: 'next' } },
      ],
    },
  });
});
afterAll(() => server.close());
beforeEach(async () => {
  await fetch(`${origin()}/v1/emulator/journal`, { method: 'DELETE' });
});

function origin(): string {
  return server.baseURL.replace(/\/v1$/, '');
}

function client(headers: Record<string, string>, maxRetries = 0): OpenAI {
  return new OpenAI({ apiKey: 'k', baseURL: server.baseURL, defaultHeaders: headers, maxRetries });
}

async function journal(): Promise<JournalEntry[]> {
  return ((await (await fetch(`${origin()}/v1/emulator/journal`)).json()) as { data: JournalEntry[] }).data;
}

/** The guide's store: false loop, keeping every response; it throws on a response that is not completed. */
async function seedLoop(sdk: OpenAI, input: string = USER): Promise<Response[]> {
  const items: ResponseInputItem[] = [{ role: 'user', content: input }];
  const responses: Response[] = [];
  for (let turn = 0; turn < 10; turn++) {
    const response = await sdk.responses.create({ model: 'm', store: false, input: items, tools: TOOLS });
    responses.push(response);
    if (response.status !== 'completed') throw new Error(`Response ended with status ${response.status}`);
    items.push(...toResponseInputItems(response.output));
    const calls = functionCallsOf(response);
    if (calls.length === 0) {
      if (response.output.some((item) => item.type === 'message')) return responses;
      continue;
    }
    items.push(
      ...calls.map((call) => ({ type: 'function_call_output' as const, call_id: call.call_id, output: ANSWERS[call.name] ?? '', caller: call.caller ?? null })),
    );
  }
  throw new Error('the loop did not end');
}

describe('final_message: the message after a program', () => {
  it('comes in the same response as program_output by default', async () => {
    const responses = await seedLoop(client({}));
    expect(responses.map((response) => response.output.map((item) => item.type))).toEqual([
      ['program', 'function_call', 'function_call'],
      ['program_output', 'message'],
    ]);
  });

  it.each([
    ['the header x-ptc-final-message: next', { 'x-ptc-final-message': 'next' }, USER],
    ['a scenario rule', {}, 'deferred scenario'],
  ])("with %s, comes one response later, and the guide's loop continues to it", async (_, headers, input) => {
    const responses = await seedLoop(client(headers), input);
    const shapes = responses.map((response) => response.output.map((item) => item.type));
    expect(shapes.at(-2)).toEqual(['program_output']);
    expect(shapes.at(-1)).toEqual(['message']);
    expect(responses.at(-1)?.output_text).toBe(programOutputOf(responses.at(-2)!)?.result);
  });
});

describe('incomplete: a response that ends with max_output_tokens', () => {
  it("stops the guide's loop, which must handle it", async () => {
    await expect(seedLoop(client({ 'x-ptc-incomplete': 'max_output_tokens' }))).rejects.toThrow('Response ended with status incomplete');
  });

  it('cuts the final message in half and marks it, when forced by the knob', async () => {
    const items: ResponseInputItem[] = [{ role: 'user', content: USER }];
    const first = await server.client.responses.create({ model: 'm', store: false, input: items, tools: TOOLS });
    items.push(
      ...toResponseInputItems(first.output),
      ...functionCallsOf(first).map((call) => ({
        type: 'function_call_output' as const,
        call_id: call.call_id,
        output: ANSWERS[call.name]!,
        caller: call.caller ?? null,
      })),
    );
    const cut = await client({ 'x-ptc-incomplete': 'max_output_tokens' }).responses.create({ model: 'm', store: false, input: items, tools: TOOLS });
    expect(cut.status).toBe('incomplete');
    expect(cut.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    const message = cut.output.at(-1);
    expect(message).toMatchObject({ type: 'message', status: 'incomplete' });
    const full = programOutputOf(cut)!.result;
    expect(full.startsWith(cut.output_text)).toBe(true);
    expect(cut.output_text.length).toBeLessThan(full.length);
    // The program itself is never cut.
    expect(programOutputOf(cut)?.status).toBe('completed');
  });

  it('happens for real when the message is longer than max_output_tokens', async () => {
    const response = await server.client.responses.create({
      model: 'm',
      input: inlineProgram('text("one two three four five six seven eight")'),
      tools: TOOLS,
      max_output_tokens: 3,
    });
    expect(response.status).toBe('incomplete');
    expect(response.output_text).toBe('one two three');
    const roomy = await server.client.responses.create({ model: 'm', input: inlineProgram('text("one two")'), tools: TOOLS, max_output_tokens: 100 });
    expect(roomy.status).toBe('completed');
  });
});

describe("error_status: HTTP errors in OpenAI's envelope", () => {
  it('fails the first N attempts; the SDK retries through them, honouring retry-after-ms', async () => {
    const sdk = client({ 'x-ptc-error-status': '429', 'x-ptc-error-times': '2', 'x-ptc-error-retry-after-ms': '5' }, 2);
    const responses = await seedLoop(sdk);
    expect(responses.at(-1)?.output_text).toContain('stock 42 demand 31');
    // Each of the two requests of the loop failed twice before it went through.
    expect((await journal()).map((entry) => entry.status).reverse()).toEqual([429, 429, 200, 429, 429, 200]);
  });

  it("reaches a client without retries as the SDK's error class, with the headers the knob set", async () => {
    const error = await rejectionOf(
      client({ 'x-ptc-error-status': '429', 'x-ptc-error-retry-after-ms': '1500' }).responses.create({ model: 'm', input: 'hi' }),
    );
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error).toMatchObject({ status: 429, code: 'simulated_error', type: 'rate_limit_error', param: null });
    expect((error as APIError).message).toContain('attempt 1');
    expect((error as APIError).requestID).toMatch(/^req_/);
    expect((error as APIError).headers?.get('retry-after-ms')).toBe('1500');
    expect((error as APIError).headers?.get('retry-after')).toBe('2');
  });

  it('stops the SDK from retrying with x-should-retry: false', async () => {
    const sdk = client({ 'x-ptc-error-status': '503', 'x-ptc-error-should-retry': 'false' }, 2);
    expect(await rejectionOf(sdk.responses.create({ model: 'm', input: 'hi' }))).toBeInstanceOf(OpenAI.InternalServerError);
    expect(await journal()).toHaveLength(1);
  });

  it('fails every attempt without error_times, until the SDK gives up', async () => {
    const sdk = client({ 'x-ptc-error-status': '500', 'x-ptc-error-retry-after-ms': '0' }, 2);
    expect(await rejectionOf(sdk.responses.create({ model: 'm', input: 'hi' }))).toBeInstanceOf(OpenAI.InternalServerError);
    expect((await journal()).map((entry) => entry.status)).toEqual([500, 500, 500]);
  });

  it('comes from a scenario rule too', async () => {
    expect(await rejectionOf(client({}).responses.create({ model: 'm', input: 'flaky scenario' }))).toBeInstanceOf(OpenAI.InternalServerError);
    const retried = await client({}, 1).responses.create({ model: 'm', input: 'flaky scenario' });
    expect(retried.output_text).toBe('made it');
  });

  it('runs nothing on a failed attempt: the program starts once, on the attempt that succeeds', async () => {
    await seedLoop(client({ 'x-ptc-error-status': '503', 'x-ptc-error-times': '1', 'x-ptc-error-retry-after-ms': '0' }, 1));
    const traces = (await journal()).flatMap((entry) => entry.programs ?? []);
    expect(traces.map((trace) => trace.path)).toEqual(['warm', 'start']);
  });
});

describe('stream_cut_after: a stream that drops', () => {
  it("ends without its terminal event; the client recovers the stored response's stream from where it stopped", async () => {
    const sdk = client({ 'x-ptc-stream-cut-after': '4' });
    const stream = sdk.responses.stream({ model: 'm', input: USER, tools: TOOLS });
    const seen: number[] = [];
    let responseId = '';
    await expect(
      (async () => {
        for await (const event of stream) {
          seen.push(event.sequence_number);
          if (event.type === 'response.created') responseId = event.response.id;
        }
      })(),
    ).rejects.toThrow();
    expect(seen).toEqual([0, 1, 2, 3]);
    const resumed = server.client.responses.stream({ response_id: responseId, starting_after: seen.at(-1)! });
    const after: number[] = [];
    for await (const event of resumed) after.push(event.sequence_number);
    expect(after[0]).toBe(4);
    const final = await resumed.finalResponse();
    expect(functionCallsOf(final)).toHaveLength(2);
    expect(final.id).toBe(responseId);
    const [entry] = await journal();
    expect(entry?.stream_report).toMatchObject({ cut: false });
    expect((await journal()).find((candidate) => candidate.stream_report?.cut)?.stream_report).toEqual({ events_sent: 4, pauses_ms: [0, 0, 0, 0], cut: true });
  });
});

describe('event_latency_ms, latency_jitter_ms and seed: a slow stream', () => {
  async function pauses(headers: Record<string, string>): Promise<readonly number[]> {
    await fetch(`${origin()}/v1/emulator/journal`, { method: 'DELETE' });
    const stream = client(headers).responses.stream({ model: 'm', input: 'hello there' });
    expect((await stream.finalResponse()).status).toBe('completed');
    return (await journal())[0]!.stream_report!.pauses_ms;
  }

  it('pauses before every event, with jitter drawn from the seed: the same seed, the same pauses', async () => {
    const knobs = { 'x-ptc-event-latency-ms': '2', 'x-ptc-latency-jitter-ms': '5' };
    const first = await pauses({ ...knobs, 'x-ptc-seed': '7' });
    const again = await pauses({ ...knobs, 'x-ptc-seed': '7' });
    const other = await pauses({ ...knobs, 'x-ptc-seed': '8' });
    expect(again).toEqual(first);
    expect(other).not.toEqual(first);
    for (const pause of [...first, ...other]) expect(pause >= 2 && pause < 7).toBe(true);
    expect(await pauses({ 'x-ptc-event-latency-ms': '3' })).toEqual(first.map(() => 3));
  });
});

describe('knob headers', () => {
  it.each([
    ['an unknown x-ptc header', { 'x-ptc-final-mesage': 'next' }, 'x-ptc-final-mesage', 'Unknown header'],
    ['a value outside the knob', { 'x-ptc-final-message': 'later' }, 'x-ptc-final-message', 'Invalid value'],
    ['a number that is not one', { 'x-ptc-error-status': 'often' }, 'x-ptc-error-status', 'Invalid value'],
    ['a status that is no error', { 'x-ptc-error-status': '200' }, 'x-ptc-error-status', 'Invalid value'],
  ])('reject %s with a 400 naming the header', async (_, headers, param, mention) => {
    expectSdkError(await rejectionOf(client(headers).responses.create({ model: 'm', input: 'hi' })), {
      code: 'invalid_value',
      param,
      mentions: [mention, param],
    });
  });

  it('delay_ms holds the response back, and the journal records the knobs that applied', async () => {
    const response = await client({ 'x-ptc-delay-ms': '20', 'x-ptc-seed': '3' }).responses.create({ model: 'm', input: 'hi' });
    expect(response.status).toBe('completed');
    expect((await journal())[0]?.knobs).toEqual({ delay_ms: 20, seed: 3 });
  });
});

describe('not_cancellable', () => {
  it('answers a cancel of a response that was not created in the background', async () => {
    const response = await server.client.responses.create({ model: 'm', input: 'hi' });
    expectSdkError(await rejectionOf(server.client.responses.cancel(response.id)), { code: 'not_cancellable', param: 'response_id', mentions: [response.id] });
  });
});

describe('shutting down with a background response still waiting', () => {
  it('stops it at once and records it failed, rather than waiting out its delay', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ptc-shutdown-'));
    try {
      const own = await startServer({ config: { store: 'sqlite', dataDir } });
      const sdk = new OpenAI({ apiKey: 'k', baseURL: own.baseURL, maxRetries: 0, defaultHeaders: { 'x-ptc-delay-ms': '600000' } });
      const queued = await sdk.responses.create({ model: 'm', input: 'hi', background: true });
      expect(queued.status).toBe('queued');
      await own.close();
      const store = new SqliteResponseStore(join(dataDir, SQLITE_FILE_NAME));
      const stored = await store.get(queued.id);
      await store.close();
      expect(stored?.response).toMatchObject({
        status: 'failed',
        error: { code: 'server_error', message: 'The server shut down before this background response finished.' },
      });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
