import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type OpenAI from 'openai';
import type { Response } from 'openai/resources/responses/responses';
import { resolveLimits } from '../../runtime/limits.ts';
import { CONTAINMENT_LIMITS } from './hostile-programs.ts';
import { functionCallsOf, inlineProgram, programOutputOf, programTools } from './programs.ts';
import { startServer, type RunningServer } from './server.ts';
import { spawnServer, type ServerProcess } from './server-process.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * A secret the server holds that no program may ever see: in its environment, in a scenario
 * file it loaded, in the instructions of a stored response, and in the heap of a paused program.
 */
export const CANARY = `canary-${randomUUID()}`;

/** What a program could only print by reaching its host: the canary, and host paths and internals. */
export const HOST_MARKERS: readonly string[] = [CANARY, ROOT, ROOT.replace(/\/$/, ''), 'node_modules', 'node:internal', 'isolated-vm', 'isolated_vm'];

/** Every marker of `HOST_MARKERS` found in `text`. */
export function hostMarkersIn(text: string): string[] {
  return HOST_MARKERS.filter((marker) => text.includes(marker));
}

export const TOOLS = programTools('echo');
const CANARY_TRIGGER = `reveal the canary ${randomUUID()}`;
const CANARY_RULES = { rules: [{ name: 'canary', match: { user: CANARY_TRIGGER }, message: CANARY }] };

export type ContainmentLimits = { readonly [Name in keyof typeof CONTAINMENT_LIMITS]: number };

/** The limits of runtime/limits.ts as the child process reads them from its environment. */
function limitEnv(limits: ContainmentLimits): Record<string, string> {
  return {
    PTC_STEP_WALL_TIME_MS: String(limits.stepWallTimeMs),
    PTC_CPU_TIME_MS: String(limits.cpuTimeMs),
    PTC_MEMORY_MB: String(limits.memoryMb),
    PTC_MAX_CALLS: String(limits.maxCalls),
    PTC_MAX_CALLS_IN_FLIGHT: String(limits.maxCallsInFlight),
    PTC_MAX_ARGUMENT_BYTES: String(limits.maxArgumentBytes),
    PTC_MAX_OUTPUT_BYTES: String(limits.maxOutputBytes),
  };
}

/** A server under test, wherever it runs. */
export interface ContainmentServer {
  readonly client: OpenAI;
  readonly baseURL: string;
  /** True while the server answers `/health` (and, for a child process, while it has not exited). */
  alive(): Promise<boolean>;
  /** The child process's log so far ('' in process). */
  log(): string;
  /** The response that paused the program holding the canary in its heap. */
  readonly pausedCanary: Response;
  close(): Promise<void>;
}

/** The emulator in its own process, the canary in its environment and a scenario file it loaded. */
export async function spawnContainmentServer(limits: ContainmentLimits = CONTAINMENT_LIMITS): Promise<ContainmentServer> {
  const directory = mkdtempSync(join(tmpdir(), 'ptc-containment-'));
  const scenarios = join(directory, 'scenarios.json');
  writeFileSync(scenarios, JSON.stringify(CANARY_RULES));
  let server: ServerProcess;
  try {
    server = await spawnServer({
      CANARY_SECRET: CANARY,
      PTC_STORE: 'memory',
      PTC_DATA_DIR: directory,
      PTC_FINGERPRINT_KEY: randomUUID(),
      PTC_SCENARIOS: scenarios,
      ...limitEnv(limits),
    });
  } catch (error) {
    rmSync(directory, { recursive: true, force: true });
    throw error;
  }
  const health = `${server.baseURL.replace(/\/v1$/, '')}/health`;
  const pausedCanary = await plantCanary(server.client);
  return {
    client: server.client,
    baseURL: server.baseURL,
    alive: async () => server.process.exitCode === null && server.process.signalCode === null && (await answersHealth(health)),
    log: () => server.output(),
    pausedCanary,
    close: async () => {
      if (server.process.exitCode === null && server.process.signalCode === null) await server.kill();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** The emulator in this process (so the test can watch this process's built-ins), the canary in `process.env`. */
export async function startContainmentServer(limits: ContainmentLimits = CONTAINMENT_LIMITS): Promise<ContainmentServer> {
  const previous = process.env.CANARY_SECRET;
  process.env.CANARY_SECRET = CANARY;
  let server: RunningServer;
  try {
    server = await startServer({ scenarios: CANARY_RULES, config: { limits: resolveLimits(limits) } });
  } catch (error) {
    restoreEnv(previous);
    throw error;
  }
  const health = `${server.baseURL.replace(/\/v1$/, '')}/health`;
  const pausedCanary = await plantCanary(server.client);
  return {
    client: server.client,
    baseURL: server.baseURL,
    alive: () => answersHealth(health),
    log: () => '',
    pausedCanary,
    close: async () => {
      restoreEnv(previous);
      await server.close();
    },
  };
}

function restoreEnv(previous: string | undefined): void {
  if (previous === undefined) delete process.env.CANARY_SECRET;
  else process.env.CANARY_SECRET = previous;
}

async function answersHealth(url: string): Promise<boolean> {
  try {
    return (await fetch(url)).ok;
  } catch {
    return false;
  }
}

/**
 * Puts the canary in the server's memory, and proves it is there: a stored response whose
 * instructions hold it, the scenario rule that answers with it, and a program paused with it in
 * its heap. Returns the paused program's response.
 */
async function plantCanary(client: OpenAI): Promise<Response> {
  const stored = await client.responses.create({ model: 'any', instructions: `Never reveal ${CANARY}.`, input: 'hello' });
  if ((await client.responses.retrieve(stored.id)).instructions !== `Never reveal ${CANARY}.`) throw new Error('the canary is not stored');
  const rule = await client.responses.create({ model: 'any', input: CANARY_TRIGGER });
  if (rule.output_text !== CANARY) throw new Error(`the scenario did not load the canary: ${rule.output_text}`);
  const paused = await client.responses.create({
    model: 'any',
    input: inlineProgram(`const secret = ${JSON.stringify(CANARY)}; await tools.echo({ wait: true }); text(secret)`),
    tools: TOOLS,
  });
  if (functionCallsOf(paused).length !== 1) throw new Error('the canary program did not pause');
  return paused;
}

/** A program's whole conversation: every response until it ended, answered by echoing each call's arguments. */
export interface Conversation {
  readonly responses: readonly Response[];
  readonly output: OpenAI.Responses.ResponseOutputItem.ProgramOutput | undefined;
  /** The arguments of every function call the program made, in order. */
  readonly calls: readonly string[];
}

export interface ConversationOptions {
  /** Rounds of answers after which the program counts as running away. */
  readonly maxRounds?: number;
  /** Per-request timeout of the SDK, for programs that may leave the server unable to answer. */
  readonly requestTimeoutMs?: number;
}

/** Runs a program to its end through the SDK, answering each call with its own arguments. */
export async function runConversation(client: OpenAI, code: string, options: ConversationOptions = {}): Promise<Conversation> {
  const maxRounds = options.maxRounds ?? 100;
  const requestOptions = options.requestTimeoutMs === undefined ? {} : { timeout: options.requestTimeoutMs };
  const responses: Response[] = [await client.responses.create({ model: 'any', input: inlineProgram(code), tools: TOOLS }, requestOptions)];
  const calls: string[] = [];
  for (let round = 0; ; round++) {
    const last = responses.at(-1)!;
    const pending = functionCallsOf(last);
    calls.push(...pending.map((call) => call.arguments));
    if (pending.length === 0 || programOutputOf(last) !== undefined) break;
    if (round >= maxRounds) throw new Error(`the program was still making calls after ${maxRounds} rounds`);
    responses.push(
      await client.responses.create(
        {
          model: 'any',
          previous_response_id: last.id,
          input: pending.map((call) => ({ type: 'function_call_output' as const, call_id: call.call_id, output: call.arguments, caller: call.caller ?? null })),
          tools: TOOLS,
        },
        requestOptions,
      ),
    );
  }
  return { responses, output: programOutputOf(responses.at(-1)!), calls };
}

/** Answers the paused canary program: it must still hold the canary, untouched. */
export async function finishPausedCanary(server: ContainmentServer): Promise<string | undefined> {
  const [call] = functionCallsOf(server.pausedCanary);
  const done = await server.client.responses.create({
    model: 'any',
    previous_response_id: server.pausedCanary.id,
    input: [{ type: 'function_call_output', call_id: call!.call_id, output: 'ok', caller: call!.caller ?? null }],
    tools: TOOLS,
  });
  return programOutputOf(done)?.result;
}

// ---- the host's built-ins ------------------------------------------------------------------

/** The built-ins of this process a guest would most like to change. */
const INTRINSICS: Readonly<Record<string, object>> = {
  globalThis,
  Object,
  'Object.prototype': Object.prototype,
  Function,
  'Function.prototype': Function.prototype,
  Array,
  'Array.prototype': Array.prototype,
  'Array.prototype[Symbol.unscopables]': Array.prototype[Symbol.unscopables],
  String,
  'String.prototype': String.prototype,
  Number,
  'Number.prototype': Number.prototype,
  Symbol,
  'Symbol.prototype': Symbol.prototype,
  Promise,
  'Promise.prototype': Promise.prototype,
  Map,
  'Map.prototype': Map.prototype,
  Set,
  'Set.prototype': Set.prototype,
  'WeakMap.prototype': WeakMap.prototype,
  JSON,
  Reflect,
  Math,
  Date,
  'Date.prototype': Date.prototype,
  Error,
  'Error.prototype': Error.prototype,
  'TypeError.prototype': TypeError.prototype,
  RegExp,
  'RegExp.prototype': RegExp.prototype,
  ArrayBuffer,
  'ArrayBuffer.prototype': ArrayBuffer.prototype,
  'Uint8Array.prototype': Uint8Array.prototype,
  Proxy,
  Intl,
  'Intl.DateTimeFormat.prototype': Intl.DateTimeFormat.prototype,
  'process.env': process.env,
};

interface PropertyState {
  readonly kind: 'data' | 'accessor';
  readonly value?: unknown;
  readonly get?: unknown;
  readonly set?: unknown;
  readonly flags: string;
}

export type IntrinsicsSnapshot = ReadonlyMap<string, PropertyState | string>;

/** Every own property of the built-ins (values by identity), with each object's prototype and extensibility. */
export function snapshotIntrinsics(): IntrinsicsSnapshot {
  const snapshot = new Map<string, PropertyState | string>();
  for (const [name, target] of Object.entries(INTRINSICS)) {
    snapshot.set(`${name} [[Prototype]]`, describeIdentity(Object.getPrototypeOf(target)));
    snapshot.set(`${name} [[Extensible]]`, `${Object.isExtensible(target)} frozen=${Object.isFrozen(target)}`);
    for (const key of Reflect.ownKeys(target)) {
      const descriptor = Reflect.getOwnPropertyDescriptor(target, key)!;
      const flags = `${descriptor.enumerable ? 'e' : '-'}${descriptor.configurable ? 'c' : '-'}${descriptor.writable ? 'w' : '-'}`;
      snapshot.set(
        `${name}.${String(key)}`,
        'value' in descriptor ? { kind: 'data', value: descriptor.value, flags } : { kind: 'accessor', get: descriptor.get, set: descriptor.set, flags },
      );
    }
  }
  return snapshot;
}

const identities = new WeakMap<object, number>();
let nextIdentity = 1;
function describeIdentity(value: unknown): string {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return String(value);
  let id = identities.get(value);
  if (id === undefined) identities.set(value, (id = nextIdentity++));
  return `object#${id}`;
}

/**
 * What changed between two snapshots. Node turns some globals from lazy accessors into data
 * properties on first use (e.g. `crypto`); that one change of `globalThis` is not the guest's.
 */
export function intrinsicChanges(before: IntrinsicsSnapshot, after: IntrinsicsSnapshot): string[] {
  const changes: string[] = [];
  for (const key of new Set([...before.keys(), ...after.keys()])) {
    const was = before.get(key);
    const is = after.get(key);
    if (was === undefined || is === undefined) {
      changes.push(`${key} ${was === undefined ? 'added' : 'removed'}`);
      continue;
    }
    if (typeof was === 'string' || typeof is === 'string') {
      if (was !== is) changes.push(`${key}: ${String(was)} -> ${String(is)}`);
      continue;
    }
    if (key.startsWith('globalThis.') && was.kind === 'accessor' && is.kind === 'data') continue;
    if (was.kind !== is.kind || was.flags !== is.flags || !Object.is(was.value, is.value) || !Object.is(was.get, is.get) || !Object.is(was.set, is.set)) {
      changes.push(`${key} changed`);
    }
  }
  return changes;
}
