import type {
  ConversationItem,
  CustomToolCallItem,
  CustomToolCallOutputItem,
  FunctionCallItem,
  FunctionCallOutputItem,
} from '../../schemas/items.ts';

/** A call the client executes and answers (of a function tool or of a custom tool), as it is in a conversation. */
export type ToolCallItem = (FunctionCallItem | CustomToolCallItem) & { id: string };
/** The client's answer to a ToolCallItem. */
export type ToolOutputItem = (FunctionCallOutputItem | CustomToolCallOutputItem) & { id: string };

/** The output item type that answers each call item type. */
const OUTPUT_TYPE = {
  function_call: 'function_call_output',
  custom_tool_call: 'custom_tool_call_output',
} as const satisfies Record<ToolCallItem['type'], ToolOutputItem['type']>;

const CALL_TYPES: ReadonlySet<string> = new Set(Object.keys(OUTPUT_TYPE));
const OUTPUT_TYPES: ReadonlySet<string> = new Set(Object.values(OUTPUT_TYPE));

export function isToolCall(item: ConversationItem): item is ToolCallItem {
  return CALL_TYPES.has(item.type);
}

export function isToolOutput(item: ConversationItem): item is ToolOutputItem {
  return OUTPUT_TYPES.has(item.type);
}

export function outputTypeOf(call: ToolCallItem): ToolOutputItem['type'] {
  return OUTPUT_TYPE[call.type];
}

/** What a call sends, as a program's call is sealed: the tool's id and its input text. */
export interface CallInput {
  /** `name`, or `namespace.name`. */
  readonly tool: string;
  /** A function call's arguments (JSON), or a custom tool call's input as it is. */
  readonly input: string;
  readonly text: boolean;
}

export function callInput(call: ToolCallItem): CallInput {
  const tool = call.namespace === undefined ? call.name : `${call.namespace}.${call.name}`;
  return call.type === 'custom_tool_call' ? { tool, input: call.input, text: true } : { tool, input: call.arguments, text: false };
}

/** How messages name a call: "function call call_…" or "custom tool call call_…". */
export function describeCall(call: ToolCallItem): string {
  return `${call.type === 'custom_tool_call' ? 'custom tool call' : 'function call'} ${call.call_id}`;
}
