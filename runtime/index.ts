/** The program engine, usable on its own: no HTTP in here. */
export { IsolateProgram, type ProgramSpec } from './isolate-program.ts';
export { toolId, type ProgramTool } from './program-tool.ts';
export { ProgramRuntime, ProgramBusyError, type ProgramRuntimeOptions, type ProgramRuntimeStats, type ResumePath } from './program-runtime.ts';
export { runProgram, type HostTool, type RunProgramOptions, type RunProgramResult } from './run-program.ts';
export { DEFAULT_LIMITS, LIMIT_DEFINITIONS, resolveLimits, type LimitName, type ProgramLimits } from './limits.ts';
export { failureResult, type ProgramEvent, type ProgramFailure, type ProgramStats, type RecordedCall, type ToolCallOutput, type ToolCallRequest } from './program-events.ts';
export { FingerprintError, openFingerprint, sealFingerprint, sha256Hex, type FingerprintClaims } from './fingerprint.ts';
export { MissingNodeFlagError, REQUIRED_NODE_FLAG, hasRequiredNodeFlag } from './node-flags.ts';
export { ToolSchemaError } from './tool-schemas.ts';
export { WorkerPool, type WorkerPoolOptions } from './worker/worker-pool.ts';
export type { ProgramEngine } from './program-runtime.ts';
export { PROGRAM_ERRORS, type ProgramErrorCode } from '../schemas/error-codes.ts';
