import { z } from 'zod';
import { PROGRAM_ERRORS, type ProgramErrorCode } from '../schemas/error-codes.ts';

/**
 * The strings `dispatch('poll')` returns from inside the isolate. The host parses and checks
 * them like any untrusted input: the isolate runs code written by a model.
 */
const ProgramErrorCodeSchema = z.custom<ProgramErrorCode>((value) => typeof value === 'string' && Object.hasOwn(PROGRAM_ERRORS, value));

export const PollResult = z.union([
  z.strictObject({
    state: z.literal('running'),
    inFlight: z.number().int().min(0),
    calls: z.array(z.strictObject({ seq: z.number().int().min(0), tool: z.string(), args: z.string() })),
  }),
  z.strictObject({ state: z.literal('settled'), status: z.literal('completed'), result: z.string() }),
  z.strictObject({ state: z.literal('settled'), status: z.literal('failed'), code: ProgramErrorCodeSchema, message: z.string() }),
  // A replay stopped, undelivered, on a batch holding an answer the host withheld (too large).
  z.strictObject({ state: z.literal('withheld') }),
]);
export type PollResult = z.infer<typeof PollResult>;

/** The checker context's reply when a call of the batch breaks its tool's strict parameters ('' when none does). */
export const CheckReply = z.strictObject({ index: z.number().int().nonnegative(), violation: z.string() });

/** The configuration `installSandbox` receives. */
export interface SandboxConfig {
  readonly seed: number;
  readonly clock: number;
  readonly tools: readonly {
    /** How calls name it: `name`, or `namespace.name`. */
    readonly id: string;
    /** The keys it is reachable by: on `tools`, or on its namespace's object. */
    readonly keys: readonly string[];
    /** For a namespace's tool: the keys of the namespace on `tools`. */
    readonly namespaceKeys?: readonly string[];
    /** True for a custom tool: the call takes one string, sent as it is. */
    readonly text: boolean;
    readonly parseJson: boolean;
    /** Arguments set to `null` when absent, so the call sends every field its item carries. */
    readonly nullDefaults?: readonly string[];
    /** Strict parameters: a standalone ajv validator (CommonJS module source) run on the arguments before the call leaves. */
    readonly checkInput?: string;
    /** output_schema: a standalone ajv validator run on the parsed output before the program receives it. */
    readonly checkOutput?: string;
  }[];
  /** The modules validators may `require`, by name, as CommonJS sources (see runtime/tool-schemas.ts). */
  readonly schemaModules?: Readonly<Record<string, string>>;
  readonly limits: {
    readonly maxCalls: number;
    readonly maxCallsInFlight: number;
    readonly maxArgumentBytes: number;
    readonly maxOutputBytes: number;
    readonly maxResumes: number;
  };
}
