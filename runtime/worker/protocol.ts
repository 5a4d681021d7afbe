import { z } from 'zod';
import { PROGRAM_ERRORS, type ProgramErrorCode } from '../../schemas/error-codes.ts';
import { LIMIT_DEFINITIONS, type LimitName } from '../limits.ts';
import { ProgramTool } from '../program-tool.ts';

/**
 * The messages between the server and its worker processes, over Node's IPC channel. Both
 * sides check every message against these schemas: a worker runs hostile code, and a message
 * of another version is refused, not misread. Bump PROTOCOL_VERSION on any change.
 */
export const PROTOCOL_VERSION = 4;
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
  z.strictObject({ v, kind: z.literal('dispose'), programId: z.string() }),
  z.strictObject({ v, kind: z.literal('ping'), id }),
]);
export type HostMessage = z.infer<typeof HostMessage>;

const Stats = z.strictObject({ cpuTimeMs: z.number(), steps: z.number().int(), calls: z.number().int() });
const ProgramErrorCodeSchema = z.custom<ProgramErrorCode>((value) => typeof value === 'string' && Object.hasOwn(PROGRAM_ERRORS, value));
export const WireEvent = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('paused'),
    calls: z.array(z.strictObject({ seq: z.number().int().min(0), tool: z.string(), argumentsJson: z.string() })),
    stats: Stats,
  }),
  z.strictObject({ type: z.literal('completed'), result: z.string(), stats: Stats }),
  z.strictObject({
    type: z.literal('incomplete'),
    // `cause` crosses as text: only the server's log reads it.
    error: z.strictObject({ code: ProgramErrorCodeSchema, message: z.string(), cause: z.string().optional() }),
    stats: Stats,
  }),
]);

export const WorkerMessage = z.discriminatedUnion('kind', [
  z.strictObject({ v, kind: z.literal('ready'), pid: z.number().int() }),
  z.strictObject({ v, kind: z.literal('step'), id, event: WireEvent, path: z.enum(['warm', 'replay']).optional() }),
  z.strictObject({ v, kind: z.literal('busy'), id, programId: z.string() }),
  z.strictObject({ v, kind: z.literal('failed'), id, message: z.string() }),
  z.strictObject({
    v,
    kind: z.literal('pong'),
    id,
    // Steps running past their wall-clock limit, by their isolate's own running time.
    overrunning: z.array(z.strictObject({ programId: z.string(), overMs: z.number().min(0) })),
    stats: z.strictObject({
      started: z.number().int(),
      resumes: z.strictObject({ warm: z.number().int(), replay: z.number().int() }),
      evictions: z.strictObject({ ttl: z.number().int(), count: z.number().int(), memory: z.number().int() }),
      paused: z.number().int(),
      pausedHeapBytes: z.number(),
    }),
  }),
]);
export type WorkerMessage = z.infer<typeof WorkerMessage>;
