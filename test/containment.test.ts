import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CANARY,
  finishPausedCanary,
  hostMarkersIn,
  intrinsicChanges,
  runConversation,
  snapshotIntrinsics,
  spawnContainmentServer,
  startContainmentServer,
  type ContainmentServer,
  type Conversation,
  type ConversationOptions,
} from './support/containment.ts';
import {
  CONTAINMENT_LIMITS,
  endsOnMemory,
  endsOnWallClock,
  HOSTILE_PROGRAMS,
  MEMORY_BOUND_LIMITS,
  UNHURRIED_LIMITS,
  NORMAL_PROGRAM,
  NORMAL_PROGRAM_RESULT,
  type HostileProgram,
} from './support/hostile-programs.ts';

/**
 * Containment: hostile programs of our own (test/support/hostile-programs.ts), run through the
 * real SDK against a server holding a canary secret in its environment and memory. Each ends
 * with its exact outcome, leaks no host value, and leaves the server able to run the next
 * program; in process, the host's built-ins stay as they were. Programs known to take down
 * the process that runs their isolate run last, each against a server of its own.
 */

const CONTAINED = HOSTILE_PROGRAMS.filter((program) => program.harm === undefined);
/**
 * The limits a program runs with (each describe block has a server of each): memory bombs get
 * time limits out of their reach, and so does the wall clock for programs that must end
 * otherwise (on a loaded machine a light step can take 300 ms of wall time).
 */
const limitsOf = (program: HostileProgram) => (endsOnMemory(program) ? MEMORY_BOUND_LIMITS : endsOnWallClock(program) ? CONTAINMENT_LIMITS : UNHURRIED_LIMITS);
const BEYOND_THE_ISOLATE = HOSTILE_PROGRAMS.filter((program) => program.harm !== undefined);

/** The program's outcome, in the shape of `HostileProgram['outcome']`. */
function outcomeOf(conversation: Conversation, expected: HostileProgram['outcome']): unknown {
  const output = conversation.output;
  if (output === undefined) return { status: 'no program_output' };
  if (output.status !== 'incomplete') return { status: output.status, result: output.result };
  const error = (JSON.parse(output.result) as { error: { code: string; message: string } }).error;
  return 'message' in expected && expected.message !== undefined
    ? { status: 'incomplete', code: error.code, message: error.message }
    : { status: 'incomplete', code: error.code };
}

/** Runs one hostile program and the normal program after it, asserting everything but the built-ins. */
async function expectContained(server: ContainmentServer, program: HostileProgram, options: ConversationOptions = {}): Promise<void> {
  const hostile = await runConversation(server.client, program.code, options);
  expect(outcomeOf(hostile, program.outcome)).toEqual(program.outcome);
  if (program.calls !== undefined) expect(hostile.calls).toEqual(program.calls);
  // A function tool's arguments are a JSON object, whatever the program did to its values.
  const notObjects = hostile.calls.filter((call) => {
    const value: unknown = JSON.parse(call);
    return value === null || typeof value !== 'object' || Array.isArray(value);
  });
  expect(notObjects).toEqual([]);
  // The program ended inside the response, which went on to the final message.
  const last = hostile.responses.at(-1)!;
  expect(last.status).toBe('completed');
  expect(last.output.at(-1)?.type).toBe('message');
  // Nothing of the host reached the program's output, its error message or the response.
  expect(hostMarkersIn(JSON.stringify(hostile.responses))).toEqual([]);

  const next = await runConversation(server.client, NORMAL_PROGRAM, options);
  expect(outcomeOf(next, { status: 'completed', result: NORMAL_PROGRAM_RESULT })).toEqual({ status: 'completed', result: NORMAL_PROGRAM_RESULT });
  expect(next.calls).toEqual(['{"list":[1,2],"s":"é"}']);
  expect(await server.alive()).toBe(true);
}

describe('hostile programs against the server in a child process', () => {
  let server: ContainmentServer;
  let memoryBound: ContainmentServer;
  let unhurried: ContainmentServer;
  beforeAll(async () => {
    [server, memoryBound, unhurried] = await Promise.all([
      spawnContainmentServer(),
      spawnContainmentServer(MEMORY_BOUND_LIMITS),
      spawnContainmentServer(UNHURRIED_LIMITS),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), memoryBound?.close(), unhurried?.close()]);
  });
  const serverOf = (program: HostileProgram) => (endsOnMemory(program) ? memoryBound : endsOnWallClock(program) ? server : unhurried);

  it('finds the canary where it was planted (the leak check itself works)', () => {
    expect(hostMarkersIn(JSON.stringify(server.pausedCanary))).toEqual([CANARY]);
  });

  it.each(CONTAINED.map((program) => [program.name, program] as const))('%s', async (_, program) => {
    await expectContained(serverOf(program), program);
  });

  it('still holds the paused program with the canary in its heap, untouched, and never logged the canary', async () => {
    expect(await finishPausedCanary(server)).toBe(CANARY);
    expect(server.log()).toContain(' · API at ');
    expect(server.log()).not.toContain(CANARY);
  });
});

describe('hostile programs against the server in this process: the host built-ins stay as they were', () => {
  let server: ContainmentServer;
  let memoryBound: ContainmentServer;
  let unhurried: ContainmentServer;
  beforeAll(async () => {
    [server, memoryBound, unhurried] = await Promise.all([
      startContainmentServer(),
      startContainmentServer(MEMORY_BOUND_LIMITS),
      startContainmentServer(UNHURRIED_LIMITS),
    ]);
    // Node defines some globals lazily on first use: let the servers use what they use first.
    for (const each of [server, memoryBound, unhurried]) await runConversation(each.client, NORMAL_PROGRAM);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), memoryBound?.close(), unhurried?.close()]);
  });
  const serverOf = (program: HostileProgram) => (endsOnMemory(program) ? memoryBound : endsOnWallClock(program) ? server : unhurried);

  it('notices a changed built-in (the check itself works)', () => {
    const before = snapshotIntrinsics();
    const original = Array.prototype.at;
    Array.prototype.at = function at() {
      return 'changed';
    };
    try {
      expect(intrinsicChanges(before, snapshotIntrinsics())).toEqual(['Array.prototype.at changed']);
    } finally {
      Array.prototype.at = original;
    }
    expect(intrinsicChanges(before, snapshotIntrinsics())).toEqual([]);
  });

  it.each(CONTAINED.map((program) => [program.name, program] as const))('%s', async (_, program) => {
    const before = snapshotIntrinsics();
    await expectContained(serverOf(program), program);
    expect(intrinsicChanges(before, snapshotIntrinsics())).toEqual([]);
    expect(process.env.CANARY_SECRET).toBe(CANARY);
  });

  it('still holds the paused program with the canary in its heap, untouched', async () => {
    expect(await finishPausedCanary(server)).toBe(CANARY);
  });
});

/**
 * Programs the crash hunt found to get past isolated-vm's limits: some abort the process that
 * runs their isolate, whatever its memory limit; some keep the isolate's thread busy past every
 * timeout, so their step never returns; some take memory the isolate's limit does not count.
 * Isolates in the server's own process lose the server (or the request) to them; with isolates
 * in supervised workers, a crash must end the program `incomplete` with `runtime_crashed`, a
 * wedge with `wall_time_exceeded` and an escape with `memory_limit_exceeded`, while the server
 * keeps serving and the paused program it held still resumes. Each runs on a server of its own.
 */
// Each spawns a server of its own and may wait out a step's ceiling (MEMORY_BOUND_LIMITS: 20 s):
// on a loaded machine, far more than the default 30 s a test gets.
describe('beyond the isolate: the server survives programs that crash, wedge or outgrow the process running them', { timeout: 180_000 }, () => {
  it.each(BEYOND_THE_ISOLATE.map((program) => [program.name, program] as const))('%s', async (_, program) => {
    const limits = limitsOf(program);
    const server = await spawnContainmentServer(limits);
    try {
      // Far above the step's wall-clock ceiling: a server that has not answered by then never will.
      await expectContained(server, program, { requestTimeoutMs: Math.max(20 * CONTAINMENT_LIMITS.stepWallTimeMs, limits.stepWallTimeMs + 5_000) });
      expect(await finishPausedCanary(server)).toBe(CANARY);
    } finally {
      await server.close();
    }
  });
});
