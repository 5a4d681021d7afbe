import { z } from 'zod';

/** Who may call a tool: the model directly, a program, or both. Absent means direct only. */
export const AllowedCaller = z.enum(['direct', 'programmatic']);
export type AllowedCaller = z.infer<typeof AllowedCaller>;

const AllowedCallers = z.array(AllowedCaller).nullish();
export const JsonSchemaObject = z.record(z.string(), z.unknown());

/**
 * A tool's, a namespace's or an MCP server's name: letters, digits, `_` and `-`, as the hosted
 * API requires. A dot never appears, so `namespace.name` names one tool only.
 */
const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]+$/;
export const ToolName = z
  .string()
  .min(1)
  .max(128)
  .regex(TOOL_NAME_PATTERN, { error: `string does not match pattern. Expected a string that matches the pattern '${TOOL_NAME_PATTERN.source}'` });

export const FunctionTool = z.looseObject({
  type: z.literal('function'),
  name: ToolName,
  description: z.string().nullish(),
  parameters: JsonSchemaObject.nullish(),
  strict: z.boolean().nullish(),
  output_schema: JsonSchemaObject.nullish(),
  allowed_callers: AllowedCallers,
  defer_loading: z.boolean().optional(),
});
export type FunctionTool = z.infer<typeof FunctionTool>;

export const CustomTool = z.looseObject({
  type: z.literal('custom'),
  name: ToolName,
  description: z.string().optional(),
  /** A grammar is accepted and echoed, not enforced on the input (docs/DEVIATIONS.md). */
  format: z
    .discriminatedUnion('type', [
      z.strictObject({ type: z.literal('text') }),
      z.strictObject({ type: z.literal('grammar'), definition: z.string(), syntax: z.enum(['lark', 'regex']) }),
    ])
    .optional(),
  allowed_callers: AllowedCallers,
  defer_loading: z.boolean().optional(),
});
export type CustomTool = z.infer<typeof CustomTool>;

export const ProgrammaticToolCallingTool = z.strictObject({
  type: z.literal('programmatic_tool_calling'),
});

/** A function inside a namespace: the same definition as a top-level function tool. */
export const NamespaceFunction = FunctionTool;
export type NamespaceFunction = z.infer<typeof NamespaceFunction>;

/** Tools grouped under a name: a program reaches them as `tools.<namespace>.<name>`. */
export const NamespaceTool = z.looseObject({
  type: z.literal('namespace'),
  name: ToolName,
  description: z.string(),
  tools: z.array(z.discriminatedUnion('type', [NamespaceFunction, CustomTool])),
});
export type NamespaceTool = z.infer<typeof NamespaceTool>;

/**
 * The shell tool. With a `local` environment (or none) the client runs the commands: a call
 * suspends the program with a `shell_call`. A container environment is the hosted shell.
 */
export const ShellTool = z.looseObject({
  type: z.literal('shell'),
  environment: z
    .discriminatedUnion('type', [
      z.looseObject({ type: z.literal('local') }),
      z.looseObject({ type: z.literal('container_auto') }),
      z.looseObject({ type: z.literal('container_reference'), container_id: z.string() }),
    ])
    .nullish(),
  allowed_callers: AllowedCallers,
});
export type ShellTool = z.infer<typeof ShellTool>;

/** The apply_patch tool: the client applies each file change (`apply_patch_call`). */
export const ApplyPatchTool = z.looseObject({
  type: z.literal('apply_patch'),
  allowed_callers: AllowedCallers,
});
export type ApplyPatchTool = z.infer<typeof ApplyPatchTool>;

/** Tools of an MCP server picked by name, or by the server's read-only hint. */
const McpToolFilter = z.looseObject({ tool_names: z.array(z.string()).optional(), read_only: z.boolean().optional() });

/**
 * A remote MCP server: the emulator connects to `server_url` as an MCP client, lists its tools
 * and calls them itself. `require_approval` (default `always`, as the hosted API) decides which
 * calls wait for the user's `mcp_approval_response`.
 */
export const McpTool = z.looseObject({
  type: z.literal('mcp'),
  server_label: ToolName,
  server_url: z.string().optional(),
  connector_id: z.string().optional(),
  server_description: z.string().optional(),
  headers: z.record(z.string(), z.string()).nullish(),
  authorization: z.string().optional(),
  allowed_tools: z.union([z.array(z.string()), McpToolFilter]).nullish(),
  require_approval: z.union([z.enum(['always', 'never']), z.looseObject({ always: McpToolFilter.nullish(), never: McpToolFilter.nullish() })]).nullish(),
  allowed_callers: AllowedCallers,
  defer_loading: z.boolean().optional(),
});
export type McpTool = z.infer<typeof McpTool>;

/**
 * code_interpreter: emulated, never run. A program's code gets the output a scenario scripts
 * for it (docs/TOOLS.md).
 */
export const CodeInterpreterTool = z.looseObject({
  type: z.literal('code_interpreter'),
  container: z.union([z.string(), z.looseObject({ type: z.literal('auto') })]),
  allowed_callers: AllowedCallers,
});
export type CodeInterpreterTool = z.infer<typeof CodeInterpreterTool>;

/**
 * Tool search: loads tools marked `defer_loading: true` into the conversation, run by the
 * emulator (`server`, the default) or by the client (`client`).
 */
export const ToolSearchTool = z.looseObject({
  type: z.literal('tool_search'),
  execution: z.enum(['server', 'client']).optional(),
  description: z.string().nullish(),
  parameters: z.unknown().optional(),
});
export type ToolSearchTool = z.infer<typeof ToolSearchTool>;

/**
 * Tool types the SDK knows and the emulator accepts and echoes, but does not run yet
 * (docs/DEVIATIONS.md lists them).
 */
const ECHOED_TOOL_TYPES = [
  'local_shell',
  'file_search',
  'web_search',
  'web_search_preview',
  'web_search_2025_08_26',
  'web_search_preview_2025_03_11',
  'computer',
  'computer_use_preview',
  'image_generation',
] as const;

const EchoedTool = z.looseObject({ type: z.enum(ECHOED_TOOL_TYPES) });

const NON_FUNCTION_TOOLS = [
  CustomTool,
  ProgrammaticToolCallingTool,
  NamespaceTool,
  ShellTool,
  ApplyPatchTool,
  McpTool,
  CodeInterpreterTool,
  ToolSearchTool,
  ...ECHOED_TOOL_TYPES.map((type) => EchoedTool.extend({ type: z.literal(type) })),
] as const;

export const Tool = z.discriminatedUnion('type', [FunctionTool, ...NON_FUNCTION_TOOLS]);
export type Tool = z.infer<typeof Tool>;

/** A function tool as Responses echo it: `parameters` and `strict` always present. */
export const EchoedFunctionTool = FunctionTool.extend({
  parameters: z.record(z.string(), z.unknown()).nullable(),
  strict: z.boolean().nullable(),
});
export type EchoedFunctionTool = z.infer<typeof EchoedFunctionTool>;

/** `Response.tools`: the request's tools, function tools completed as the hosted API does. */
export const ResponseTool = z.discriminatedUnion('type', [EchoedFunctionTool, ...NON_FUNCTION_TOOLS]);
export type ResponseTool = z.infer<typeof ResponseTool>;

/** `tool_choice`: the string modes or one of the SDK's object forms. */
export const ToolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.strictObject({ type: z.literal('function'), name: z.string() }),
  z.strictObject({ type: z.literal('custom'), name: z.string() }),
  z.strictObject({ type: z.literal('programmatic_tool_calling') }),
  z.looseObject({ type: z.literal('allowed_tools'), mode: z.enum(['auto', 'required']), tools: z.array(z.looseObject({ type: z.string() })) }),
  z.looseObject({ type: z.literal('mcp'), server_label: z.string() }),
  z.looseObject({
    type: z.enum([
      'apply_patch',
      'shell',
      'file_search',
      'web_search_preview',
      'computer',
      'computer_use_preview',
      'computer_use',
      'web_search_preview_2025_03_11',
      'image_generation',
      'code_interpreter',
    ]),
  }),
]);
export type ToolChoice = z.infer<typeof ToolChoice>;
