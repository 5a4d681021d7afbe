import type { OutputItem } from '../../../schemas/items.ts';
import type { RequiredInput } from '../../../schemas/steering.ts';
import { MCP_APPROVAL, TOOL_KINDS } from './tool-kinds.ts';

/**
 * What a response's output leaves for the client to answer, as the stubs of openai 7.x's
 * `response.steer.pending` name them (identifying fields only): each call of a client-owned
 * kind (a program's or the model's own), and each MCP call held for approval. A shell call whose
 * output is in the same response ran on the emulator's hosted shell, and is owed nothing.
 */
export function requiredInputs(output: readonly OutputItem[]): RequiredInput[] {
  const answered = new Set(output.flatMap((item) => (item.type === TOOL_KINDS.shell.output.type ? [item.call_id] : [])));
  return output.flatMap((item): RequiredInput[] => {
    // The call's `caller` goes on its stub (an extension), as the output that answers it must carry it.
    const caller = 'caller' in item && item.caller ? { caller: item.caller } : {};
    switch (item.type) {
      case TOOL_KINDS.function.call.type:
        return [{ type: TOOL_KINDS.function.output.type, call_id: item.call_id, name: item.name, ...caller }];
      case TOOL_KINDS.custom.call.type:
        return [{ type: TOOL_KINDS.custom.output.type, call_id: item.call_id, ...caller }];
      case TOOL_KINDS.apply_patch.call.type:
        return [{ type: TOOL_KINDS.apply_patch.output.type, call_id: item.call_id, ...caller }];
      case TOOL_KINDS.shell.call.type:
        return answered.has(item.call_id) ? [] : [{ type: TOOL_KINDS.shell.output.type, call_id: item.call_id, ...caller }];
      case MCP_APPROVAL.request.type:
        return [{ type: MCP_APPROVAL.response.type, approval_request_id: item.id, ...caller }];
      default:
        return [];
    }
  });
}
