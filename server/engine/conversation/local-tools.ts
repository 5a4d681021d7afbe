import type { ProgramTool } from '../../../runtime/index.ts';

/**
 * The built-in tools a program can call, `tools.shell(action)`, `tools.apply_patch(operation)`
 * and `tools.code_interpreter({code})`: what their arguments must be (checked in the isolate, as
 * a strict function's are) and what the program gets back (parsed JSON). Their kind is added
 * with the tool (tool-set.ts: programTool), so the local and the hosted shell share one.
 */

/** `tools.shell({commands, timeout_ms?, max_output_length?})`: the action of a `shell_call`. */
const SHELL_ACTION_SCHEMA = {
  type: 'object',
  properties: {
    commands: { type: 'array', items: { type: 'string' }, minItems: 1 },
    timeout_ms: { type: ['integer', 'null'], minimum: 0 },
    max_output_length: { type: ['integer', 'null'], minimum: 0 },
  },
  required: ['commands'],
  additionalProperties: false,
} as const;

/** `tools.apply_patch({type, path, diff?})`: the operation of an `apply_patch_call` (a diff for all but delete_file). */
const PATCH_OPERATION_SCHEMA = {
  // In order: the shape first, so that a wrong `type` is named before a missing diff.
  allOf: [
    {
      type: 'object',
      properties: {
        type: { enum: ['create_file', 'update_file', 'delete_file'] },
        path: { type: 'string', minLength: 1 },
        diff: { type: 'string' },
      },
      required: ['type', 'path'],
      additionalProperties: false,
    },
    { if: { properties: { type: { const: 'delete_file' } } }, then: { maxProperties: 2 }, else: { required: ['diff'] } },
  ],
} as const;

/** The shell (local or hosted) as a program sees it: it receives `[{stdout, stderr, outcome}]`, one per command. */
export const SHELL_PROGRAM_TOOL: ProgramTool = {
  name: 'shell',
  parseOutputAsJson: true,
  parameters: SHELL_ACTION_SCHEMA,
  nullDefaults: ['timeout_ms', 'max_output_length'],
};

/** apply_patch as a program sees it: it receives `{status: "completed" | "failed", output}`. */
export const APPLY_PATCH_PROGRAM_TOOL: ProgramTool = {
  name: 'apply_patch',
  parseOutputAsJson: true,
  parameters: PATCH_OPERATION_SCHEMA,
};

/** `tools.code_interpreter({code})`: the code of a `code_interpreter_call`. */
const CODE_SCHEMA = {
  type: 'object',
  properties: { code: { type: 'string', minLength: 1 } },
  required: ['code'],
  additionalProperties: false,
} as const;

/** code_interpreter as a program sees it: it receives the run's outputs, `[{type: "logs", logs} | {type: "image", url}]`. */
export const CODE_INTERPRETER_PROGRAM_TOOL: ProgramTool = {
  name: 'code_interpreter',
  parseOutputAsJson: true,
  parameters: CODE_SCHEMA,
};
