/**
 * Compile-time proof, checked by `tsc` in `npm test`: what the emulator emits is assignable to
 * the types of the pinned SDK (openai 7.60.0). A change on either side that breaks the wire
 * fails the build. (The other direction, that every request the SDK can type is accepted, is a
 * runtime test: "requests the SDK can type" in test/wire-shapes.test.ts.)
 */
import type { z } from 'zod';
import type {
  FunctionTool,
  Response,
  ResponseInputItem,
  ResponseItem,
  ResponseOutputItem,
  ResponsesClientEvent,
  ResponseSteerAcceptedEvent,
  ResponseSteerFailedEvent,
  ResponseSteerPendingEvent,
  ResponseStreamEvent,
  ResponseUsage,
  Tool,
} from 'openai/resources/responses/responses';
import type { Model } from 'openai/resources/models';
import type { InputTokenCountResponse } from 'openai/resources/responses/input-tokens';
import type { CompactedResponse as SdkCompactedResponse, ResponseCompactionItem } from 'openai/resources/responses/responses';
import type { Conversation, ConversationDeletedResource } from 'openai/resources/conversations/conversations';
import type { ConversationItem as SdkConversationItem, ConversationItemList } from 'openai/resources/conversations/items';
import type {
  EmittedApplyPatchCall,
  EmittedCodeInterpreterCall,
  EmittedMcpApprovalRequest,
  EmittedMcpCall,
  EmittedMcpListTools,
  EmittedShellCallOutput,
  EmittedToolSearchCall,
  EmittedToolSearchOutput,
  EmittedCustomToolCall,
  EmittedShellCall,
  EmittedFunctionCall,
  EmittedMessage,
  EmittedProgram,
  EmittedProgramOutput,
  EmittedReasoning,
  OutputItem,
} from '../../schemas/items.ts';
import type { ConversationObject, DeletedConversation } from '../../schemas/conversation.ts';
import type { CompactedResponse, EmittedCompaction, InputTokenCount, ModelObject, ResponseObject } from '../../schemas/response.ts';
import type { SteerAcceptedEvent, SteerEvent, SteerFailedEvent, SteerPendingEvent } from '../../schemas/steering.ts';
import type { StreamEvent } from '../../schemas/stream-events.ts';
import type { Usage } from '../../schemas/usage.ts';
import type { EchoedFunctionTool, ProgrammaticToolCallingTool } from '../../schemas/tools.ts';

type IsAssignable<From, To> = [From] extends [To] ? true : false;
function assertTrue<T extends true>(): T | undefined {
  return undefined;
}

/**
 * Tool definitions we echo (in Response.tools and tool_search_output.tools) are the request's,
 * as sent: the kinds the emulator acts on are checked one by one below; the others are accepted
 * by `type` alone (docs/DEVIATIONS.md), so they are compared as the SDK's Tool.
 */
type SdkTools<Item> = Item extends { type: 'tool_search_output' } ? Omit<Item, 'tools'> & { tools: Tool[] } : Item;
type SdkOutputItem = SdkTools<OutputItem>;
type SdkResponse = Omit<ResponseObject, 'tools' | 'output'> & { output_text: string; tools: Tool[]; output: SdkOutputItem[] };

// Every item we emit is an SDK output item, and can be sent back as input unchanged.
assertTrue<IsAssignable<SdkOutputItem, ResponseOutputItem>>();
assertTrue<IsAssignable<SdkOutputItem, ResponseInputItem>>();
assertTrue<IsAssignable<EmittedProgram, ResponseOutputItem.Program>>();
assertTrue<IsAssignable<EmittedProgramOutput, ResponseOutputItem.ProgramOutput>>();
assertTrue<IsAssignable<EmittedFunctionCall, Extract<ResponseItem, { type: 'function_call' }>>>();
assertTrue<IsAssignable<EmittedCustomToolCall, Extract<ResponseOutputItem, { type: 'custom_tool_call' }>>>();
assertTrue<IsAssignable<EmittedShellCall, Extract<ResponseOutputItem, { type: 'shell_call' }>>>();
assertTrue<IsAssignable<EmittedApplyPatchCall, Extract<ResponseOutputItem, { type: 'apply_patch_call' }>>>();
assertTrue<IsAssignable<EmittedShellCallOutput, Extract<ResponseOutputItem, { type: 'shell_call_output' }>>>();
// `caller` on these three is an extension the SDK's types do not declare (docs/DEVIATIONS.md).
assertTrue<IsAssignable<EmittedCodeInterpreterCall, Extract<ResponseOutputItem, { type: 'code_interpreter_call' }>>>();
assertTrue<IsAssignable<EmittedMcpCall, Extract<ResponseOutputItem, { type: 'mcp_call' }>>>();
assertTrue<IsAssignable<EmittedMcpApprovalRequest, Extract<ResponseOutputItem, { type: 'mcp_approval_request' }>>>();
assertTrue<IsAssignable<EmittedMcpListTools, Extract<ResponseOutputItem, { type: 'mcp_list_tools' }>>>();
assertTrue<IsAssignable<EmittedToolSearchCall, Extract<ResponseOutputItem, { type: 'tool_search_call' }>>>();
assertTrue<IsAssignable<SdkTools<EmittedToolSearchOutput>, Extract<ResponseOutputItem, { type: 'tool_search_output' }>>>();
assertTrue<IsAssignable<EmittedMessage, Extract<ResponseOutputItem, { type: 'message' }>>>();
assertTrue<IsAssignable<EmittedReasoning, Extract<ResponseOutputItem, { type: 'reasoning' }>>>();

// Our Response plus the `output_text` the SDK adds client-side is the SDK's Response. Its
// `tools` echo the request's: the kinds the emulator acts on are checked one by one; the others
// are accepted by `type` alone and echoed as sent (docs/DEVIATIONS.md).
assertTrue<IsAssignable<SdkResponse, Response>>();
assertTrue<IsAssignable<EchoedFunctionTool, FunctionTool>>();
assertTrue<IsAssignable<z.infer<typeof ProgrammaticToolCallingTool>, Tool.ProgrammaticToolCalling>>();
assertTrue<IsAssignable<ModelObject, Model>>();

// Every stream event we write is one the SDK's stream helper knows, its Response included
// (with `output_text`, which the helper computes).
type WithSdkResponse<Event> = Event extends { response: ResponseObject }
  ? Omit<Event, 'response'> & { response: SdkResponse }
  : Event extends { item: OutputItem }
    ? Omit<Event, 'item'> & { item: SdkTools<Event['item']> }
    : Event;
assertTrue<IsAssignable<WithSdkResponse<StreamEvent>, ResponseStreamEvent>>();
// Nor does any event carry a field its SDK type lacks (assignability alone allows extra fields:
// `name` on response.function_call_arguments.done, gone in openai 7.x, passed it).
type ExtraKeys<Ours, Sdk> = Ours extends { type: infer Type } ? Exclude<keyof Ours, keyof Extract<Sdk, { type: Type }>> : never;
assertTrue<IsAssignable<ExtraKeys<StreamEvent, ResponseStreamEvent>, never>>();
assertTrue<IsAssignable<Usage, ResponseUsage>>();
assertTrue<IsAssignable<ResponseUsage, Usage>>();

// The Conversations API: its objects, and every item we emit as a conversation lists it (a
// response's output joins its conversation unchanged).
assertTrue<IsAssignable<ConversationObject, Conversation>>();
assertTrue<IsAssignable<DeletedConversation, ConversationDeletedResource>>();
assertTrue<IsAssignable<SdkOutputItem, SdkConversationItem>>();
assertTrue<IsAssignable<{ object: 'list'; data: SdkOutputItem[]; first_id: string; last_id: string; has_more: boolean }, ConversationItemList>>();

// compact and input_tokens. The compacted output's user messages are input messages, which the
// SDK's output type (assistant messages only) does not describe: the rest is checked.
assertTrue<IsAssignable<EmittedCompaction, ResponseCompactionItem>>();
assertTrue<IsAssignable<EmittedCompaction, ResponseInputItem>>();
assertTrue<IsAssignable<Omit<CompactedResponse, 'output'>, Omit<SdkCompactedResponse, 'output'>>>();
assertTrue<IsAssignable<InputTokenCount, InputTokenCountResponse>>();

// WebSocket steering: the events answering a `response.steer` are the SDK's, and what the
// emulator accepts as one is what the SDK's client event can carry (its user messages).
assertTrue<IsAssignable<SteerAcceptedEvent, ResponseSteerAcceptedEvent>>();
assertTrue<IsAssignable<SteerPendingEvent, ResponseSteerPendingEvent>>();
assertTrue<IsAssignable<SteerFailedEvent, ResponseSteerFailedEvent>>();
// The SDK's type also lists tool outputs and a message's `id` and `status`, which its doc comment
// says steering refuses: the rest of what it can send is what the emulator reads.
type SdkSteer = Extract<ResponsesClientEvent, { type: 'response.steer' }>;
type SdkSteerMessage = Omit<Extract<Exclude<SdkSteer['input'], string>[number], { type: 'message' }>, 'id' | 'status'>;
assertTrue<IsAssignable<Omit<SdkSteer, 'input'> & { input: string | SdkSteerMessage[] }, SteerEvent>>();
