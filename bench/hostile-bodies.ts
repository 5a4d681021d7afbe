// The bodies part of `npm run bench:hostile`: request bodies under the body limit whose cost
// grows with what they hold (a metadata of a million keys, tens of thousands of tools, a huge
// enum, …), each sent alone while another connection asks `/health` every 20 ms. Per body: what
// it got, how long it took, the slowest `/health` answer meanwhile (what every other client of
// the server waited, at worst) and the server's own event-loop delay.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { WebSocket } from 'ws';

/** The bench's server, as bench/hostile.ts starts it. */
export interface BodyServer {
  readonly origin: string;
  ask(op: 'reset' | 'read'): Promise<{ p50Ms: number; maxMs: number }>;
}

interface HostileBody {
  readonly name: string;
  /** Where it goes: a path to POST to, `socket` for a WebSocket `response.create`, or `nowhere` (the probe alone, for 2 s: its floor). */
  readonly to: string;
  /** The body (for a socket, the event without its `type`), made and serialized before the clock starts. */
  readonly body: () => Record<string, unknown>;
}

const keys = (count: number): Record<string, string> => Object.fromEntries(Array.from({ length: count }, (_, index) => [`k${index}`, 'v']));
const PROGRAMS = { type: 'programmatic_tool_calling' };
const PROSE = 'The quick brown fox jumps over the lazy dog, 12,345 times; then it rests. ';

async function post(origin: string, path: string, text: string): Promise<string> {
  const reply = await fetch(`${origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
  const answer = await reply.text();
  const code = reply.ok ? '' : ` ${(JSON.parse(answer) as { error?: { code?: string } }).error?.code ?? ''}`;
  return `${reply.status}${code}`;
}

/** A `response.create` over a WebSocket: its first event's type (and error code). */
async function overSocket(origin: string, text: string): Promise<string> {
  const socket = new WebSocket(`${origin.replace(/^http/, 'ws')}/v1/responses`);
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  try {
    const first = new Promise<string>((resolve, reject) => {
      socket.once('message', (data) => {
        const event = JSON.parse(String(data)) as { type: string; code?: string; error?: { code?: string } };
        resolve(event.type === 'error' ? `error ${event.code ?? event.error?.code ?? ''}` : event.type);
      });
      socket.once('close', (code) => reject(new Error(`closed ${code}`)));
    });
    socket.send(text);
    return await first;
  } finally {
    socket.terminate();
  }
}

const HUGE_METADATA = () => ({ model: 'm', input: 'hi', store: false, metadata: keys(1_000_000) });
const manyItems = (count: number) => Array.from({ length: count }, () => ({ role: 'user', content: 'x' }));

export const HOSTILE_BODIES: readonly HostileBody[] = [
  { name: 'none: the probe alone for 2 s (its floor on this machine)', to: 'nowhere', body: () => ({}) },
  { name: '`POST /v1/responses`, `metadata` of 1,000,000 keys (13 MiB)', to: '/v1/responses', body: HUGE_METADATA },
  { name: 'the same as a WebSocket `response.create`', to: 'socket', body: HUGE_METADATA },
  { name: '`POST /v1/agents`, `metadata` of 1,000,000 keys', to: '/v1/agents', body: () => ({ model: 'm', metadata: keys(1_000_000) }) },
  {
    name: '50,000 function tools (8 MiB)',
    to: '/v1/responses',
    body: () => ({
      model: 'm',
      input: 'hi',
      store: false,
      tools: [
        PROGRAMS,
        ...Array.from({ length: 50_000 }, (_, index) => ({
          type: 'function',
          name: `tool_${index}`,
          parameters: { type: 'object', properties: {} },
          strict: false,
        })),
      ],
    }),
  },
  {
    name: 'one enum of 2,500,000 values (25 MiB)',
    to: '/v1/responses',
    body: () => ({
      model: 'm',
      input: 'hi',
      store: false,
      tools: [
        PROGRAMS,
        {
          type: 'function',
          name: 'pick',
          strict: true,
          parameters: {
            type: 'object',
            properties: { v: { type: 'string', enum: Array.from({ length: 2_500_000 }, (_, index) => `v${index}`) } },
            required: ['v'],
            additionalProperties: false,
          },
        },
      ],
    }),
  },
  {
    name: '`instructions` of 30,000,000 characters',
    to: '/v1/responses',
    body: () => ({ model: 'm', input: 'hi', store: false, instructions: 'x'.repeat(30_000_000) }),
  },
  {
    name: 'an input text of 10,000,000 characters of prose (its tokens counted)',
    to: '/v1/responses',
    body: () => ({ model: 'm', store: false, input: PROSE.repeat(Math.ceil(10_000_000 / PROSE.length)).slice(0, 10_000_000) }),
  },
  { name: '400,000 input items, over HTTP', to: '/v1/responses', body: () => ({ model: 'm', store: false, input: manyItems(400_000) }) },
  { name: '400,000 input items, over a WebSocket', to: 'socket', body: () => ({ model: 'm', store: false, input: manyItems(400_000) }) },
  {
    name: '`include` with 1,000,000 entries (29 MiB)',
    to: '/v1/responses',
    body: () => ({ model: 'm', input: 'hi', store: false, include: Array.from({ length: 1_000_000 }, () => 'reasoning.encrypted_content') }),
  },
];

export interface BodyResult {
  readonly name: string;
  readonly answer: string;
  readonly ms: number;
  /** The slowest `/health` answer while the body was sent and answered. */
  readonly worstHealthMs: number;
  readonly loopDelayMaxMs: number;
}

/** Sends each body alone, `/health` asked every 20 ms from another connection meanwhile. */
/**
 * Asks `/health` every 20 ms, each time on a connection of its own (never queued behind the
 * body's), from a thread of its own: the bench's loop sends the body (encoding 30 MB of text
 * holds it for tens of milliseconds), which a probe on that loop would count as the server's.
 */
function startProber(origin: string): { readonly started: Promise<void>; stop(): Promise<number> } {
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
    let probing = true;
    let worst = 0;
    parentPort.on('message', () => { probing = false; });
    (async () => {
      parentPort.postMessage('started');
      while (probing) {
        const started = performance.now();
        await fetch(workerData + '/health', { headers: { connection: 'close' } }).then((reply) => reply.arrayBuffer());
        worst = Math.max(worst, performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      parentPort.postMessage(worst);
    })();`,
    { eval: true, workerData: origin },
  );
  const replies: ((value: unknown) => void)[] = [];
  worker.on('message', (value) => replies.shift()?.(value));
  const next = () => new Promise((resolve) => replies.push(resolve));
  const started = next().then(() => undefined);
  return {
    started,
    async stop() {
      const worst = next();
      worker.postMessage('stop');
      const ms = (await worst) as number;
      await worker.terminate();
      return ms;
    },
  };
}

export async function measureBodies(server: BodyServer, progress: (message: string) => void): Promise<BodyResult[]> {
  const results: BodyResult[] = [];
  for (const body of HOSTILE_BODIES) {
    progress(`body: ${body.name}`);
    // Made here, before the clock and the probe start: making it holds this process's loop, which the probe would count.
    const text = JSON.stringify(body.to === 'socket' ? { type: 'response.create', ...body.body() } : body.body());
    await server.ask('reset');
    const prober = startProber(server.origin);
    await prober.started;
    const started = performance.now();
    const sent =
      body.to === 'nowhere' ? sleep(2_000).then(() => '-') : body.to === 'socket' ? overSocket(server.origin, text) : post(server.origin, body.to, text);
    const answer = await sent.catch((error: Error) => `transport error ${error.message}`);
    const ms = performance.now() - started;
    const worstHealthMs = await prober.stop();
    const { maxMs } = await server.ask('read');
    results.push({ name: body.name, answer, ms, worstHealthMs, loopDelayMaxMs: maxMs });
  }
  return results;
}
