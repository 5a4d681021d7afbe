import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type {
  Response,
  ResponseApplyPatchToolCall,
  ResponseCreateParamsNonStreaming,
  ResponseFunctionShellCallOutputContent,
  ResponseFunctionShellToolCall,
  ResponseInputItem,
  ResponseOutputItem,
} from 'openai/resources/responses/responses';
import { expect } from 'vitest';
import { withoutParseFields } from './sdk-parse-fields.ts';

/** What the client runs for each kind of call it owns; a missing handler fails the loop. */
export interface ClientHandlers {
  /** Function tools by `name`, or `namespace.name`; the return value is sent as JSON unless it is a string. */
  readonly functions?: Readonly<Record<string, (args: any) => unknown>>;
  /** Custom tools by `name`, or `namespace.name`: free-form input in, text out. */
  readonly custom?: Readonly<Record<string, (input: string) => string>>;
  /** The local shell: one result per command. */
  readonly shell?: (
    action: ResponseFunctionShellToolCall['action'],
  ) => ResponseFunctionShellCallOutputContent[] | Promise<ResponseFunctionShellCallOutputContent[]>;
  /** apply_patch: the file change, applied or refused. */
  readonly applyPatch?: (
    operation: ResponseApplyPatchToolCall['operation'],
  ) => { status: 'completed' | 'failed'; output?: string } | Promise<{ status: 'completed' | 'failed'; output?: string }>;
  /** MCP approval requests: approve (true), deny (false), or deny with a reason. */
  readonly approve?: (request: ResponseOutputItem.McpApprovalRequest) => boolean | { readonly approve: boolean; readonly reason?: string };
}

export interface LoopOptions {
  /** Send the whole conversation each turn (`store: false`, the default) or continue with previous_response_id. */
  readonly store?: boolean;
  /** Read each response through the SDK's stream helper instead of a plain create. */
  readonly stream?: boolean;
  /** Stops a loop that would never end. */
  readonly maxTurns?: number;
}

export interface LoopResult {
  readonly text: string;
  readonly responses: readonly Response[];
  /** Every item the client sent after the first turn's input. */
  readonly sent: readonly ResponseInputItem[];
}

function qualified(call: { name: string; namespace?: string }): string {
  return call.namespace === undefined ? call.name : `${call.namespace}.${call.name}`;
}

/**
 * A client loop as a user writes one against the hosted API: run every call the response asks
 * the client for, copy `caller` onto each output, and send the output back until a message ends
 * the turn. Every response's items must come through the SDK's `toResponseInputItems` unchanged.
 */
export async function agentLoop(
  client: OpenAI,
  params: ResponseCreateParamsNonStreaming,
  handlers: ClientHandlers,
  options: LoopOptions = {},
): Promise<LoopResult> {
  const responses: Response[] = [];
  const sent: ResponseInputItem[] = [];
  const first = typeof params.input === 'string' ? [{ role: 'user' as const, content: params.input }] : [...(params.input ?? [])];
  let conversation: ResponseInputItem[] = first;
  let previous: string | undefined;
  for (let turn = 0; turn < (options.maxTurns ?? 20); turn++) {
    const { stream: _stream, ...rest } = params;
    const body = {
      ...rest,
      store: options.store ?? false,
      input: conversation,
      ...(previous === undefined ? {} : { previous_response_id: previous }),
    };
    const response = options.stream ? await client.responses.stream(body).finalResponse() : await client.responses.create(body);
    responses.push(response);
    expect(response.status, JSON.stringify(response.output)).toBe('completed');
    expect(toResponseInputItems(response.output)).toEqual(withoutParseFields(response.output));

    const outputs: ResponseInputItem[] = [];
    for (const item of response.output) {
      if (item.type === 'function_call') {
        const run = handlers.functions?.[qualified(item)];
        if (!run) throw new Error(`no client handler for function ${qualified(item)}`);
        const value = await run(JSON.parse(item.arguments));
        outputs.push({
          type: 'function_call_output',
          call_id: item.call_id,
          output: typeof value === 'string' ? value : JSON.stringify(value),
          caller: item.caller ?? null,
        });
      } else if (item.type === 'custom_tool_call') {
        const run = handlers.custom?.[qualified(item)];
        if (!run) throw new Error(`no client handler for custom tool ${qualified(item)}`);
        outputs.push({ type: 'custom_tool_call_output', call_id: item.call_id, output: run(item.input), caller: item.caller ?? null });
      } else if (item.type === 'shell_call') {
        // The hosted shell's calls come with their output: only a local shell's are the client's.
        if (item.environment?.type !== 'local') continue;
        if (!handlers.shell) throw new Error('no client handler for the shell');
        outputs.push({ type: 'shell_call_output', call_id: item.call_id, output: await handlers.shell(item.action), caller: item.caller ?? null });
      } else if (item.type === 'apply_patch_call') {
        if (!handlers.applyPatch) throw new Error('no client handler for apply_patch');
        const { status, output } = await handlers.applyPatch(item.operation);
        outputs.push({
          type: 'apply_patch_call_output',
          call_id: item.call_id,
          status,
          ...(output === undefined ? {} : { output }),
          caller: item.caller ?? null,
        });
      } else if (item.type === 'mcp_approval_request') {
        if (!handlers.approve) throw new Error(`no client handler for approving ${item.server_label}.${item.name}`);
        const decision = handlers.approve(item);
        const { approve, reason } = typeof decision === 'boolean' ? { approve: decision, reason: undefined } : decision;
        outputs.push({ type: 'mcp_approval_response', approval_request_id: item.id, approve, ...(reason === undefined ? {} : { reason }) });
      }
    }
    sent.push(...outputs);
    if (outputs.length === 0 && response.output.some((item) => item.type === 'message')) {
      return { text: response.output_text, responses, sent };
    }
    if (options.store) {
      previous = response.id;
      conversation = outputs;
    } else {
      conversation = [...conversation, ...toResponseInputItems(response.output), ...outputs];
    }
  }
  throw new Error('the loop did not end');
}
