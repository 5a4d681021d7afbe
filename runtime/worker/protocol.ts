import { z } from 'zod';
import { isProgramErrorCode, type ProgramErrorCode } from '../../schemas/error-codes.ts';
import { LIMIT_DEFINITIONS, type LimitName } from '../limits.ts';
import { ProgramTool } from '../program-tool.ts';
import { RUNAWAY_LIMITS } from '../errors.ts';

/**
 * The messages between the server and its worker processes, over Node's IPC channel with
 * `advanced` serialization (V8's structured clone, not JSON): a tool's output, itself JSON text,
 * crosses as the string it is, neither escaped into a message's JSON nor parsed out of it again
 * (a 165 KB output took 1.2 ms a round trip as JSON here, 0.21 ms so). The messages of every
 * step keep their many calls and answers in arrays of strings side by side, not an object each
 * (wire-codec.ts). Both sides check every message against these schemas: a worker runs hostile
 * code, and a message of another version is refused, not misread. Bump PROTOCOL_VERSION on any
 * change.
 */
export const PROTOCOL_VERSION = 9;
const v = z.literal(PROTOCOL_VERSION);
const id = z.number().int().min(0);

const Limits = z.strictObject(
  Object.fromEntries(Object.keys(LIMIT_DEFINITIONS).map((name) => [name, z.number().int().positive()])) as Record<LimitName, z.ZodNumber>,
);
const Spec = z.strictObject({
  code: z.string(),
  tools: z.array(ProgramTool),
  seed: z.number().int(),
  clock: z.number(),
  limits: Limits,
});
const Recorded = z.array(z.strictObject({ tool: z.string(), argumentsJson: z.string(), output: z.string(), error: z.string().optional() }));

export const HostMessage = z.discriminatedUnion('kind', [
  z.strictObject({ v, kind: z.literal('start'), id, programId: z.string(), spec: Spec }),
  z.strictObject({ v, kind: z.literal('resume'), id, programId: z.string(), spec: Spec, recorded: Recorded }),
  // A warm resume where the host knows the program paused: only the answers of its pending
  // batch, and a digest of the answers it received before (answersDigest), not the whole record.
  // The batch is the program's last calls: `answers[i]` answers call `calls - answers.length + i`,
  // with its output, or its error when `i` is in `failed` (see wire-codec.ts).
  z
    .strictObject({
      v,
      kind: z.literal('continue'),
      id,
      programId: z.string(),
      calls: z.number().int().min(0),
      answeredDigest: z.string(),
      answers: z.array(z.string()),
      failed: z.array(z.number().int().min(0)),
    })
    .refine(({ calls, answers, failed }) => answers.length <= calls && failed.every((index) => index < answers.length), 'answers beyond the calls made'),
  z.strictObject({ v, kind: z.literal('dispose'), programId: z.string() }),
  z.strictObject({ v, kind: z.literal('ping'), id }),
  // Between programs (WorkerPool.ready): make the isolates kept ahead of programs now, and say when they are.
  z.strictObject({ v, kind: z.literal('prepare'), id }),
  // The pids of the workers frozen now (WorkerProcess.frozen), whenever that changes: frozen,
  // they cannot see the server go away, so the others kill them when they do (worker-main.ts).
  z.strictObject({ v, kind: z.literal('frozen_siblings'), pids: z.array(z.number().int()) }),
]);
export type HostMessage = z.infer<typeof HostMessage>;

const Stats = z.strictObject({ cpuTimeMs: z.number(), steps: z.number().int(), calls: z.number().int() });
const count = z.number().int().min(0);
const RuntimeStats = z.strictObject({
  started: count,
  resumes: z.strictObject({ warm: count, replay: count }),
  evictions: z.strictObject({ ttl: count, count, memory: count }),
  paused: count,
  pausedHeapBytes: z.number(),
  warmIsolates: z.strictObject({ ready: count, made: count, taken: count }),
});
const ProgramErrorCodeSchema = z.custom<ProgramErrorCode>(isProgramErrorCode);
export const WireEvent = z.discriminatedUnion('type', [
  // The calls of the batch side by side: call i is `seqs[i]`, of `tools[i]`, with `argumentsJson[i]`.
  z
    .strictObject({
      type: z.literal('paused'),
      seqs: z.array(z.number().int().min(0)),
      tools: z.array(z.string()),
      argumentsJson: z.array(z.string()),
      stats: Stats,
    })
    .refine(({ seqs, tools, argumentsJson }) => tools.length === seqs.length && argumentsJson.length === seqs.length, 'calls of unequal parts'),
  z.strictObject({ type: z.literal('completed'), result: z.string(), stats: Stats }),
  z.strictObject({
    type: z.literal('incomplete'),
    // `cause` crosses as text: only the server's log reads it.
    error: z.strictObject({ code: ProgramErrorCodeSchema, message: z.string(), cause: z.string().optional() }),
    stats: Stats,
  }),
]);
export type WireEvent = z.infer<typeof WireEvent>;

// Steps past a limit without ending: their wall-clock limit by their isolate's own running
// time, or their heap limit, their isolate disposed (see IsolateProgram.runaway).
const Runaways = z.array(z.strictObject({ programId: z.string(), limit: z.enum(RUNAWAY_LIMITS), overMs: z.number().min(0) }));

export const WorkerMessage = z.discriminatedUnion('kind', [
  z.strictObject({ v, kind: z.literal('ready'), pid: z.number().int() }),
  z.strictObject({ v, kind: z.literal('step'), id, event: WireEvent, path: z.enum(['warm', 'replay']).optional() }),
  z.strictObject({ v, kind: z.literal('busy'), id, programId: z.string() }),
  // The answer to a `continue` for a program not paused there (evicted, or at another point):
  // the host sends the whole `resume` instead.
  z.strictObject({ v, kind: z.literal('not_paused'), id }),
  z.strictObject({ v, kind: z.literal('failed'), id, message: z.string() }),
  // Sent unasked between heartbeats, as soon as a runaway appears or passes its grace.
  z.strictObject({ v, kind: z.literal('runaways'), runaways: Runaways }),
  z.strictObject({ v, kind: z.literal('pong'), id, runaways: Runaways, stats: RuntimeStats }),
  // The answer to `prepare`: its isolates are made, and its counters as of then.
  z.strictObject({ v, kind: z.literal('prepared'), id, stats: RuntimeStats }),
]);
export type WorkerMessage = z.infer<typeof WorkerMessage>;
