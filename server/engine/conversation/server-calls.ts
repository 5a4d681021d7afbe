import type { ProgramTool, SealingKeys, ToolCallRequest } from '../../../runtime/index.ts';
import type {
  Caller,
  EmittedCodeInterpreterCall,
  EmittedMcpApprovalRequest,
  EmittedMcpCall,
  EmittedShellCall,
  EmittedShellCallOutput,
  McpCallError,
  McpCallItem,
  OutputItem,
} from '../../../schemas/items.ts';
import type { McpClients } from '../../platform/mcp/mcp-client.ts';
import { errorContentText } from '../../platform/mcp/mcp-output.ts';
import { callItemId } from '../../platform/ids.ts';
import { CODE_INTERPRETER_REFUSAL, type HostedTools } from '../stand-ins/hosted-tools.ts';
import { sealCall, type CallAnswer } from './call-seals.ts';
import { mcpApprovalRequired } from './mcp-policy.ts';
import { kindOfProgramTool, MCP_APPROVAL, TOOL_KINDS } from './tool-kinds.ts';
import { EMULATED_CONTAINER_ID, type McpServer, type ToolSet } from './tool-set.ts';

const { hosted_shell: HOSTED_SHELL, code_interpreter: CODE_INTERPRETER, mcp: MCP } = TOOL_KINDS;

/** The emulator's side of calls it answers itself. */
export interface ServerCallServices {
  readonly sealingKeys: SealingKeys;
  readonly hosted: HostedTools;
  readonly mcp: McpClients;
  /** How long one MCP operation (listing, or a call) may take, connecting included. */
  readonly mcpTimeoutMs: number;
  /** The request's, when it can be cancelled (a background response): aborted, no call starts and a running MCP call is abandoned. */
  readonly signal?: AbortSignal;
  /** The built-in tool calls the response may still make (its `max_tool_calls`); absent, no limit. */
  readonly builtInCalls?: BuiltInCallBudget;
}

/** What is left of a response's `max_tool_calls`: each built-in call a program makes takes one. */
export interface BuiltInCallBudget {
  left: number;
}

/** The items answering one call, and the answer; no answer means it waits for the user's approval. */
export interface AnsweredCall {
  readonly items: OutputItem[];
  readonly answer?: CallAnswer;
}

interface CallContext {
  readonly programCallId: string;
  readonly toolSet: ToolSet;
  readonly services: ServerCallServices;
}

/** The sealed id of a call the emulator made, with the answer its item carries, or its batch's end, when the id seals one. */
function sealedId(
  call: ToolCallRequest,
  context: CallContext,
  prefix: string,
  sealed: { readonly answer?: CallAnswer; readonly batchEnd?: number } = {},
): string {
  return sealCall(
    context.services.sealingKeys,
    { programCallId: context.programCallId, seq: call.seq, tool: call.tool, input: call.argumentsJson, ...sealed },
    prefix,
  );
}

function truncated(text: string, limit: number | null): string {
  return limit === null || text.length <= limit ? text : text.slice(0, limit);
}

type ShellAction = { commands: string[]; timeout_ms: number | null; max_output_length: number | null };

/** The hosted shell: scripted results per command, as a shell_call and its shell_call_output. */
function hostedShell(call: ToolCallRequest, context: CallContext, caller: Caller): AnsweredCall {
  const action = JSON.parse(call.argumentsJson) as ShellAction;
  const output = action.commands.map((command) => {
    const result = context.services.hosted.shell(command);
    return {
      stdout: truncated(result.stdout, action.max_output_length),
      stderr: truncated(result.stderr, action.max_output_length),
      outcome: result.exit_code === 'timeout' ? { type: 'timeout' as const } : { type: 'exit' as const, exit_code: result.exit_code },
    };
  });
  return hostedShellAnswer(call, context, caller, output);
}

/** A shell call and its output items, with `output` (one entry per command) as its answer. */
function hostedShellAnswer(call: ToolCallRequest, context: CallContext, caller: Caller, output: EmittedShellCallOutput['output']): AnsweredCall {
  const action = JSON.parse(call.argumentsJson) as ShellAction;
  const callId = sealedId(call, context, HOSTED_SHELL.sealedPrefix);
  const shellCall: EmittedShellCall = {
    type: HOSTED_SHELL.call.type,
    id: callItemId(callId, HOSTED_SHELL.call.idPrefix),
    call_id: callId,
    action: { commands: action.commands, timeout_ms: action.timeout_ms, max_output_length: action.max_output_length },
    status: 'completed',
    environment: { type: 'container_reference', container_id: context.toolSet.hostedShellContainer ?? EMULATED_CONTAINER_ID },
    caller,
  };
  const answer = { output: JSON.stringify(output) };
  const shellOutput: EmittedShellCallOutput = {
    type: HOSTED_SHELL.output.type,
    id: sealedId(call, context, HOSTED_SHELL.output.idPrefix, { answer }),
    call_id: callId,
    output,
    max_output_length: action.max_output_length,
    status: 'completed',
    caller,
  };
  return { items: [shellCall, shellOutput], answer };
}

/** What a code_interpreter_call gives the program: its outputs, or, for a failed run, an error. */
export function codeInterpreterAnswer(item: {
  readonly status: string;
  readonly outputs: readonly ({ type: 'logs'; logs: string } | { type: 'image'; url: string })[] | null;
}): CallAnswer {
  if (item.status === 'failed') {
    const logs = (item.outputs ?? []).flatMap((output) => (output.type === 'logs' ? [output.logs] : []));
    return { error: logs.join('\n') || 'The code interpreter run failed' };
  }
  return { output: JSON.stringify(item.outputs ?? []) };
}

/** code_interpreter: the scripted output for the code, or a failed run saying nothing was scripted. */
function codeInterpreter(call: ToolCallRequest, context: CallContext, caller: Caller): AnsweredCall {
  const { code } = JSON.parse(call.argumentsJson) as { code: string };
  const result = context.services.hosted.codeInterpreter(code);
  return result
    ? codeInterpreterRun(
        call,
        context,
        caller,
        [
          ...(result.logs === '' && (result.images?.length ?? 0) > 0 ? [] : [{ type: 'logs' as const, logs: result.logs }]),
          ...(result.images ?? []).map((url) => ({ type: 'image' as const, url })),
        ],
        'completed',
      )
    : codeInterpreterRun(call, context, caller, [{ type: 'logs', logs: CODE_INTERPRETER_REFUSAL }], 'failed');
}

/** A code_interpreter_call item with these outputs, and the answer it gives the program. */
function codeInterpreterRun(
  call: ToolCallRequest,
  context: CallContext,
  caller: Caller,
  outputs: NonNullable<EmittedCodeInterpreterCall['outputs']>,
  status: 'completed' | 'failed',
): AnsweredCall {
  const { code } = JSON.parse(call.argumentsJson) as { code: string };
  const run: Omit<EmittedCodeInterpreterCall, 'id'> = {
    type: CODE_INTERPRETER.call.type,
    code,
    container_id: context.toolSet.codeInterpreterContainer ?? EMULATED_CONTAINER_ID,
    outputs,
    status,
    caller,
  };
  const answer = codeInterpreterAnswer(run);
  return { items: [{ ...run, id: sealedId(call, context, CODE_INTERPRETER.sealedPrefix, { answer }) }], answer };
}

/** What an mcp_call gives the program: its output, or its error's message. */
export function mcpCallAnswer(item: Pick<McpCallItem, 'output' | 'error' | 'server_label' | 'name'>): CallAnswer {
  if (!item.error) return { output: item.output ?? '' };
  return typeof item.error === 'string' ? { error: item.error } : { error: mcpErrorMessage(item), detail: item.error };
}

/**
 * The message a program's call rejects with, read from the item alone (a replay reads it back):
 * the error's own message, or the text of a tool's error content. A string is an error stored
 * before errors were structured.
 */
function mcpErrorMessage({ error, server_label: label, name }: Pick<McpCallItem, 'error' | 'server_label' | 'name'>): string {
  if (typeof error === 'string') return error;
  if (!error) return '';
  if (error.type !== 'mcp_tool_execution_error') return error.message;
  return errorContentText(error.content) || `MCP server '${label}': tool '${name}' reported an error without a message`;
}

/** The server of an MCP tool id (`server_label.name`), and the tool's name. */
function mcpTarget(tool: ProgramTool, toolSet: ToolSet): { server: McpServer | undefined; name: string } {
  return { server: toolSet.mcpServers.get(tool.namespace ?? ''), name: tool.name };
}

/**
 * Makes an MCP call now and reports it as an mcp_call item. `approvalRequestId` is set for a
 * call the user approved. A server missing from the request fails the call.
 */
export async function runMcpCall(
  call: ToolCallRequest,
  tool: ProgramTool,
  context: CallContext,
  caller: Caller,
  approvalRequestId: string | null,
): Promise<AnsweredCall> {
  const { server, name } = mcpTarget(tool, context.toolSet);
  const label = tool.namespace ?? '';
  let result: { readonly output: string; readonly error?: undefined } | { readonly output?: undefined; readonly error: McpCallError };
  if (!server?.definition.server_url) {
    // Nothing was sent: the request itself lacks the server, a client error.
    const message = `MCP server '${label}' is not among this request's tools (or has no server_url), so tools.${call.tool} could not be called`;
    result = { error: { type: 'http_error', code: 400, message } };
  } else {
    const { server_url: serverUrl, headers, authorization } = server.definition;
    const outcome = await context.services.mcp.callTool(
      { serverLabel: label, serverUrl, ...(headers ? { headers } : {}), ...(authorization === undefined ? {} : { authorization }) },
      name,
      JSON.parse(call.argumentsJson) as Record<string, unknown>,
      { timeoutMs: context.services.mcpTimeoutMs, ...(context.services.signal ? { signal: context.services.signal } : {}) },
    );
    result = 'error' in outcome ? { error: outcome.error } : { output: outcome.output };
  }
  const made: Omit<EmittedMcpCall, 'id'> = {
    type: MCP.call.type,
    server_label: label,
    name,
    arguments: call.argumentsJson,
    output: result.output ?? null,
    error: result.error ?? null,
    status: result.error === undefined ? 'completed' : 'failed',
    approval_request_id: approvalRequestId,
    caller,
  };
  // What the program gets is read back from the item, as a replay reads it.
  const answer = mcpCallAnswer(made);
  return { items: [{ ...made, id: sealedId(call, context, MCP.sealedPrefix, { answer }) }], answer };
}

/** An MCP call its server's require_approval holds: an mcp_approval_request, and no answer yet. */
function approvalRequest(call: ToolCallRequest, tool: ProgramTool, context: CallContext, caller: Caller, batchEnd: number): AnsweredCall {
  const item: EmittedMcpApprovalRequest = {
    type: MCP_APPROVAL.request.type,
    // The id seals the batch too: a later resume can tell an approval its program acted on already.
    id: sealedId(call, context, MCP_APPROVAL.request.idPrefix, { batchEnd }),
    server_label: tool.namespace ?? '',
    name: tool.name,
    arguments: call.argumentsJson,
    caller,
  };
  return { items: [item] };
}

/**
 * A built-in call past the response's `max_tool_calls`: not made. The hosted API ignores such a
 * call of the model's; a program is still owed an answer, so its call fails, as an item of the
 * tool's kind saying why (sealed, so that a replay reads the same failure back).
 */
function notMade(call: ToolCallRequest, tool: ProgramTool, context: CallContext, caller: Caller): AnsweredCall {
  const message = `max_tool_calls was reached in this response: tools.${call.tool} was not called`;
  switch (kindOfProgramTool(tool)) {
    case 'hosted_shell': {
      const action = JSON.parse(call.argumentsJson) as { commands: string[] };
      return hostedShellAnswer(
        call,
        context,
        caller,
        action.commands.map(() => ({ stdout: '', stderr: message, outcome: { type: 'exit' as const, exit_code: 1 } })),
      );
    }
    case 'code_interpreter':
      return codeInterpreterRun(call, context, caller, [{ type: 'logs', logs: message }], 'failed');
    default: {
      const made: Omit<EmittedMcpCall, 'id'> = {
        type: MCP.call.type,
        server_label: tool.namespace ?? '',
        name: tool.name,
        arguments: call.argumentsJson,
        output: null,
        error: { type: 'http_error', code: 429, message },
        status: 'failed',
        approval_request_id: null,
        caller,
      };
      const answer = mcpCallAnswer(made);
      return { items: [{ ...made, id: sealedId(call, context, MCP.sealedPrefix, { answer }) }], answer };
    }
  }
}

/** Answers a call of a tool the emulator runs: the hosted shell, code_interpreter, or an MCP tool. */
export async function answerServerCall(
  call: ToolCallRequest,
  tool: ProgramTool,
  programCallId: string,
  toolSet: ToolSet,
  services: ServerCallServices,
  /** The seq of the last call of `call`'s batch. */
  batchEnd: number,
): Promise<AnsweredCall> {
  const context: CallContext = { programCallId, toolSet, services };
  const caller: Caller = { type: 'program', caller_id: programCallId };
  const budget = services.builtInCalls;
  if (budget) {
    if (budget.left <= 0) return notMade(call, tool, context, caller);
    budget.left -= 1;
  }
  switch (kindOfProgramTool(tool)) {
    case 'hosted_shell':
      return hostedShell(call, context, caller);
    case 'code_interpreter':
      return codeInterpreter(call, context, caller);
    case 'mcp': {
      const { server, name } = mcpTarget(tool, toolSet);
      if (server && mcpApprovalRequired(server.definition, { name, annotations: toolSet.tools.get(call.tool)?.annotations })) {
        return approvalRequest(call, tool, context, caller, batchEnd);
      }
      return runMcpCall(call, tool, context, caller, null);
    }
    default:
      throw new TypeError(`tools.${call.tool} is answered by the client, not the emulator`);
  }
}
