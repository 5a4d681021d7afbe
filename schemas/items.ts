import { z } from 'zod';
import { ResponseTool, Tool } from './tools.ts';

/**
 * Conversation items: what clients send in `input` and what responses carry in `output`.
 * Items the emulator reads are typed field by field with exactly the fields the SDK 7.60.0
 * declares, and anything else is an unknown parameter, as the hosted API answers it (a client
 * resending the stream helper's `parsed_arguments` gets the 400 it would get from OpenAI).
 * Item types the emulator only keeps are checked by `type` alone.
 */

export const ProgramCaller = z.strictObject({
  type: z.literal('program'),
  caller_id: z.string().min(1),
});
export const DirectCaller = z.strictObject({ type: z.literal('direct') });
export const Caller = z.discriminatedUnion('type', [ProgramCaller, DirectCaller]);
export type Caller = z.infer<typeof Caller>;

const ItemStatus = z.enum(['in_progress', 'completed', 'incomplete']);

// ---- content parts ----------------------------------------------------------------------

const PromptCacheBreakpoint = z.strictObject({ mode: z.literal('explicit'), ttl: z.enum(['30m', '12h']).optional() }).nullish();

export const OutputText = z.strictObject({
  type: z.literal('output_text'),
  text: z.string(),
  annotations: z.array(z.looseObject({ type: z.string() })).optional(),
  logprobs: z.array(z.unknown()).optional(),
});
const InputText = z.strictObject({ type: z.literal('input_text'), text: z.string(), prompt_cache_breakpoint: PromptCacheBreakpoint });
const InputImage = z.strictObject({
  type: z.literal('input_image'),
  image_url: z.string().nullish(),
  file_id: z.string().nullish(),
  detail: z.enum(['low', 'high', 'auto', 'original']).nullish(),
  prompt_cache_breakpoint: PromptCacheBreakpoint,
});
const InputFile = z.strictObject({
  type: z.literal('input_file'),
  detail: z.enum(['low', 'high', 'auto']).optional(),
  file_data: z.string().nullish(),
  file_id: z.string().nullish(),
  file_url: z.string().nullish(),
  filename: z.string().nullish(),
  prompt_cache_breakpoint: PromptCacheBreakpoint,
});
/** A part of a user's message: text, an image or a file (what steering input may carry). */
export const InputContentPart = z.discriminatedUnion('type', [InputText, InputImage, InputFile]);
const ContentPart = z.discriminatedUnion('type', [
  InputText,
  InputImage,
  InputFile,
  OutputText,
  z.strictObject({ type: z.literal('refusal'), refusal: z.string() }),
]);
export type ContentPart = z.infer<typeof ContentPart>;

// ---- input items ------------------------------------------------------------------------

export const MessageItem = z.strictObject({
  type: z.literal('message'),
  id: z.string().optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([z.string(), z.array(ContentPart)]),
  status: ItemStatus.optional(),
  phase: z.enum(['commentary', 'final_answer']).nullish(),
});
export type MessageItem = z.infer<typeof MessageItem>;

export const ProgramItem = z.strictObject({
  type: z.literal('program'),
  id: z.string(),
  call_id: z.string().min(1),
  code: z.string(),
  fingerprint: z.string(),
});
export type ProgramItem = z.infer<typeof ProgramItem>;

export const ProgramOutputItem = z.strictObject({
  type: z.literal('program_output'),
  id: z.string().optional(),
  call_id: z.string().min(1),
  result: z.string(),
  status: z.enum(['completed', 'incomplete']),
});
export type ProgramOutputItem = z.infer<typeof ProgramOutputItem>;

export const FunctionCallItem = z.strictObject({
  type: z.literal('function_call'),
  id: z.string().optional(),
  call_id: z.string().min(1),
  name: z.string(),
  arguments: z.string(),
  namespace: z.string().optional(),
  /** openai 7.x: whether the call runs asynchronously; accepted, not acted on (docs/DEVIATIONS.md). */
  async: z.boolean().optional(),
  caller: Caller.nullish(),
  status: ItemStatus.optional(),
});
export type FunctionCallItem = z.infer<typeof FunctionCallItem>;

export const FunctionCallOutputItem = z.strictObject({
  type: z.literal('function_call_output'),
  id: z.string().nullish(),
  // openai 7.x: an output may name its tool instead of its call (server/engine/conversation/output-binding.ts).
  call_id: z.string().min(1).nullish(),
  name: z.string().nullish(),
  namespace: z.string().nullish(),
  output: z.union([z.string(), z.array(ContentPart)]),
  caller: Caller.nullish(),
  status: ItemStatus.nullish(),
});
export type FunctionCallOutputItem = z.infer<typeof FunctionCallOutputItem>;

export const CustomToolCallItem = z.strictObject({
  type: z.literal('custom_tool_call'),
  id: z.string().optional(),
  call_id: z.string().min(1),
  name: z.string(),
  input: z.string(),
  namespace: z.string().optional(),
  async: z.boolean().optional(),
  caller: Caller.nullish(),
});

export type CustomToolCallItem = z.infer<typeof CustomToolCallItem>;

export const CustomToolCallOutputItem = z.strictObject({
  type: z.literal('custom_tool_call_output'),
  id: z.string().optional(),
  call_id: z.string().min(1),
  output: z.union([z.string(), z.array(ContentPart)]),
  caller: Caller.nullish(),
});

export type CustomToolCallOutputItem = z.infer<typeof CustomToolCallOutputItem>;

/** What a shell call runs: the commands, and optional limits (null when the caller set none). */
export const ShellAction = z.strictObject({
  commands: z.array(z.string()),
  timeout_ms: z.number().int().nullish(),
  max_output_length: z.number().int().nullish(),
});

const ShellEnvironment = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('local'), skills: z.array(z.looseObject({})).optional() }),
  z.strictObject({ type: z.literal('container_reference'), container_id: z.string() }),
]);

export const ShellCallItem = z.strictObject({
  type: z.literal('shell_call'),
  id: z.string().nullish(),
  call_id: z.string().min(1),
  action: ShellAction,
  environment: ShellEnvironment.nullish(),
  caller: Caller.nullish(),
  status: ItemStatus.nullish(),
});
export type ShellCallItem = z.infer<typeof ShellCallItem>;

/** One command's result in a shell_call_output. */
export const ShellCommandOutput = z.strictObject({
  stdout: z.string(),
  stderr: z.string(),
  outcome: z.discriminatedUnion('type', [
    z.strictObject({ type: z.literal('exit'), exit_code: z.number().int() }),
    z.strictObject({ type: z.literal('timeout') }),
  ]),
});

export const ShellCallOutputItem = z.strictObject({
  type: z.literal('shell_call_output'),
  id: z.string().nullish(),
  call_id: z.string().min(1),
  output: z.array(ShellCommandOutput),
  max_output_length: z.number().int().nullish(),
  caller: Caller.nullish(),
  status: ItemStatus.nullish(),
});
export type ShellCallOutputItem = z.infer<typeof ShellCallOutputItem>;

/** A file change: create (with a diff of the whole file), update (with a diff), or delete. */
export const PatchOperation = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('create_file'), path: z.string(), diff: z.string() }),
  z.strictObject({ type: z.literal('update_file'), path: z.string(), diff: z.string() }),
  z.strictObject({ type: z.literal('delete_file'), path: z.string() }),
]);

export const ApplyPatchCallItem = z.strictObject({
  type: z.literal('apply_patch_call'),
  id: z.string().nullish(),
  call_id: z.string().min(1),
  operation: PatchOperation,
  status: z.enum(['in_progress', 'completed']),
  caller: Caller.nullish(),
});
export type ApplyPatchCallItem = z.infer<typeof ApplyPatchCallItem>;

export const ApplyPatchCallOutputItem = z.strictObject({
  type: z.literal('apply_patch_call_output'),
  id: z.string().nullish(),
  call_id: z.string().min(1),
  status: z.enum(['completed', 'failed']),
  output: z.string().nullish(),
  caller: Caller.nullish(),
});
export type ApplyPatchCallOutputItem = z.infer<typeof ApplyPatchCallOutputItem>;

/** What a code interpreter run printed or drew. */
const CodeInterpreterOutput = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('logs'), logs: z.string() }),
  z.strictObject({ type: z.literal('image'), url: z.string() }),
]);

/**
 * A code interpreter run. `caller` is an extension (the SDK 7.60.0 type has none): the emulator
 * sets it on runs a program made, and reads it back to find the program.
 */
export const CodeInterpreterCallItem = z.strictObject({
  type: z.literal('code_interpreter_call'),
  id: z.string(),
  code: z.string().nullable(),
  container_id: z.string(),
  outputs: z.array(CodeInterpreterOutput).nullable(),
  status: z.enum(['in_progress', 'completed', 'incomplete', 'interpreting', 'failed']),
  caller: Caller.nullish(),
});
export type CodeInterpreterCallItem = z.infer<typeof CodeInterpreterCallItem>;

/** A server's tools as `mcp_list_tools` reports them. */
export const McpToolListing = z.strictObject({
  name: z.string(),
  input_schema: z.unknown(),
  description: z.string().nullish(),
  annotations: z.unknown().nullish(),
});

export const McpListToolsItem = z.strictObject({
  type: z.literal('mcp_list_tools'),
  id: z.string(),
  server_label: z.string(),
  tools: z.array(McpToolListing),
  error: z.string().nullish(),
});
export type McpListToolsItem = z.infer<typeof McpListToolsItem>;

/**
 * `mcp_call.error` as openai 7.x types it (McpToolCallError): a JSON-RPC error from the server,
 * the tool's own error result (its content blocks), or a failure to reach the server over HTTP.
 */
export const McpCallError = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('mcp_protocol_error'), code: z.number(), message: z.string() }),
  z.strictObject({ type: z.literal('mcp_tool_execution_error'), content: z.unknown() }),
  z.strictObject({ type: z.literal('http_error'), code: z.number(), message: z.string() }),
]);
export type McpCallError = z.infer<typeof McpCallError>;

/**
 * An MCP call the emulator made. `caller` is an extension, as on code_interpreter_call. A string
 * `error` is how responses stored before openai 7.x's structured errors carry it.
 */
export const McpCallItem = z.strictObject({
  type: z.literal('mcp_call'),
  id: z.string(),
  server_label: z.string(),
  name: z.string(),
  arguments: z.string(),
  output: z.string().nullish(),
  error: z.union([McpCallError, z.string()]).nullish(),
  status: z.enum(['in_progress', 'completed', 'incomplete', 'calling', 'failed']).optional(),
  approval_request_id: z.string().nullish(),
  caller: Caller.nullish(),
});
export type McpCallItem = z.infer<typeof McpCallItem>;

/** An MCP call waiting for the user's approval. `caller` is an extension, as on mcp_call. */
export const McpApprovalRequestItem = z.strictObject({
  type: z.literal('mcp_approval_request'),
  id: z.string(),
  server_label: z.string(),
  name: z.string(),
  arguments: z.string(),
  caller: Caller.nullish(),
});
export type McpApprovalRequestItem = z.infer<typeof McpApprovalRequestItem>;

/**
 * The user's answer to an approval request. `caller` is an extension (the SDK 7.60.0 type has
 * none): a client that copies its request's `caller` onto it, as the Agents SDK does, must copy
 * it unchanged; a client that leaves it out is answering all the same.
 */
export const McpApprovalResponseItem = z.strictObject({
  type: z.literal('mcp_approval_response'),
  id: z.string().nullish(),
  approval_request_id: z.string().min(1),
  approve: z.boolean(),
  reason: z.string().nullish(),
  caller: Caller.nullish(),
});
export type McpApprovalResponseItem = z.infer<typeof McpApprovalResponseItem>;

/** A tool search: its query (`arguments`), run by the emulator (`server`) or by the client. */
export const ToolSearchCallItem = z.strictObject({
  type: z.literal('tool_search_call'),
  id: z.string().nullish(),
  call_id: z.string().nullish(),
  arguments: z.unknown(),
  execution: z.enum(['server', 'client']).optional(),
  status: ItemStatus.nullish(),
});
export type ToolSearchCallItem = z.infer<typeof ToolSearchCallItem>;

/** What a tool search loaded: tool definitions that join the conversation's tools. */
export const ToolSearchOutputItem = z.strictObject({
  type: z.literal('tool_search_output'),
  id: z.string().nullish(),
  call_id: z.string().nullish(),
  tools: z.array(Tool),
  execution: z.enum(['server', 'client']).optional(),
  status: ItemStatus.nullish(),
});
export type ToolSearchOutputItem = z.infer<typeof ToolSearchOutputItem>;

export const ReasoningItem = z.strictObject({
  type: z.literal('reasoning'),
  id: z.string(),
  summary: z.array(z.strictObject({ type: z.literal('summary_text'), text: z.string() })),
  content: z.array(z.strictObject({ type: z.literal('reasoning_text'), text: z.string() })).optional(),
  encrypted_content: z.string().nullish(),
  status: ItemStatus.optional(),
});
export type ReasoningItem = z.infer<typeof ReasoningItem>;

/**
 * A compaction item, as `POST /v1/responses/compact` returns it and a client sends it back: read
 * as the items it holds (server/engine/conversation/compaction.ts).
 */
export const CompactionItem = z.strictObject({
  type: z.literal('compaction'),
  id: z.string().nullish(),
  encrypted_content: z.string(),
  created_by: z.string().optional(),
});

/** Item types the SDK knows that the emulator keeps in the conversation without acting on. */
export const KEPT_ITEM_TYPES = [
  'file_search_call',
  'computer_call',
  'computer_call_output',
  'web_search_call',
  'additional_tools',
  'compaction_trigger',
  'image_generation_call',
  'local_shell_call',
  'local_shell_call_output',
  // openai 7.x: sets reasoning and text for later responses; kept and listed, not applied (docs/DEVIATIONS.md).
  'configuration_update',
] as const;
export const KeptItem = z.looseObject({ type: z.enum(KEPT_ITEM_TYPES), id: z.string().nullish() });

/**
 * An item of a stored response, named by its id (`ResponseInputItem.ItemReference`): what the
 * Vercel AI SDK sends for the items of a response made with `store: true`. Read as the item it
 * names before anything else reads the input (server/engine/conversation/item-references.ts).
 */
export const ItemReference = z.strictObject({ type: z.literal('item_reference'), id: z.string().min(1) });
export type ItemReference = z.infer<typeof ItemReference>;

export const InputItem = z.discriminatedUnion('type', [
  MessageItem,
  ProgramItem,
  ProgramOutputItem,
  FunctionCallItem,
  FunctionCallOutputItem,
  CustomToolCallItem,
  CustomToolCallOutputItem,
  ShellCallItem,
  ShellCallOutputItem,
  ApplyPatchCallItem,
  ApplyPatchCallOutputItem,
  CodeInterpreterCallItem,
  McpListToolsItem,
  McpCallItem,
  McpApprovalRequestItem,
  McpApprovalResponseItem,
  ToolSearchCallItem,
  ToolSearchOutputItem,
  ReasoningItem,
  CompactionItem,
  ItemReference,
  ...KEPT_ITEM_TYPES.map((type) => KeptItem.extend({ type: z.literal(type) })),
]);
export type InputItem = z.infer<typeof InputItem>;

/** Every item in a conversation carries an id once the server has seen it. */
export type ConversationItem = InputItem & { id: string };

// ---- items the emulator emits (exact shapes; the type test checks them against the SDK) ----

export const EmittedProgram = z.strictObject({
  type: z.literal('program'),
  id: z.string(),
  call_id: z.string(),
  code: z.string(),
  fingerprint: z.string(),
});
export type EmittedProgram = z.infer<typeof EmittedProgram>;

export const EmittedFunctionCall = z.strictObject({
  type: z.literal('function_call'),
  id: z.string(),
  call_id: z.string(),
  name: z.string(),
  arguments: z.string(),
  // `in_progress` in a stream's `output_item.added` before its arguments arrive, and for a
  // program's call, which its program waits on (call-items.ts).
  status: z.enum(['in_progress', 'completed']),
  namespace: z.string().optional(),
  caller: Caller.optional(),
});
export type EmittedFunctionCall = z.infer<typeof EmittedFunctionCall>;

export const EmittedCustomToolCall = z.strictObject({
  type: z.literal('custom_tool_call'),
  id: z.string(),
  call_id: z.string(),
  name: z.string(),
  input: z.string(),
  namespace: z.string().optional(),
  caller: Caller.optional(),
});
export type EmittedCustomToolCall = z.infer<typeof EmittedCustomToolCall>;

export const EmittedShellCall = z.strictObject({
  type: z.literal('shell_call'),
  id: z.string(),
  call_id: z.string(),
  action: z.strictObject({ commands: z.array(z.string()), timeout_ms: z.number().int().nullable(), max_output_length: z.number().int().nullable() }),
  status: z.enum(['in_progress', 'completed']),
  // Local for the client's shell; a container for the hosted shell the emulator stands in for.
  environment: z.discriminatedUnion('type', [
    z.strictObject({ type: z.literal('local') }),
    z.strictObject({ type: z.literal('container_reference'), container_id: z.string() }),
  ]),
  caller: Caller.optional(),
});
export type EmittedShellCall = z.infer<typeof EmittedShellCall>;

/** The hosted shell's results, emitted by the emulator itself. */
export const EmittedShellCallOutput = z.strictObject({
  type: z.literal('shell_call_output'),
  id: z.string(),
  call_id: z.string(),
  output: z.array(ShellCommandOutput),
  max_output_length: z.number().int().nullable(),
  status: z.enum(['in_progress', 'completed', 'incomplete']),
  caller: Caller.optional(),
});
export type EmittedShellCallOutput = z.infer<typeof EmittedShellCallOutput>;

export const EmittedCodeInterpreterCall = z.strictObject({
  type: z.literal('code_interpreter_call'),
  id: z.string(),
  code: z.string(),
  container_id: z.string(),
  outputs: z.array(CodeInterpreterOutput).nullable(),
  status: z.enum(['in_progress', 'completed', 'failed']),
  caller: Caller.optional(),
});
export type EmittedCodeInterpreterCall = z.infer<typeof EmittedCodeInterpreterCall>;

export const EmittedMcpListTools = z.strictObject({
  type: z.literal('mcp_list_tools'),
  id: z.string(),
  server_label: z.string(),
  tools: z.array(
    z.strictObject({ name: z.string(), input_schema: z.unknown(), description: z.string().nullable().optional(), annotations: z.unknown().optional() }),
  ),
  error: z.string().nullable(),
});
export type EmittedMcpListTools = z.infer<typeof EmittedMcpListTools>;

export const EmittedMcpCall = z.strictObject({
  type: z.literal('mcp_call'),
  id: z.string(),
  server_label: z.string(),
  name: z.string(),
  arguments: z.string(),
  output: z.string().nullable(),
  error: McpCallError.nullable(),
  status: z.enum(['in_progress', 'completed', 'failed']),
  approval_request_id: z.string().nullable(),
  caller: Caller.optional(),
});
export type EmittedMcpCall = z.infer<typeof EmittedMcpCall>;

export const EmittedMcpApprovalRequest = z.strictObject({
  type: z.literal('mcp_approval_request'),
  id: z.string(),
  server_label: z.string(),
  name: z.string(),
  arguments: z.string(),
  caller: Caller.optional(),
});
export type EmittedMcpApprovalRequest = z.infer<typeof EmittedMcpApprovalRequest>;

export const EmittedApplyPatchCall = z.strictObject({
  type: z.literal('apply_patch_call'),
  id: z.string(),
  call_id: z.string(),
  operation: PatchOperation,
  status: z.enum(['in_progress', 'completed']),
  caller: Caller.optional(),
});
export type EmittedApplyPatchCall = z.infer<typeof EmittedApplyPatchCall>;

export const EmittedToolSearchCall = z.strictObject({
  type: z.literal('tool_search_call'),
  id: z.string(),
  call_id: z.string().nullable(),
  arguments: z.strictObject({ query: z.string() }),
  execution: z.enum(['server', 'client']),
  status: z.enum(['in_progress', 'completed']),
});
export type EmittedToolSearchCall = z.infer<typeof EmittedToolSearchCall>;

export const EmittedToolSearchOutput = z.strictObject({
  type: z.literal('tool_search_output'),
  id: z.string(),
  call_id: z.string().nullable(),
  tools: z.array(ResponseTool),
  execution: z.literal('server'),
  status: z.enum(['in_progress', 'completed']),
});
export type EmittedToolSearchOutput = z.infer<typeof EmittedToolSearchOutput>;

export const EmittedProgramOutput = z.strictObject({
  type: z.literal('program_output'),
  id: z.string(),
  call_id: z.string(),
  result: z.string(),
  status: z.enum(['completed', 'incomplete']),
});
export type EmittedProgramOutput = z.infer<typeof EmittedProgramOutput>;

export const EmittedMessage = z.strictObject({
  type: z.literal('message'),
  id: z.string(),
  role: z.literal('assistant'),
  // `in_progress` in a stream before its text; `incomplete` when cut at max_output_tokens.
  status: z.enum(['in_progress', 'completed', 'incomplete']),
  content: z.array(
    z.strictObject({
      type: z.literal('output_text'),
      text: z.string(),
      annotations: z.array(z.never()),
      logprobs: z.array(z.never()),
    }),
  ),
});
export type EmittedMessage = z.infer<typeof EmittedMessage>;

export const EmittedReasoning = z.strictObject({
  type: z.literal('reasoning'),
  id: z.string(),
  summary: z.array(z.strictObject({ type: z.literal('summary_text'), text: z.string() })),
  /** Only when the request's `include` asks for `reasoning.encrypted_content`. */
  encrypted_content: z.string().optional(),
});
export type EmittedReasoning = z.infer<typeof EmittedReasoning>;

export const OutputItem = z.discriminatedUnion('type', [
  EmittedProgram,
  EmittedFunctionCall,
  EmittedCustomToolCall,
  EmittedShellCall,
  EmittedShellCallOutput,
  EmittedApplyPatchCall,
  EmittedCodeInterpreterCall,
  EmittedMcpListTools,
  EmittedMcpCall,
  EmittedMcpApprovalRequest,
  EmittedToolSearchCall,
  EmittedToolSearchOutput,
  EmittedProgramOutput,
  EmittedMessage,
  EmittedReasoning,
]);
export type OutputItem = z.infer<typeof OutputItem>;
