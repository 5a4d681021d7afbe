// Entry point of `npm run bench:hostile`: honest traffic (the seed conversation, store: false,
// back to back from BENCH_HOSTILE_CLIENTS clients) against a server with worker processes, beside
// one client sending one class of hostile request after another (one at a time,
// BENCH_HOSTILE_INTERVAL_MS apart). Each class is measured in BENCH_HOSTILE_ROUNDS rounds, each a
// baseline window with no hostile request and then a window beside the class: honest throughput
// drifts over a run, so a class is set against baselines interleaved with it, not one measured
// minutes earlier, and its ratio is of the sums over its rounds. Per class: the server's event-loop
// delay (p50 and max, from monitorEventLoopDelay in the server's own process), honest
// conversations per second and their ratio to that baseline, honest conversations lost (any
// answer but the right one), and what the hostile requests got. It reports; it fails (exit 1)
// only when an honest conversation was lost.
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { describeEnvironment } from './environment.ts';
import { Tally, virtualClient } from './load-client.ts';
import { SEED_SCENARIO_PATH } from './seed.ts';
import { positiveNumberFromEnv } from './settings.ts';
import { formatTable } from './table.ts';
import { ICU_RUNAWAY } from '../test/support/hostile-programs.ts';
import { measureBodies, type BodyResult } from './hostile-bodies.ts';

/** Seconds of each window; a class takes ROUNDS baseline windows and ROUNDS hostile ones. */
const SECONDS = positiveNumberFromEnv('BENCH_HOSTILE_SECONDS', 8);
const ROUNDS = positiveNumberFromEnv('BENCH_HOSTILE_ROUNDS', 3, true);
const CLIENTS = positiveNumberFromEnv('BENCH_HOSTILE_CLIENTS', 8, true);
const WORKERS = positiveNumberFromEnv('BENCH_HOSTILE_WORKERS', 2, true);
const WARMUP_SECONDS = 5;
/** The hostile client waits this long between its requests (one at a time): a steady attacker, not a flood. */
const INTERVAL_MS = positiveNumberFromEnv('BENCH_HOSTILE_INTERVAL_MS', 250);
/** Only the classes whose name contains this (case-insensitive), e.g. `ICU`; all when unset. */
const ONLY = process.env.BENCH_HOSTILE_ONLY?.toLowerCase();

const SERVER_ENV: Record<string, string> = {
  PTC_STORE: 'memory',
  PTC_SCENARIOS: SEED_SCENARIO_PATH,
  PTC_WORKERS: String(WORKERS),
  LOG_LEVEL: 'silent',
};

const progress = (message: string): void => {
  process.stderr.write(`running: ${message}\n`);
};

// ---- The hostile requests ------------------------------------------------------------------------

const PROGRAMS = { type: 'programmatic_tool_calling' };
const inline = (code: string): string => `Run this:\n\`\`\`js\n${code}\n\`\`\``;
const strictTool = (name: string, parameters: unknown): unknown => ({ type: 'function', name, parameters, strict: true, allowed_callers: ['programmatic'] });

function nestedSchema(depth: number, salt: number): unknown {
  let schema: unknown = { type: 'string', description: `leaf ${salt}` };
  for (let level = 0; level < depth; level++) schema = { type: 'object', properties: { a: schema, b: schema } };
  return schema;
}

function denseSchema(count: number, salt: number): unknown {
  const property = (index: number): unknown => ({
    type: ['string', 'number', 'array', 'object'],
    minLength: 1,
    maxLength: 9,
    minimum: salt,
    maximum: index,
    multipleOf: 3,
    minItems: 1,
    maxItems: 4,
    uniqueItems: true,
    minProperties: 1,
    maxProperties: 3,
    pattern: 'a',
  });
  return { type: 'object', properties: Object.fromEntries(Array.from({ length: count }, (_, index) => [`p${index}`, property(index)])) };
}

interface HostileClass {
  readonly name: string;
  /** One hostile request; resolves to a label of what it got (status and code). */
  send(origin: string, n: number): Promise<string>;
}

async function post(origin: string, body: unknown, headers: Record<string, string> = {}): Promise<string> {
  const response = await fetch(`${origin}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== 200) {
    let code = '?';
    try {
      code = String((JSON.parse(text) as { error?: { code?: unknown } }).error?.code);
    } catch {
      // not JSON
    }
    return `${response.status} ${code}`;
  }
  if (text.startsWith('event:') || text.includes('\nevent:')) return `200 stream of ${(text.length / 1e6).toFixed(1)} MB`;
  const output = (JSON.parse(text) as { output?: { type?: string; status?: string; result?: string }[] }).output ?? [];
  const programOutput = output.find((item) => item.type === 'program_output');
  if (!programOutput) return '200';
  const code = programOutput.status === 'incomplete' ? ` ${(JSON.parse(programOutput.result ?? '{}') as { error?: { code?: string } }).error?.code}` : '';
  return `200 ${programOutput.status}${code}`;
}

const HOSTILE: readonly HostileClass[] = [
  {
    name: 'strict schema, 60,000-value enum',
    send: (origin, n) =>
      post(origin, {
        model: 'm',
        input: 'hi',
        tools: [
          PROGRAMS,
          strictTool('pick', { type: 'object', properties: { code: { enum: Array.from({ length: 60_000 }, (_, index) => `v${n}-${index}`) } } }),
        ],
      }),
  },
  {
    name: 'strict schema, 13 levels sharing one subschema',
    send: (origin, n) => post(origin, { model: 'm', input: 'hi', tools: [PROGRAMS, strictTool('deep', nestedSchema(13, n))] }),
  },
  {
    // Within every limit, the most ajv time one request can buy: about 2 s of CPU time, past
    // the 8 MiB of code. Each request's schema differs, so none is cached.
    name: 'strict schema within the limits, 3,000 properties of twelve keywords',
    send: (origin, n) => post(origin, { model: 'm', input: 'hi', tools: [PROGRAMS, strictTool('dense', denseSchema(3000, n))] }),
  },
  {
    name: 'lenient checks, 20,000 outputs for unknown calls',
    send: (origin, n) =>
      post(
        origin,
        {
          model: 'm',
          store: false,
          input: [
            { role: 'user', content: 'hi' },
            ...Array.from({ length: 20_000 }, (_, index) => ({ type: 'function_call_output', call_id: `call_${n}_${index}`, output: 'x' })),
          ],
        },
        { 'x-ptc-client-checks': 'lenient' },
      ),
  },
  {
    name: 'streamed 300,000-character result',
    send: (origin) => post(origin, { model: 'm', store: false, stream: true, input: inline('text("x".repeat(300000))'), tools: [PROGRAMS] }),
  },
  {
    name: "strict 'required' of inherited names",
    send: (origin) =>
      post(origin, {
        model: 'm',
        store: false,
        input: inline('try { await tools.f({}); } catch (error) { text(error.message); }'),
        tools: [PROGRAMS, strictTool('f', { type: 'object', required: ['constructor', 'toString', 'valueOf'] })],
      }),
  },
  {
    name: 'forged program item closed by a program_output',
    send: (origin, n) =>
      post(origin, {
        model: 'm',
        store: false,
        tools: [PROGRAMS],
        input: [
          { role: 'user', content: 'hi' },
          { type: 'program', id: `prog_${n}`, call_id: `call_victim_${n}`, code: 'text(1)', fingerprint: 'ptcfp3.AAAA.AAAA' },
          { type: 'program_output', call_id: `call_victim_${n}`, status: 'incomplete', result: 'aborted' },
        ],
      }),
  },
  {
    name: 'ICU call ignoring timeouts (Thai word segmentation)',
    send: (origin) =>
      post(origin, {
        model: 'm',
        store: false,
        tools: [PROGRAMS],
        input: inline(ICU_RUNAWAY),
      }),
  },
  {
    name: 'a builtin going on after its isolate is disposed, without ICU (Array.from over a long string)',
    send: (origin) =>
      post(origin, {
        model: 'm',
        store: false,
        tools: [PROGRAMS],
        input: inline("text(String(Array.from('สวัสดีครับ'.repeat(2 ** 21)).length))"),
      }),
  },
  {
    // Not hostile, for scale: the most one step may cost the others within its limits, a core
    // until its wall-clock limit ends it (2 s by default).
    name: 'reference: a step that spends its whole wall-clock limit (for (;;) {})',
    send: (origin) =>
      post(origin, {
        model: 'm',
        store: false,
        tools: [PROGRAMS],
        input: inline('for (;;) {}'),
      }),
  },
];

// ---- The server --------------------------------------------------------------------------------

interface Server {
  readonly origin: string;
  readonly child: ChildProcess;
  ask(op: 'reset' | 'read'): Promise<{ p50Ms: number; maxMs: number }>;
}

async function startServer(): Promise<Server> {
  const child = fork(fileURLToPath(new URL('./hostile-server.ts', import.meta.url)), [], {
    execArgv: ['--no-node-snapshot', '--import', 'tsx'],
    env: { PATH: process.env.PATH ?? '', BENCH_SERVER_ENV: JSON.stringify(SERVER_ENV) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const [first] = (await once(child, 'message')) as [{ port: number }];
  const ask = async (op: 'reset' | 'read'): Promise<{ p50Ms: number; maxMs: number }> => {
    const reply = once(child, 'message');
    child.send({ op });
    return ((await reply) as [{ p50Ms: number; maxMs: number }])[0];
  };
  return { origin: `http://127.0.0.1:${first.port}`, child, ask };
}

// ---- One phase ---------------------------------------------------------------------------------

interface PhaseResult {
  readonly name: string;
  readonly honest: Tally;
  readonly seconds: number;
  readonly lag: { p50Ms: number; maxMs: number };
  readonly hostile: Map<string, number>;
}

/** Several windows as one: conversations, seconds and hostile outcomes summed, the worst p50 and max delay. */
function merged(windows: readonly PhaseResult[]): PhaseResult {
  const honest = new Tally();
  const hostile = new Map<string, number>();
  for (const window of windows) {
    honest.merge(window.honest);
    for (const [label, count] of window.hostile) hostile.set(label, (hostile.get(label) ?? 0) + count);
  }
  return {
    name: windows[0]!.name,
    honest,
    seconds: windows.reduce((sum, window) => sum + window.seconds, 0),
    lag: { p50Ms: Math.max(...windows.map((window) => window.lag.p50Ms)), maxMs: Math.max(...windows.map((window) => window.lag.maxMs)) },
    hostile,
  };
}

async function phase(server: Server, name: string, hostile: HostileClass | undefined, seconds: number): Promise<PhaseResult> {
  progress(`${name} (${seconds} s)`);
  await server.ask('reset');
  const startAt = performance.now();
  const window = { startAt, endAt: startAt + seconds * 1000 };
  const outcomes = new Map<string, number>();
  const attacker = (async () => {
    if (!hostile) return;
    for (let n = 0; performance.now() < window.endAt; n++) {
      const label = await hostile.send(server.origin, n).catch((error: Error) => `transport error ${error.message}`);
      outcomes.set(label, (outcomes.get(label) ?? 0) + 1);
      await sleep(INTERVAL_MS);
    }
  })();
  const tallies = await Promise.all(
    Array.from({ length: CLIENTS }, () => virtualClient({ origin: server.origin, timeoutMs: 60_000, maxAttempts: 60 }, window)),
  );
  const lag = await server.ask('read');
  await attacker;
  const honest = new Tally();
  for (const tally of tallies) honest.merge(tally);
  return { name, honest, seconds, lag, hostile: outcomes };
}

// ---- Main --------------------------------------------------------------------------------------

const server = await startServer();
/** Each class beside the baselines interleaved with it (see the top of this file). */
const results: { baseline: PhaseResult; hostile: PhaseResult }[] = [];
/** The bodies part (bench/hostile-bodies.ts), with no honest traffic: `BENCH_HOSTILE_ONLY=bodies` runs it alone. */
let bodies: BodyResult[] = [];
try {
  if (!ONLY || 'bodies'.includes(ONLY)) bodies = await measureBodies(server, progress);
  await phase(server, 'warm-up', undefined, WARMUP_SECONDS);
  for (const hostile of HOSTILE.filter((candidate) => !ONLY || candidate.name.toLowerCase().includes(ONLY))) {
    const baselines: PhaseResult[] = [];
    const beside: PhaseResult[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      baselines.push(await phase(server, `baseline, round ${round} of ${ROUNDS}: ${hostile.name}`, undefined, SECONDS));
      beside.push(await phase(server, `round ${round} of ${ROUNDS}: ${hostile.name}`, hostile, SECONDS));
      // Let a killed worker's replacement settle, so that its start is not charged to the next baseline.
      await sleep(1_000);
    }
    results.push({ baseline: merged(baselines), hostile: { ...merged(beside), name: hostile.name } });
  }
} finally {
  server.child.disconnect();
  await once(server.child, 'exit');
}

const rate = (result: PhaseResult): number => result.honest.conversations / result.seconds;
const rows = results.map(({ baseline, hostile }) => [
  hostile.name,
  [...hostile.hostile].map(([label, count]) => `${count}× ${label}`).join(', ') || '-',
  rate(baseline).toFixed(1),
  rate(hostile).toFixed(1),
  `${(rate(hostile) / rate(baseline)).toFixed(2)}×`,
  String(hostile.honest.otherTotal),
  `${baseline.lag.p50Ms.toFixed(1)} / ${baseline.lag.maxMs.toFixed(1)}`,
  hostile.lag.p50Ms.toFixed(1),
  hostile.lag.maxMs.toFixed(1),
]);
process.stdout.write(
  [
    '# bench:hostile',
    '',
    ...describeEnvironment(),
    `${CLIENTS} honest clients (the seed conversation, store: false), ${WORKERS} workers; per class ${ROUNDS} rounds of a ${SECONDS} s baseline window and a ${SECONDS} s window beside it (BENCH_HOSTILE_ROUNDS, BENCH_HOSTILE_SECONDS); one hostile client sending its class one request at a time, ${INTERVAL_MS} ms apart (BENCH_HOSTILE_INTERVAL_MS).`,
    '',
    ...(bodies.length === 0
      ? []
      : [
          'Bodies under the body limit, each sent alone with `/health` asked every 20 ms from another connection (no honest traffic):',
          '',
          formatTable(
            [
              { header: 'body', align: 'left' },
              { header: 'answer', align: 'left' },
              { header: 'time ms', align: 'right' },
              { header: 'worst /health ms', align: 'right' },
              { header: 'loop delay max ms', align: 'right' },
            ],
            bodies.map((body) => [body.name, body.answer, body.ms.toFixed(0), body.worstHealthMs.toFixed(0), body.loopDelayMaxMs.toFixed(0)]),
          ),
          '',
        ]),
    formatTable(
      [
        { header: 'hostile class', align: 'left' },
        { header: 'hostile requests got', align: 'left' },
        { header: 'baseline conv/s', align: 'right' },
        { header: 'beside it conv/s', align: 'right' },
        { header: 'ratio', align: 'right' },
        { header: 'honest lost', align: 'right' },
        { header: 'baseline delay p50 / max ms', align: 'right' },
        { header: 'delay p50 ms', align: 'right' },
        { header: 'delay max ms', align: 'right' },
      ],
      rows,
    ),
    '',
  ].join('\n'),
);
const phases = results.flatMap(({ baseline, hostile }) => [baseline, hostile]);
const lostAny = phases.some((result) => result.honest.otherTotal > 0);
for (const result of phases) for (const example of result.honest.examples) process.stderr.write(`${result.name}: ${example}\n`);
process.exitCode = lostAny ? 1 : 0;
