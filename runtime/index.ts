/**
 * The program engine, usable on its own (no HTTP in here), and the only way the server reaches
 * it: nothing under server/ imports another runtime module (test/architecture.test.ts).
 */
// First: on a Node.js too old for the package, one line saying so before anything fails to load.
import './node-version-check.ts';
export { IsolateProgram, type ProgramSpec } from './isolate-program.ts';
export { ProgramTool, sealTool, takesText, toolId, unsealTools, type SealedTool } from './program-tool.ts';
export { DEFAULT_WARM_ISOLATES } from './warm-isolates.ts';
export { DEFAULT_SPIN_WAIT_MS, MAX_SPIN_WAIT_MS } from './spin-wait.ts';
export { ProgramRuntime, type ProgramEngine, type ProgramRuntimeOptions, type ProgramRuntimeStats, type ResumePath } from './program-runtime.ts';
export { isolatesReady, runProgram, type HostTool, type RunProgramOptions, type RunProgramResult } from './run-program.ts';
export { DEFAULT_LIMITS, LIMIT_DEFINITIONS, resolveLimits, type LimitName, type ProgramLimits } from './limits.ts';
export {
  failureResult,
  type ProgramEvent,
  type ProgramFailure,
  type ProgramStats,
  type RecordedCall,
  type ToolCallOutput,
  type ToolCallRequest,
} from './program-events.ts';
export {
  callIdMatches,
  canonicalJson,
  openFingerprint,
  sealCallId,
  sealedBatchEnd,
  sealFingerprint,
  sha256Hex,
  type CallIdentity,
  type FingerprintClaims,
  type SealingKeys,
} from './fingerprint.ts';
export { REQUIRED_NODE_FLAG, hasRequiredNodeFlag } from './node-flags.ts';
export { TextMemo } from './text-memo.ts';
export { listSeal, openToken, sameSeal, sealToken, type TokenRefusal } from './sealed-token.ts';
export { jsonDepthExceeds, MAX_JSON_DEPTH } from '../schemas/json-depth.ts';
export { checkAgainstSchema, compileToolSchemas } from './schema-compiler.ts';
export { compileValidator, describeViolation, type Validator } from './tool-schemas.ts';
export { startModuleThread } from './module-thread.ts';
export { currentThreadId, lowerThreadPriority } from './thread-priority.ts';
export { watchThreadDeadline } from './thread-deadline.ts';
export { WorkerPool, type WorkerPoolOptions } from './worker/worker-pool.ts';
export {
  EmulatorError,
  FingerprintError,
  FingerprintTooLargeError,
  MissingNodeFlagError,
  ProgramBusyError,
  SchemaDeadlineError,
  SchemaThreadBusyError,
  SchemaTooComplexError,
  ToolSchemaError,
  WorkerDeathError,
} from './errors.ts';
export { PROGRAM_ERRORS, type ProgramErrorCode } from '../schemas/error-codes.ts';
