import type {
  ApplyPatchCallItem,
  CodeInterpreterCallItem,
  McpApprovalRequestItem,
  McpCallItem,
  Caller,
  EmittedApplyPatchCall,
  EmittedCustomToolCall,
  EmittedFunctionCall,
  EmittedShellCall,
  ApplyPatchCallOutputItem,
  ContentPart,
  ConversationItem,
  CustomToolCallItem,
  CustomToolCallOutputItem,
  FunctionCallItem,
  FunctionCallOutputItem,
  OutputItem,
  ShellCallItem,
  ShellCallOutputItem,
} from '../../../schemas/items.ts';
import { MCP_APPROVAL, TOOL_KINDS, type ClientToolKind } from './tool-kinds.ts';

const { function: FUNCTION, custom: CUSTOM, shell: SHELL, apply_patch: APPLY_PATCH, code_interpreter: CODE_INTERPRETER, mcp: MCP } = TOOL_KINDS;

/**
 * Calls the client executes and answers, as they are in a conversation: of a function tool, a
 * custom tool, the local shell or apply_patch.
 */
export type ToolCallItem = (FunctionCallItem | CustomToolCallItem | ShellCallItem | ApplyPatchCallItem) & { id: string };
/** The client's answer to a ToolCallItem. */
export type ToolOutputItem = (FunctionCallOutputItem | CustomToolCallOutputItem | ShellCallOutputItem | ApplyPatchCallOutputItem) & { id: string };

/**
 * A call a program made that the emulator answers itself, with its answer on the item: a code
 * interpreter run, an MCP call, or an MCP call waiting for approval.
 */
export type ServerCallItem = (CodeInterpreterCallItem | McpCallItem | McpApprovalRequestItem) & { id: string };
/** Every call of a program, in the order it made them. */
export type ProgramCallItem = ToolCallItem | ServerCallItem;

/** The prefix of the sealed id that identifies each server-answered item (client calls are identified by their `call_id`). */
const SEALED_ID_PREFIX = {
  [CODE_INTERPRETER.call.type]: CODE_INTERPRETER.sealedPrefix,
  [MCP.call.type]: MCP.sealedPrefix,
  [MCP_APPROVAL.request.type]: MCP_APPROVAL.request.idPrefix,
} as const satisfies Record<ServerCallItem['type'], string>;

export function isServerCall(item: ConversationItem): item is ServerCallItem {
  return Object.hasOwn(SEALED_ID_PREFIX, item.type);
}

/** The client's kind of each call item type (a shell_call the client answers is the local shell's). */
const CLIENT_KIND_OF = {
  [FUNCTION.call.type]: 'function',
  [CUSTOM.call.type]: 'custom',
  [SHELL.call.type]: 'shell',
  [APPLY_PATCH.call.type]: 'apply_patch',
} as const satisfies Record<ToolCallItem['type'], ClientToolKind>;

const CALL_TYPES: ReadonlySet<string> = new Set(Object.keys(CLIENT_KIND_OF));
const OUTPUT_TYPES: ReadonlySet<string> = new Set(Object.values(CLIENT_KIND_OF).map((kind) => TOOL_KINDS[kind].output.type));

export function isToolCall(item: ConversationItem): item is ToolCallItem {
  return CALL_TYPES.has(item.type);
}

export function isToolOutput(item: ConversationItem): item is ToolOutputItem {
  return OUTPUT_TYPES.has(item.type);
}

/** Items the client must act on before the conversation can go on: its calls, and approval requests. */
export function waitsOnClient(item: OutputItem): boolean {
  if (item.type === MCP_APPROVAL.request.type) return true;
  // A shell_call is the local shell's, the client's, or the hosted shell's, by its environment.
  if (item.type === SHELL.call.type) return item.environment.type === 'local';
  return CALL_TYPES.has(item.type);
}

export function outputTypeOf(call: ToolCallItem): ToolOutputItem['type'] {
  return TOOL_KINDS[CLIENT_KIND_OF[call.type]].output.type;
}

/** "function call call_…", "shell call call_…", "mcp_call mcp_…". */
export function describeCall(call: ProgramCallItem): string {
  return 'call_id' in call ? `${TOOL_KINDS[CLIENT_KIND_OF[call.type]].label} ${call.call_id}` : `${call.type} ${call.id}`;
}

/** The id a program's call is sealed under, and that id's prefix. */
export function sealedIdOf(call: ProgramCallItem): { readonly id: string; readonly prefix: string } {
  return 'call_id' in call
    ? { id: call.call_id, prefix: TOOL_KINDS[CLIENT_KIND_OF[call.type]].sealedPrefix }
    : { id: call.id, prefix: SEALED_ID_PREFIX[call.type] };
}

/** What a call sends, as a program's call is sealed and replayed: the tool's id and its input. */
export interface CallInput {
  /** `name`, `namespace.name`, `shell` or `apply_patch`. */
  readonly tool: string;
  /** JSON arguments (a function's, a shell action, a patch operation), or a custom tool's input as it is. */
  readonly input: string;
  readonly text: boolean;
}

export function callInput(call: ProgramCallItem): CallInput {
  switch (call.type) {
    case CODE_INTERPRETER.call.type:
      return { tool: 'code_interpreter', input: JSON.stringify({ code: call.code ?? '' }), text: false };
    case MCP.call.type:
    case MCP_APPROVAL.request.type:
      return { tool: `${call.server_label}.${call.name}`, input: call.arguments, text: false };
    case FUNCTION.call.type:
      return { tool: qualifiedName(call), input: call.arguments, text: false };
    case CUSTOM.call.type:
      return { tool: qualifiedName(call), input: call.input, text: true };
    case SHELL.call.type: {
      // As the program sent it: optional limits it left out were sent as null.
      const { commands, timeout_ms = null, max_output_length = null } = call.action;
      return { tool: 'shell', input: JSON.stringify({ commands, timeout_ms, max_output_length }), text: false };
    }
    case APPLY_PATCH.call.type:
      return { tool: 'apply_patch', input: JSON.stringify(call.operation), text: false };
  }
}

function qualifiedName(call: { name: string; namespace?: string | undefined }): string {
  return call.namespace === undefined ? call.name : `${call.namespace}.${call.name}`;
}

/** The text of an output given as a string or as content parts: texts joined, images as links. */
export function contentText(output: string | readonly ContentPart[]): string {
  if (typeof output === 'string') return output;
  return output
    .map((part) => {
      switch (part.type) {
        case 'input_text':
        case 'output_text':
          return part.text;
        case 'input_image':
          return `![image](${part.image_url ?? part.file_id ?? ''})`;
        case 'refusal':
          return part.refusal;
        default:
          return '';
      }
    })
    .join('');
}

/**
 * What the program receives for an output: a function's or custom tool's text; a shell call's
 * results and a patch's status as JSON (the program gets them parsed).
 */
export function outputForProgram(item: ToolOutputItem): string {
  switch (item.type) {
    case FUNCTION.output.type:
    case CUSTOM.output.type:
      return contentText(item.output);
    case SHELL.output.type:
      return JSON.stringify(item.output.map(({ stdout, stderr, outcome }) => ({ stdout, stderr, outcome })));
    case APPLY_PATCH.output.type:
      return JSON.stringify({ status: item.status, output: item.output ?? null });
  }
}

export type EmittedToolCall = EmittedFunctionCall | EmittedCustomToolCall | EmittedShellCall | EmittedApplyPatchCall;

/**
 * A function call's status as the hosted service gives it: a program's call stays `in_progress`
 * (its program waits on it: recorded hosted responses show it so, in the Response and in the
 * stream's `output_item.done`), the model's own call is `completed`.
 */
function functionCallStatus(caller: Caller | undefined): EmittedFunctionCall['status'] {
  return caller?.type === 'program' ? 'in_progress' : 'completed';
}

/** A call as the response carries it, from what callInput reads back: the inverse of callInput. */
export function emittedCall(
  kind: ClientToolKind,
  call: {
    readonly id: string;
    readonly callId: string;
    readonly name: string;
    readonly namespace?: string | undefined;
    readonly input: string;
    readonly caller?: Caller;
  },
): EmittedToolCall {
  const caller = call.caller === undefined ? {} : { caller: call.caller };
  switch (kind) {
    case 'function':
    case 'custom': {
      const common = { id: call.id, call_id: call.callId, name: call.name, ...(call.namespace === undefined ? {} : { namespace: call.namespace }) };
      return kind === 'custom'
        ? { type: CUSTOM.call.type, ...common, input: call.input, ...caller }
        : { type: FUNCTION.call.type, ...common, arguments: call.input, status: functionCallStatus(call.caller), ...caller };
    }
    case 'shell': {
      const action = JSON.parse(call.input) as { commands: string[]; timeout_ms?: number | null; max_output_length?: number | null };
      return {
        type: SHELL.call.type,
        id: call.id,
        call_id: call.callId,
        action: { commands: action.commands, timeout_ms: action.timeout_ms ?? null, max_output_length: action.max_output_length ?? null },
        status: 'completed',
        environment: { type: 'local' },
        ...caller,
      };
    }
    case 'apply_patch':
      return {
        type: APPLY_PATCH.call.type,
        id: call.id,
        call_id: call.callId,
        operation: JSON.parse(call.input) as EmittedApplyPatchCall['operation'],
        status: 'completed',
        ...caller,
      };
  }
}
