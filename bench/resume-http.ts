import { randomUUID } from 'node:crypto';
import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { Response, ResponseInputItem } from 'openai/resources/responses/responses';
import { inlineProgram } from '../test/support/programs.ts';
import { metric, startServer, type RunningServer } from '../test/support/server.ts';
import { benchServerConfig, expectedArguments, LOOP_PROGRAM, LOOP_TOOLS, loopLimits, toolOutput, TOOL, type ResumeSchedule } from './resume-program.ts';
import type { PathSamples } from './resume-runtime.ts';
import { measureStaged } from './staged-measure.ts';

type Progress = (message: string) => void;

const WARM = 'ptc_program_resumes_total{path="warm"}';
const REPLAY = 'ptc_program_resumes_total{path="replay"}';

function request(client: OpenAI, input: ResponseInputItem[]): Promise<Response> {
  return client.responses.create({ model: 'ptc-emulator', store: false, input, tools: LOOP_TOOLS });
}

/** The loop's items as a `store: false` client holds them, and each call's id in order. */
interface LoopItems {
  /** user message, program, then function_call / function_call_output pairs for calls 0, 1, 2, … */
  readonly items: readonly ResponseInputItem[];
  readonly callIds: readonly string[];
}

/** Items through the output of call `lastCall`: a request that answers calls 0..lastCall. */
function itemsAnswering(loop: LoopItems, lastCall: number): ResponseInputItem[] {
  return loop.items.slice(0, 2 + 2 * (lastCall + 1));
}

/** Fails unless the response is the program paused on exactly the call `seq` the loop recorded. */
function expectNextCall(label: string, response: Response, loop: LoopItems | undefined, seq: number): OpenAI.Responses.ResponseFunctionToolCall {
  const calls = response.output.filter((item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === 'function_call');
  const call = calls.length === 1 ? calls[0] : undefined;
  const expectedId = loop?.callIds[seq];
  if (!call || call.name !== TOOL || call.arguments !== expectedArguments(seq) || (expectedId !== undefined && call.call_id !== expectedId)) {
    throw new Error(`${label}: expected one function_call ${TOOL}(${expectedArguments(seq)}), got ${JSON.stringify(response.output)}`);
  }
  return call;
}

/**
 * Drives the loop program live against `server` as a `store: false` client does (resending every
 * item each request) until it has made call `lastCall`, answering each call with toolOutput.
 */
async function driveLoop(server: RunningServer, lastCall: number): Promise<LoopItems> {
  const items: ResponseInputItem[] = [{ role: 'user', content: inlineProgram(LOOP_PROGRAM) }];
  const callIds: string[] = [];
  for (let seq = 0; seq <= lastCall; seq++) {
    const response = await request(server.client, items);
    if (seq === 0 && response.output[0]?.type !== 'program')
      throw new Error(`driving the loop: expected a program item first, got ${JSON.stringify(response.output)}`);
    const call = expectNextCall('driving the loop', response, undefined, seq);
    items.push(...toResponseInputItems(response.output));
    items.push({ type: 'function_call_output', call_id: call.call_id, output: toolOutput(seq), caller: call.caller ?? null });
    callIds.push(call.call_id);
  }
  return { items, callIds };
}

/** A resume request's path, read from the server's own counters around it. */
async function expectPath(label: string, server: RunningServer, path: 'warm' | 'replay', before: { warm: number; replay: number }): Promise<void> {
  const after = await counters(server);
  const expected = path === 'warm' ? { warm: before.warm + 1, replay: before.replay } : { warm: before.warm, replay: before.replay + 1 };
  if (after.warm !== expected.warm || after.replay !== expected.replay) {
    throw new Error(`${label}: expected one ${path} resume; counters went from ${JSON.stringify(before)} to ${JSON.stringify(after)}`);
  }
}

async function counters(server: RunningServer): Promise<{ warm: number; replay: number }> {
  return { warm: await metric(server, WARM), replay: await metric(server, REPLAY) };
}

/**
 * Table 1 over HTTP: the same resume as a `store: false` request resending every item (the real
 * SDK, a real listening server). `warm` runs on a server with the default cache, where an untimed
 * request answering calls 0..N-1 first leaves the program paused on call N; `cold` has
 * `maxPausedPrograms: 0`, so every resume replays. Both share one fingerprint key, so the items,
 * driven once live on `warm`, are valid on both; each timed response must be call N+1 with the
 * call id the live run gave it, and the server's counters must show the expected path.
 */
export async function measureHttpResume(schedule: readonly ResumeSchedule[], progress: Progress): Promise<Map<number, PathSamples>> {
  const maxEarlierCalls = Math.max(...schedule.map((row) => row.earlierCalls));
  const fingerprintKey = randomUUID();
  const limits = loopLimits(maxEarlierCalls);
  const warmServer = await startServer({ logger: false, config: benchServerConfig({ fingerprintKey, limits }) });
  const coldServer = await startServer({ logger: false, config: benchServerConfig({ fingerprintKey, limits, maxPausedPrograms: 0 }) });
  const results = new Map<number, PathSamples>();
  try {
    progress(`HTTP: driving the loop live to ${maxEarlierCalls + 2} calls`);
    const loop = await driveLoop(warmServer, maxEarlierCalls + 1);
    const driven = await counters(warmServer);
    if (driven.replay !== 0) throw new Error(`HTTP: the live loop replayed ${driven.replay} times; every resume should have been warm`);

    for (const { earlierCalls: n, warmup, iterations } of schedule) {
      const setupInput = itemsAnswering(loop, n - 1);
      const input = itemsAnswering(loop, n);

      progress(`HTTP: warm resume, N=${n} (${input.length} items)`);
      const warm = await measureStaged(
        async () => {
          // The cache holds the program further on (or nowhere): this request replays it to call N.
          expectNextCall(`HTTP warm set-up N=${n}`, await request(warmServer.client, setupInput), loop, n);
          const before = await counters(warmServer);
          return {
            timed: () => request(warmServer.client, input),
            check: async (response) => {
              expectNextCall(`HTTP warm N=${n}`, response, loop, n + 1);
              await expectPath(`HTTP warm N=${n}`, warmServer, 'warm', before);
            },
          };
        },
        { warmup, iterations },
      );

      progress(`HTTP: replay resume, N=${n} (${input.length} items)`);
      const replay = await measureStaged(
        async () => {
          const before = await counters(coldServer);
          return {
            timed: () => request(coldServer.client, input),
            check: async (response) => {
              expectNextCall(`HTTP replay N=${n}`, response, loop, n + 1);
              await expectPath(`HTTP replay N=${n}`, coldServer, 'replay', before);
            },
          };
        },
        { warmup, iterations },
      );

      results.set(n, { warm, replay });
    }
    return results;
  } finally {
    await warmServer.close();
    await coldServer.close();
  }
}
