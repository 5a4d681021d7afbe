import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { SEED_TOOLS } from '../test/fixtures/seed-tools.ts';
import { SEED_EXPECTED_RESULT, SEED_IMPLEMENTATIONS, SEED_USER_MESSAGE } from './seed.ts';

/**
 * The seed conversation spoken over plain node:http (no SDK, so no hidden retries): request 1
 * sends the user message and must come back with `program` + two `function_call`s; request 2
 * resends every item plus one `function_call_output` per call (with `caller` copied) and must
 * come back with `program_output` (completed, the seed's result) + `message`. A 429 is counted
 * and the same request is sent again after `retry-after-ms`.
 */

const USER_ITEM = { role: 'user', content: SEED_USER_MESSAGE };
/** Request 1 of the seed conversation: the user message, `store: false`; it pauses on two calls. */
export const FIRST_BODY = JSON.stringify({ model: 'ptc-emulator', store: false, input: [USER_ITEM], tools: SEED_TOOLS });

/** A 200 whose body is not what the seed conversation must produce: the server is broken. */
export class ShapeError extends Error {}

export interface Exchange {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
  readonly ms: number;
}

/** One POST of a JSON body on the client's keep-alive agent. */
export function postJson(agent: http.Agent, origin: string, path: string, body: string, timeoutMs: number, retryCount = 0): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const request = http.request(
      `${origin}${path}`,
      {
        method: 'POST',
        agent,
        timeout: timeoutMs,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          authorization: 'Bearer bench-key',
          'x-stainless-retry-count': String(retryCount),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            text: Buffer.concat(chunks).toString('utf8'),
            ms: performance.now() - started,
          }),
        );
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error(`request timed out after ${timeoutMs} ms`)));
    request.on('error', reject);
    request.end(body);
  });
}

interface OutputItem {
  readonly type?: unknown;
  readonly [key: string]: unknown;
}

function outputOf(text: string, label: string): OutputItem[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ShapeError(`${label}: body is not JSON: ${text.slice(0, 200)}`);
  }
  const response = parsed as { status?: unknown; output?: unknown };
  if (response.status !== 'completed') throw new ShapeError(`${label}: response status ${JSON.stringify(response.status)}, expected completed`);
  if (!Array.isArray(response.output)) throw new ShapeError(`${label}: no output array`);
  return response.output as OutputItem[];
}

const types = (output: readonly OutputItem[]): string => output.map((item) => String(item.type)).join(', ');

/**
 * Checks request 1's answer (program + the two calls of one Promise.all batch, each with
 * `caller` naming the program) and builds request 2's body: every item resent, then the outputs.
 */
export function secondRequestFor(text: string): { body: string; programCallId: string } {
  const output = outputOf(text, 'request 1');
  const [program, ...calls] = output;
  if (output.length !== 3 || program?.type !== 'program' || !calls.every((item) => item.type === 'function_call')) {
    throw new ShapeError(`request 1: expected program, function_call, function_call; got ${types(output)}`);
  }
  const programCallId = program['call_id'];
  if (typeof programCallId !== 'string' || typeof program['code'] !== 'string' || !String(program['fingerprint']).startsWith('ptcfp3.')) {
    throw new ShapeError('request 1: the program item lacks call_id, code or fingerprint');
  }
  const names = calls.map((call) => call['name']);
  if (names[0] !== 'get_inventory' || names[1] !== 'get_demand') throw new ShapeError(`request 1: calls ${JSON.stringify(names)}`);
  const outputs = calls.map((call) => {
    const caller = call['caller'] as { type?: unknown; caller_id?: unknown } | undefined;
    if (call['arguments'] !== '{"sku":"sku_123"}' || caller?.type !== 'program' || caller.caller_id !== programCallId || typeof call['call_id'] !== 'string') {
      throw new ShapeError(`request 1: malformed call ${JSON.stringify(call)}`);
    }
    const run = SEED_IMPLEMENTATIONS[call['name'] as string]!;
    return { type: 'function_call_output', call_id: call['call_id'], output: JSON.stringify(run(JSON.parse(call['arguments']) as { sku: string })), caller };
  });
  return {
    body: JSON.stringify({ model: 'ptc-emulator', store: false, input: [USER_ITEM, ...output, ...outputs], tools: SEED_TOOLS }),
    programCallId,
  };
}

/** Checks request 2's answer: the program completed with the seed's result, then the message carrying it. */
export function checkSecondResponse(text: string, programCallId: string): void {
  const output = outputOf(text, 'request 2');
  const [programOutput, message] = output;
  if (output.length !== 2 || programOutput?.type !== 'program_output' || message?.type !== 'message') {
    throw new ShapeError(`request 2: expected program_output, message; got ${types(output)}`);
  }
  if (programOutput['call_id'] !== programCallId || programOutput['status'] !== 'completed' || programOutput['result'] !== SEED_EXPECTED_RESULT) {
    throw new ShapeError(`request 2: program_output ${JSON.stringify(programOutput).slice(0, 400)}`);
  }
  const content = message['content'];
  const first = Array.isArray(content) ? (content[0] as { type?: unknown; text?: unknown } | undefined) : undefined;
  if (first?.type !== 'output_text' || first.text !== SEED_EXPECTED_RESULT) throw new ShapeError(`request 2: message ${JSON.stringify(message).slice(0, 400)}`);
}

/** What one virtual client saw; merged per step. Only exchanges that ended inside the step's window count. */
export class Tally {
  ok = 0;
  busy = 0;
  conversations = 0;
  /** Status (or transport error) → count, for everything that is neither 200 nor 429. */
  readonly other = new Map<string, number>();
  /** 200s whose body was wrong: counted in `other` as "200 (wrong shape)" too. */
  badShape = 0;
  /** The longest run of 429s one request met before it got through (or the client stopped). */
  maxBusyStreak = 0;
  /** Requests that met a third 429 in a row: the SDK's default (maxRetries: 2) would have thrown the 429 at its caller. */
  beyondSdkRetries = 0;
  /** Conversations completed in the window by each virtual client: who got served and who starved. */
  readonly perClientConversations: number[] = [];
  readonly okMs: number[] = [];
  readonly conversationMs: number[] = [];
  readonly examples: string[] = [];

  addOther(key: string, example: string): void {
    this.other.set(key, (this.other.get(key) ?? 0) + 1);
    if (this.examples.length < 3) this.examples.push(`${key}: ${example.slice(0, 500)}`);
  }

  get otherTotal(): number {
    let total = 0;
    for (const count of this.other.values()) total += count;
    return total;
  }

  merge(from: Tally): void {
    this.ok += from.ok;
    this.busy += from.busy;
    this.conversations += from.conversations;
    this.badShape += from.badShape;
    this.maxBusyStreak = Math.max(this.maxBusyStreak, from.maxBusyStreak);
    this.beyondSdkRetries += from.beyondSdkRetries;
    if (from.perClientConversations.length === 0) this.perClientConversations.push(from.conversations);
    else this.perClientConversations.push(...from.perClientConversations);
    for (const [key, count] of from.other) this.other.set(key, (this.other.get(key) ?? 0) + count);
    for (const ms of from.okMs) this.okMs.push(ms);
    for (const ms of from.conversationMs) this.conversationMs.push(ms);
    for (const example of from.examples) if (this.examples.length < 5) this.examples.push(example);
  }
}

export interface Window {
  /** performance.now() at which counting starts and after which no conversation is begun. */
  readonly startAt: number;
  readonly endAt: number;
}

export interface ClientOptions {
  readonly origin: string;
  readonly timeoutMs: number;
  /** Attempts of one request at most (the first + retries after 429s). */
  readonly maxAttempts: number;
}

/** Milliseconds a 429 asks to wait: `retry-after-ms`, else `retry-after` seconds, else 1 s. */
function retryDelay(headers: http.IncomingHttpHeaders): number {
  const ms = Number(headers['retry-after-ms']);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const seconds = Number(headers['retry-after']);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : 1000;
}

/** Why a 429 is not the gate's `server_busy` in the OpenAI envelope with `retry-after-ms`, or undefined when it is. */
function busyProblem(exchange: Exchange): string | undefined {
  let code: unknown;
  try {
    code = (JSON.parse(exchange.text) as { error?: { code?: unknown } }).error?.code;
  } catch {
    code = undefined;
  }
  if (code !== 'server_busy') return `code ${JSON.stringify(code)}: ${exchange.text}`;
  if (exchange.headers['retry-after-ms'] === undefined) return `no retry-after-ms header: ${JSON.stringify(exchange.headers)}`;
  return undefined;
}

type Attempt = { readonly kind: 'ok'; readonly exchange: Exchange } | { readonly kind: 'failed' } | { readonly kind: 'gave-up' };

/**
 * One request, retried after each 429 as asked. `mustFinish`: a request 2 is retried after the
 * window too (its program is paused and waits for it); a request 1 is given up once the window
 * has closed (nothing started on the server).
 */
async function send(agent: http.Agent, body: string, options: ClientOptions, window: Window, tally: Tally, mustFinish: boolean): Promise<Attempt> {
  for (let attempt = 1; attempt <= options.maxAttempts; attempt++) {
    let exchange: Exchange;
    try {
      // Numbered like the SDK's attempts: the server gives retries priority.
      exchange = await postJson(agent, options.origin, '/v1/responses', body, options.timeoutMs, attempt - 1);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      if (performance.now() <= window.endAt) tally.addOther(`transport error ${code}`, (error as Error).message);
      return { kind: 'failed' };
    }
    const inWindow = performance.now() <= window.endAt;
    if (exchange.status === 200) return { kind: 'ok', exchange };
    if (exchange.status === 429) {
      const problem = busyProblem(exchange);
      if (problem !== undefined) {
        if (inWindow) tally.addOther('429 (not server_busy with retry-after-ms)', problem);
        return { kind: 'failed' };
      }
      if (inWindow) tally.busy += 1;
      // This request's 429s so far: attempt - 1 before this one, all of them 429s.
      tally.maxBusyStreak = Math.max(tally.maxBusyStreak, attempt);
      if (attempt === 3 && inWindow) tally.beyondSdkRetries += 1;
      if (!mustFinish && !inWindow) return { kind: 'gave-up' };
      await sleep(retryDelay(exchange.headers));
      if (!mustFinish && performance.now() > window.endAt) return { kind: 'gave-up' };
      continue;
    }
    if (inWindow) tally.addOther(`HTTP ${exchange.status}`, exchange.text);
    return { kind: 'failed' };
  }
  if (performance.now() <= window.endAt) tally.addOther('gave up after 429s', `${options.maxAttempts} attempts`);
  return { kind: 'failed' };
}

function badShape(tally: Tally, error: unknown): void {
  if (!(error instanceof ShapeError)) throw error;
  tally.badShape += 1;
  tally.addOther('200 (wrong shape)', error.message);
}

/** `clients` virtual clients for `seconds` from now, on their own connections; what they counted, together. */
export async function runClients(origin: string, clients: number, seconds: number): Promise<Tally> {
  const startAt = performance.now();
  const window: Window = { startAt, endAt: startAt + seconds * 1000 };
  const tallies = await Promise.all(Array.from({ length: clients }, () => virtualClient({ origin, timeoutMs: 30_000, maxAttempts: 60 }, window)));
  const tally = new Tally();
  for (const one of tallies) tally.merge(one);
  return tally;
}

/** Runs seed conversations back to back until the window closes; returns what it counted. */
export async function virtualClient(options: ClientOptions, window: Window): Promise<Tally> {
  const tally = new Tally();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    while (performance.now() < window.endAt) {
      const started = performance.now();
      const first = await send(agent, FIRST_BODY, options, window, tally, false);
      if (first.kind !== 'ok') continue;
      const firstAt = performance.now();
      const firstCounts = firstAt >= window.startAt && firstAt <= window.endAt;
      let second: { body: string; programCallId: string };
      try {
        second = secondRequestFor(first.exchange.text);
      } catch (error) {
        if (firstCounts) badShape(tally, error);
        continue;
      }
      if (firstCounts) {
        tally.ok += 1;
        tally.okMs.push(first.exchange.ms);
      }
      const finished = await send(agent, second.body, options, window, tally, true);
      if (finished.kind !== 'ok') continue;
      const doneAt = performance.now();
      const secondCounts = doneAt >= window.startAt && doneAt <= window.endAt;
      try {
        checkSecondResponse(finished.exchange.text, second.programCallId);
      } catch (error) {
        if (secondCounts) badShape(tally, error);
        continue;
      }
      if (secondCounts) {
        tally.ok += 1;
        tally.okMs.push(finished.exchange.ms);
        if (started >= window.startAt) {
          tally.conversations += 1;
          tally.conversationMs.push(doneAt - started);
        }
      }
    }
  } finally {
    agent.destroy();
  }
  return tally;
}

/** One conversation, no retries, for the sequential worker-hop measurement: its two request times. */
export async function sequentialConversation(agent: http.Agent, origin: string): Promise<{ firstMs: number; secondMs: number }> {
  const first = await postJson(agent, origin, '/v1/responses', FIRST_BODY, 30_000);
  if (first.status !== 200) throw new Error(`request 1 answered ${first.status}: ${first.text.slice(0, 300)}`);
  const second = secondRequestFor(first.text);
  const finished = await postJson(agent, origin, '/v1/responses', second.body, 30_000);
  if (finished.status !== 200) throw new Error(`request 2 answered ${finished.status}: ${finished.text.slice(0, 300)}`);
  checkSecondResponse(finished.text, second.programCallId);
  return { firstMs: first.ms, secondMs: finished.ms };
}
