import { describe, expect, it } from 'vitest';
import type { Caller, ContentPart, ConversationItem } from '../../schemas/items.ts';
import type { ApiErrorCode } from '../../schemas/error-codes.ts';
import type { Tool } from '../../schemas/tools.ts';
import { ApiError } from '../../server/platform/api-error.ts';
import type { ClientChecks } from '../../server/platform/config.ts';
import { locateItem, readConversation, type ConversationState, type ConversationTail } from '../../server/engine/conversation/client-loop.ts';

// readConversation on its own, item by item: what it reads out of a conversation, every mistake
// it refuses (strict) or lets through and notes (lenient), and the tail a turn reacts to. The
// HTTP tests (test/client-loop.test.ts) cover the same rules end to end with real programs.

// ---- items -----------------------------------------------------------------------------------

const byProgram = (callId: string): Caller => ({ type: 'program', caller_id: callId });
const DIRECT: Caller = { type: 'direct' };
/** `caller` when given; left out when not. */
const callerField = (caller: Caller | null | undefined) => (caller === undefined ? {} : { caller });

function user(content: string | ContentPart[], id = 'msg_user'): ConversationItem {
  return { type: 'message', id, role: 'user', content };
}
function assistant(content: string, id = 'msg_assistant'): ConversationItem {
  return { type: 'message', id, role: 'assistant', content };
}
function program(callId: string, code = `// ${callId}`, id = `prog_${callId}`): ConversationItem {
  return { type: 'program', id, call_id: callId, code, fingerprint: 'fp' };
}
function programOutput(callId: string, id = `po_${callId}`, status: 'completed' | 'incomplete' = 'completed'): ConversationItem {
  return { type: 'program_output', id, call_id: callId, result: `result of ${callId}`, status };
}
function functionCall(callId: string, caller?: Caller | null, id = `fc_${callId}`): ConversationItem {
  return { type: 'function_call', id, call_id: callId, name: 'lookup', arguments: '{}', ...callerField(caller) };
}
function functionOutput(callId: string, output: string | ContentPart[], caller?: Caller | null, id = `fco_${callId}_${String(output)}`): ConversationItem {
  return { type: 'function_call_output', id, call_id: callId, output, ...callerField(caller) };
}
function customCall(callId: string, caller?: Caller): ConversationItem {
  return { type: 'custom_tool_call', id: `ctc_${callId}`, call_id: callId, name: 'note', input: 'hello', ...callerField(caller) };
}
function customOutput(callId: string, output: string, caller?: Caller | null): ConversationItem {
  return { type: 'custom_tool_call_output', id: `ctco_${callId}`, call_id: callId, output, ...callerField(caller) };
}
function shellCall(callId: string, caller?: Caller): ConversationItem {
  return { type: 'shell_call', id: `sh_${callId}`, call_id: callId, action: { commands: ['ls'] }, ...callerField(caller) };
}
function shellOutput(callId: string, caller?: Caller): ConversationItem {
  return {
    type: 'shell_call_output',
    id: `sho_${callId}`,
    call_id: callId,
    output: [{ stdout: 'a.txt\n', stderr: '', outcome: { type: 'exit', exit_code: 0 } }],
    ...callerField(caller),
  };
}
function patchCall(callId: string, caller?: Caller): ConversationItem {
  return {
    type: 'apply_patch_call',
    id: `apc_${callId}`,
    call_id: callId,
    operation: { type: 'delete_file', path: 'a.txt' },
    status: 'completed',
    ...callerField(caller),
  };
}
function patchOutput(callId: string, caller?: Caller): ConversationItem {
  return { type: 'apply_patch_call_output', id: `apco_${callId}`, call_id: callId, status: 'failed', output: 'no such file', ...callerField(caller) };
}
function codeInterpreterCall(id: string, caller?: Caller): ConversationItem {
  return { type: 'code_interpreter_call', id, code: '1 + 1', container_id: 'cntr_1', outputs: [], status: 'completed', ...callerField(caller) };
}
function mcpCall(id: string, caller?: Caller, approvalRequestId?: string): ConversationItem {
  return {
    type: 'mcp_call',
    id,
    server_label: 'crm',
    name: 'find',
    arguments: '{}',
    output: 'found',
    ...(approvalRequestId === undefined ? {} : { approval_request_id: approvalRequestId }),
    ...callerField(caller),
  };
}
function approvalRequest(id: string, caller?: Caller): ConversationItem {
  return { type: 'mcp_approval_request', id, server_label: 'crm', name: 'delete', arguments: '{}', ...callerField(caller) };
}
function approvalResponse(requestId: string, approve: boolean, id = `mcpra_${requestId}_${approve}`, caller?: Caller | null): ConversationItem {
  return { type: 'mcp_approval_response', id, approval_request_id: requestId, approve, ...callerField(caller) };
}
function listTools(label: string, id: string): ConversationItem {
  return { type: 'mcp_list_tools', id, server_label: label, tools: [{ name: 'find', input_schema: {} }] };
}
function searchCall(callId: string | null, execution?: 'server' | 'client', id = `tsc_${callId}`): ConversationItem {
  return { type: 'tool_search_call', id, call_id: callId, arguments: { query: 'crm' }, ...(execution === undefined ? {} : { execution }) };
}
function searchOutput(callId: string | null, names: string[], id = `tso_${callId}_${names.join('_')}`): ConversationItem {
  const tools: Tool[] = names.map((name) => ({ type: 'function', name, defer_loading: true }));
  return { type: 'tool_search_output', id, call_id: callId, tools, execution: 'client' };
}

// ---- what a state is read as -------------------------------------------------------------------

/** The parts of a tail a turn uses, by id. */
function tailOf(tail: ConversationTail): unknown {
  switch (tail.kind) {
    case 'after_program':
      return { kind: tail.kind, output: tail.output.id, code: tail.code };
    case 'after_calls':
      return { kind: tail.kind, calls: tail.calls.map((direct) => direct.call.call_id) };
    default:
      return { kind: tail.kind };
  }
}

const idOf = (item: { id: string; call_id?: string }): string => item.id;

/** A state as plain data, items named by their `id`: what the tables below spell out by hand. */
function summary(state: ConversationState) {
  return {
    programs: state.programs.map((thread) => ({
      program: thread.program.id,
      index: thread.index,
      calls: thread.calls.map(idOf),
      outputs: Object.fromEntries([...thread.outputs].map(([callId, output]) => [callId, output.id])),
      approved: Object.fromEntries([...thread.approved].map(([requestId, call]) => [requestId, call.id])),
      closedBy: thread.closedBy?.id ?? null,
    })),
    approvals: Object.fromEntries([...state.approvals].map(([requestId, response]) => [requestId, response.approve])),
    mcpListings: Object.fromEntries([...state.mcpListings].map(([label, listing]) => [label, listing.id])),
    loadedTools: state.loadedTools.map(({ tool, param }) => ({ name: 'name' in tool ? tool.name : tool.type, param })),
    directCalls: state.directCalls.map((direct) => ({ call: direct.call.id, index: direct.index, output: direct.output ?? null })),
    lastUserText: state.lastUserText,
    userTurns: state.userTurns,
    tail: tailOf(state.tail),
    tolerated: state.tolerated,
  };
}
type Summary = ReturnType<typeof summary>;

/** An empty conversation, read. */
const NOTHING: Summary = {
  programs: [],
  approvals: {},
  mcpListings: {},
  loadedTools: [],
  directCalls: [],
  lastUserText: '',
  userTurns: 0,
  tail: { kind: 'user_turn' },
  tolerated: [],
};
/** What most rows start from: one user turn that said 'go'. */
const GO = { ...NOTHING, lastUserText: 'go', userTurns: 1 };

/** The ApiError readConversation throws (a return, or any other throw, fails the test). */
function errorOf(items: ConversationItem[], mode: ClientChecks = 'strict', inputStart = 0): ApiError {
  let state: ConversationState;
  try {
    state = readConversation(items, mode, inputStart);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  }
  throw new Error(`expected an ApiError, but the conversation was read: ${JSON.stringify(summary(state))}`);
}

interface Expected {
  readonly code: ApiErrorCode;
  readonly param: string;
  /** The part of the message that says what was wrong and where. */
  readonly message: string;
}

function expectError(error: ApiError, expected: Expected): void {
  expect({ code: error.code, param: error.param }).toEqual({ code: expected.code, param: expected.param });
  expect(error.status).toBe(400);
  expect(error.message).toContain(expected.message);
}

// ---- what a conversation is read as ------------------------------------------------------------

describe('readConversation reads', () => {
  it.each<[name: string, items: ConversationItem[], inputStart: number, expected: Summary]>([
    ['an empty conversation', [], 0, NOTHING],
    ['one user message', [user('go')], 0, GO],
    [
      "the last user message's text, from its text parts only, and counts user turns",
      [
        user('first'),
        assistant('ok'),
        user([
          { type: 'input_text', text: 'look at ' },
          { type: 'input_image', image_url: 'https://example.com/cat.png' },
          { type: 'input_text', text: 'this' },
        ]),
      ],
      0,
      { ...NOTHING, lastUserText: 'look at this', userTurns: 2 },
    ],
    ['a conversation the assistant answered last', [user('go'), assistant('done')], 0, { ...GO, tail: { kind: 'answered' } }],
    [
      'a system or developer message as the last one: a user turn',
      [user('go'), assistant('done'), { type: 'message', id: 'msg_dev', role: 'developer', content: 'again' }],
      0,
      GO,
    ],
    [
      "a paused program's calls and their outputs, caller copied",
      [
        user('go'),
        program('p1'),
        functionCall('c1', byProgram('p1')),
        functionCall('c2', byProgram('p1')),
        functionOutput('c1', '1', byProgram('p1')),
        functionOutput('c2', '2', byProgram('p1')),
      ],
      0,
      {
        ...GO,
        programs: [{ program: 'prog_p1', index: 1, calls: ['fc_c1', 'fc_c2'], outputs: { c1: 'fco_c1_1', c2: 'fco_c2_2' }, approved: {}, closedBy: null }],
      },
    ],
    [
      'every kind of client call a program makes, each answered with its own output type',
      [
        user('go'),
        program('p1'),
        customCall('c1', byProgram('p1')),
        shellCall('c2', byProgram('p1')),
        patchCall('c3', byProgram('p1')),
        customOutput('c1', 'noted', byProgram('p1')),
        shellOutput('c2', byProgram('p1')),
        patchOutput('c3', byProgram('p1')),
      ],
      0,
      {
        ...GO,
        programs: [
          {
            program: 'prog_p1',
            index: 1,
            calls: ['ctc_c1', 'sh_c2', 'apc_c3'],
            outputs: { c1: 'ctco_c1', c2: 'sho_c2', c3: 'apco_c3' },
            approved: {},
            closedBy: null,
          },
        ],
      },
    ],
    [
      'the calls the emulator answered for a program, which need nothing from the client',
      [user('go'), program('p1'), codeInterpreterCall('ci_1', byProgram('p1')), mcpCall('mcp_1', byProgram('p1'))],
      0,
      { ...GO, programs: [{ program: 'prog_p1', index: 1, calls: ['ci_1', 'mcp_1'], outputs: {}, approved: {}, closedBy: null }] },
    ],
    [
      "a program's approval request and the user's answer",
      [user('go'), program('p1'), approvalRequest('mcpr_1', byProgram('p1')), approvalResponse('mcpr_1', false)],
      0,
      { ...GO, approvals: { mcpr_1: false }, programs: [{ program: 'prog_p1', index: 1, calls: ['mcpr_1'], outputs: {}, approved: {}, closedBy: null }] },
    ],
    [
      'the mcp_call that carried out an approved request, by the request',
      [user('go'), program('p1'), approvalRequest('mcpr_1', byProgram('p1')), approvalResponse('mcpr_1', true), mcpCall('mcp_1', byProgram('p1'), 'mcpr_1')],
      0,
      {
        ...GO,
        approvals: { mcpr_1: true },
        programs: [{ program: 'prog_p1', index: 1, calls: ['mcpr_1'], outputs: {}, approved: { mcpr_1: 'mcp_1' }, closedBy: null }],
      },
    ],
    [
      'an approved request carried out, without the answer resent (the mcp_call stands for it)',
      [user('go'), program('p1'), approvalRequest('mcpr_1', byProgram('p1')), mcpCall('mcp_1', byProgram('p1'), 'mcpr_1')],
      0,
      { ...GO, programs: [{ program: 'prog_p1', index: 1, calls: ['mcpr_1'], outputs: {}, approved: { mcpr_1: 'mcp_1' }, closedBy: null }] },
    ],
    [
      "an answer that copies its request's caller, as the Agents SDK sends it",
      [user('go'), program('p1'), approvalRequest('mcpr_1', byProgram('p1')), approvalResponse('mcpr_1', true, 'mcpra_1', byProgram('p1'))],
      0,
      { ...GO, approvals: { mcpr_1: true }, programs: [{ program: 'prog_p1', index: 1, calls: ['mcpr_1'], outputs: {}, approved: {}, closedBy: null }] },
    ],
    [
      'a direct approval request and its answer, outside any program',
      [user('go'), approvalRequest('mcpr_1'), approvalResponse('mcpr_1', true)],
      0,
      { ...GO, approvals: { mcpr_1: true } },
    ],
    ['direct server calls: no program has them', [user('go'), codeInterpreterCall('ci_1'), mcpCall('mcp_1', DIRECT)], 0, GO],
    [
      'a finished program, and its code for the tail',
      [user('go'), program('p1', 'text(1)'), functionCall('c1', byProgram('p1')), functionOutput('c1', '1', byProgram('p1')), programOutput('p1')],
      0,
      {
        ...GO,
        programs: [{ program: 'prog_p1', index: 1, calls: ['fc_c1'], outputs: { c1: 'fco_c1_1' }, approved: {}, closedBy: 'po_p1' }],
        tail: { kind: 'after_program', output: 'po_p1', code: 'text(1)' },
      },
    ],
    [
      'a program the client closed with calls unanswered: they need no output',
      [user('go'), program('p1'), functionCall('c1', byProgram('p1')), approvalRequest('mcpr_1', byProgram('p1')), programOutput('p1')],
      0,
      {
        ...GO,
        programs: [{ program: 'prog_p1', index: 1, calls: ['fc_c1', 'mcpr_1'], outputs: {}, approved: {}, closedBy: 'po_p1' }],
        tail: { kind: 'after_program', output: 'po_p1', code: '// p1' },
      },
    ],
    [
      'two programs, each with its own calls',
      [
        user('go'),
        program('p1'),
        program('p2'),
        functionCall('c1', byProgram('p1')),
        functionCall('c2', byProgram('p2')),
        functionOutput('c2', 'b', byProgram('p2')),
        functionOutput('c1', 'a', byProgram('p1')),
      ],
      0,
      {
        ...GO,
        programs: [
          { program: 'prog_p1', index: 1, calls: ['fc_c1'], outputs: { c1: 'fco_c1_a' }, approved: {}, closedBy: null },
          { program: 'prog_p2', index: 2, calls: ['fc_c2'], outputs: { c2: 'fco_c2_b' }, approved: {}, closedBy: null },
        ],
      },
    ],
    [
      'a direct function call and its output, as the program would get it',
      [user('go'), functionCall('c1'), functionOutput('c1', 'sunny')],
      0,
      { ...GO, directCalls: [{ call: 'fc_c1', index: 1, output: 'sunny' }], tail: { kind: 'after_calls', calls: ['c1'] } },
    ],
    [
      "a direct call answered with content parts: their texts joined, an image as a link, a refusal's text",
      [
        user('go'),
        functionCall('c1', DIRECT),
        functionOutput(
          'c1',
          [
            { type: 'input_text', text: 'see ' },
            { type: 'input_image', image_url: 'https://example.com/a.png' },
            { type: 'input_image', file_id: 'file_1' },
            { type: 'refusal', refusal: ' no' },
          ],
          DIRECT,
          'fco_parts',
        ),
      ],
      0,
      {
        ...GO,
        directCalls: [{ call: 'fc_c1', index: 1, output: 'see ![image](https://example.com/a.png)![image](file_1) no' }],
        tail: { kind: 'after_calls', calls: ['c1'] },
      },
    ],
    [
      "direct shell, apply_patch and custom calls: the shell's results and the patch's status as JSON, the custom tool's text",
      [user('go'), shellCall('c1'), patchCall('c2'), customCall('c3'), shellOutput('c1'), patchOutput('c2'), customOutput('c3', 'noted')],
      0,
      {
        ...GO,
        directCalls: [
          { call: 'sh_c1', index: 1, output: '[{"stdout":"a.txt\\n","stderr":"","outcome":{"type":"exit","exit_code":0}}]' },
          { call: 'apc_c2', index: 2, output: '{"status":"failed","output":"no such file"}' },
          { call: 'ctc_c3', index: 3, output: 'noted' },
        ],
        tail: { kind: 'after_calls', calls: ['c1', 'c2', 'c3'] },
      },
    ],
    [
      'direct calls before and after the last message: the tail has only those after it',
      [
        user('first', 'msg_1'),
        functionCall('c1'),
        functionOutput('c1', 'a'),
        assistant('ok'),
        user('go', 'msg_2'),
        functionCall('c2'),
        functionOutput('c2', 'b'),
      ],
      0,
      {
        ...GO,
        userTurns: 2,
        directCalls: [
          { call: 'fc_c1', index: 1, output: 'a' },
          { call: 'fc_c2', index: 5, output: 'b' },
        ],
        tail: { kind: 'after_calls', calls: ['c2'] },
      },
    ],
    [
      'the newest of a program_output and direct outputs decides the tail',
      [user('go'), program('p1'), programOutput('p1'), functionCall('c1'), functionOutput('c1', 'x')],
      0,
      {
        ...GO,
        programs: [{ program: 'prog_p1', index: 1, calls: [], outputs: {}, approved: {}, closedBy: 'po_p1' }],
        directCalls: [{ call: 'fc_c1', index: 3, output: 'x' }],
        tail: { kind: 'after_calls', calls: ['c1'] },
      },
    ],
    [
      "a program's outputs at the end: no tail of their own (the program resumes)",
      [user('go'), program('p1'), functionCall('c1', byProgram('p1')), functionOutput('c1', '1', byProgram('p1'))],
      0,
      { ...GO, programs: [{ program: 'prog_p1', index: 1, calls: ['fc_c1'], outputs: { c1: 'fco_c1_1' }, approved: {}, closedBy: null }] },
    ],
    [
      'the latest tool listing of each server',
      [user('go'), listTools('crm', 'mcpl_1'), listTools('docs', 'mcpl_2'), listTools('crm', 'mcpl_3')],
      0,
      { ...GO, mcpListings: { crm: 'mcpl_3', docs: 'mcpl_2' } },
    ],
    [
      "a client search's tools, where the request has them, and the tail after it",
      [user('go'), searchCall('ts1', 'client'), searchOutput('ts1', ['find', 'add'])],
      0,
      {
        ...GO,
        loadedTools: [
          { name: 'find', param: 'input[2].tools[0]' },
          { name: 'add', param: 'input[2].tools[1]' },
        ],
        tail: { kind: 'after_search' },
      },
    ],
    [
      'a server search, with no call_id to match, and its tools',
      [user('go'), searchCall(null, 'server', 'tsc_1'), searchOutput(null, ['find'], 'tso_1')],
      0,
      { ...GO, loadedTools: [{ name: 'find', param: 'input[2].tools[0]' }], tail: { kind: 'after_search' } },
    ],
    ['a server search with a call_id that has no output yet: none is needed', [user('go'), searchCall('ts1', 'server')], 0, GO],
    ['a search whose execution is not said: no output needed', [user('go'), searchCall('ts1')], 0, GO],
    [
      "a stored search's tools: named by previous_response_id",
      [
        user('go'),
        searchCall('ts1', 'client'),
        searchOutput('ts1', ['find']),
        user('more', 'msg_2'),
        searchCall('ts2', 'client'),
        searchOutput('ts2', ['add']),
      ],
      3,
      {
        ...GO,
        lastUserText: 'more',
        userTurns: 2,
        loadedTools: [
          { name: 'find', param: 'previous_response_id' },
          { name: 'add', param: 'input[2].tools[0]' },
        ],
        tail: { kind: 'after_search' },
      },
    ],
    [
      'items the emulator keeps without reading: reasoning, web search',
      [user('go'), { type: 'reasoning', id: 'rs_1', summary: [] }, { type: 'web_search_call', id: 'ws_1' }],
      0,
      GO,
    ],
  ])('%s', (_, items, inputStart, expected) => {
    expect(summary(readConversation(items, 'strict', inputStart))).toEqual(expected);
  });

  it('hands back the items themselves, not copies', () => {
    const items = [
      user('go'),
      program('p1'),
      functionCall('c1', byProgram('p1')),
      functionOutput('c1', '1', byProgram('p1')),
      functionCall('d1'),
      functionOutput('d1', 'x'),
    ];
    const state = readConversation(items, 'strict');
    expect(state.programs[0]!.program).toBe(items[1]);
    expect(state.programs[0]!.calls[0]).toBe(items[2]);
    expect(state.programs[0]!.outputs.get('c1')).toBe(items[3]);
    expect(state.directCalls[0]!.call).toBe(items[4]);
  });
});

// ---- mistakes ----------------------------------------------------------------------------------

type ErrorCase = [name: string, items: ConversationItem[], inputStart: number, expected: Expected];

/** Mistakes a lenient check lets through too: strict mode refuses each of them. */
const RECOVERABLE: ErrorCase[] = [
  [
    'a second mcp_approval_response for one request',
    [user('go'), approvalRequest('mcpr_1'), approvalResponse('mcpr_1', true), approvalResponse('mcpr_1', false)],
    0,
    { code: 'tool_output_duplicate', param: 'input[3]', message: 'input[3]: a second mcp_approval_response for mcpr_1; each request takes exactly one.' },
  ],
  [
    "an mcp_approval_response whose caller is not its request's",
    [user('go'), program('p1'), program('p2'), approvalRequest('mcpr_1', byProgram('p1')), approvalResponse('mcpr_1', true, 'mcpra_1', byProgram('p2'))],
    0,
    {
      code: 'caller_mismatch',
      param: 'input[4].caller',
      message:
        'input[4]: the mcp_approval_response for mcpr_1 has caller {type: "program", caller_id: "p2"}, but its mcp_approval_request has caller {type: "program", caller_id: "p1"}. Copy caller unchanged, or leave it out.',
    },
  ],
  [
    'an mcp_approval_response claiming a program for a request outside any program',
    [user('go'), approvalRequest('mcpr_1'), approvalResponse('mcpr_1', true, 'mcpra_1', byProgram('p1'))],
    0,
    {
      code: 'caller_mismatch',
      param: 'input[2].caller',
      message:
        'input[2]: the mcp_approval_response for mcpr_1 has caller {type: "program", caller_id: "p1"}, but its mcp_approval_request has no caller. Copy caller unchanged, or leave it out.',
    },
  ],
  [
    'an mcp_approval_response for a request the conversation lacks',
    [user('go'), approvalResponse('mcpr_nobody', true)],
    0,
    {
      code: 'tool_output_unknown_call',
      param: 'input[1].approval_request_id',
      message: 'input[1]: an mcp_approval_response for mcpr_nobody, but the conversation has no mcp_approval_request with that id.',
    },
  ],
  [
    'a tool_search_output for a search the conversation lacks',
    [user('go'), searchOutput('ts_nobody', ['find'])],
    0,
    {
      code: 'tool_output_unknown_call',
      param: 'input[1].call_id',
      message: 'input[1]: a tool_search_output for ts_nobody, but the conversation has no tool_search_call with that call_id.',
    },
  ],
  [
    'a second tool_search_output for one search',
    [user('go'), searchCall('ts1', 'client'), searchOutput('ts1', ['find']), searchOutput('ts1', ['add'])],
    0,
    { code: 'tool_output_duplicate', param: 'input[3]', message: 'input[3]: a second tool_search_output for ts1; each search takes exactly one.' },
  ],
  [
    'a second program_output for one program',
    [user('go'), program('p1'), programOutput('p1'), programOutput('p1')],
    0,
    { code: 'tool_output_duplicate', param: 'input[3]', message: 'input[3]: a second program_output for program p1; a program ends once.' },
  ],
  [
    "a call after its program's program_output",
    [user('go'), program('p1'), programOutput('p1'), functionCall('c1', byProgram('p1'))],
    0,
    { code: 'items_out_of_order', param: 'input[3]', message: 'input[3]: function call c1 comes after the program_output of its program p1.' },
  ],
  [
    "a server call after its program's program_output",
    [user('go'), program('p1'), programOutput('p1'), codeInterpreterCall('ci_1', byProgram('p1'))],
    0,
    { code: 'items_out_of_order', param: 'input[3]', message: 'input[3]: code_interpreter_call ci_1 comes after the program_output of its program p1.' },
  ],
  [
    'an output for a call_id no call has',
    [user('go'), functionOutput('c_nobody', 'x')],
    0,
    { code: 'tool_output_unknown_call', param: 'input[1].call_id', message: 'No tool call found for function call output with call_id c_nobody (input[1]).' },
  ],
  [
    'an output for the call_id of a program (not a call)',
    [user('go'), program('p1'), functionOutput('p1', 'x')],
    0,
    { code: 'tool_output_unknown_call', param: 'input[2].call_id', message: 'No tool call found for function call output with call_id p1 (input[2]).' },
  ],
  [
    'a second output for a direct call',
    [user('go'), functionCall('c1'), functionOutput('c1', 'first'), functionOutput('c1', 'second')],
    0,
    {
      code: 'tool_output_duplicate',
      param: 'input[3]',
      message: 'input[3]: a second function_call_output for call_id c1; each call takes exactly one output.',
    },
  ],
  [
    "a second output for a program's call",
    [
      user('go'),
      program('p1'),
      shellCall('c1', byProgram('p1')),
      shellOutput('c1', byProgram('p1')),
      { ...shellOutput('c1', byProgram('p1')), id: 'sho_again' },
    ],
    0,
    { code: 'tool_output_duplicate', param: 'input[4]', message: 'input[4]: a second shell_call_output for call_id c1; each call takes exactly one output.' },
  ],
  [
    "an output of a program's call without caller",
    [user('go'), program('p1'), functionCall('c1', byProgram('p1')), functionOutput('c1', '1')],
    0,
    {
      code: 'caller_missing',
      param: 'input[3].caller',
      message: 'input[3]: the function_call_output for c1 must copy caller {type: "program", caller_id: "p1"} from its function call',
    },
  ],
  [
    "an output of a program's call with caller: null",
    [user('go'), program('p1'), customCall('c1', byProgram('p1')), customOutput('c1', 'x', null)],
    0,
    {
      code: 'caller_missing',
      param: 'input[3].caller',
      message: 'input[3]: the custom_tool_call_output for c1 must copy caller {type: "program", caller_id: "p1"}',
    },
  ],
  [
    "an output of a program's call whose caller became direct",
    [user('go'), program('p1'), functionCall('c1', byProgram('p1')), functionOutput('c1', '1', DIRECT)],
    0,
    {
      code: 'caller_mismatch',
      param: 'input[3].caller',
      message:
        'input[3]: the function_call_output for c1 has caller {type: "direct"}, but its call has caller {type: "program", caller_id: "p1"}. Copy caller unchanged.',
    },
  ],
  [
    "an output of a program's call naming another program",
    [user('go'), program('p1'), program('p2'), patchCall('c1', byProgram('p1')), patchOutput('c1', byProgram('p2'))],
    0,
    {
      code: 'caller_mismatch',
      param: 'input[4].caller',
      message:
        'input[4]: the apply_patch_call_output for c1 has caller {type: "program", caller_id: "p2"}, but its call has caller {type: "program", caller_id: "p1"}.',
    },
  ],
  [
    'an output of a direct call naming a program as caller',
    [user('go'), program('p1'), programOutput('p1'), functionCall('c1'), functionOutput('c1', 'x', byProgram('p1'))],
    0,
    {
      code: 'caller_mismatch',
      param: 'input[4].caller',
      message: 'input[4]: the function_call_output for c1 has caller {type: "program", caller_id: "p1"}, but its call was made directly by the model.',
    },
  ],
];

/** Mistakes no check lets through. */
const UNRECOVERABLE: ErrorCase[] = [
  [
    'a program item sent twice',
    [user('go'), program('p1'), program('p1', '// p1', 'prog_again')],
    0,
    { code: 'program_item_altered', param: 'input[2]', message: 'input[2]: program p1 appears twice in the conversation.' },
  ],
  [
    'a program item resent after the stored one',
    [user('go'), program('p1'), program('p1', '// p1', 'prog_again')],
    2,
    { code: 'program_item_altered', param: 'input[0]', message: 'input[0]: program p1 appears twice' },
  ],
  [
    'a program item twice in stored history: named by its id',
    [user('go'), program('p1'), program('p1', '// p1', 'prog_again'), user('more', 'msg_2')],
    3,
    { code: 'program_item_altered', param: 'previous_response_id', message: 'stored item prog_again: program p1 appears twice in the conversation.' },
  ],
  [
    'a program_output before its program',
    [user('go'), programOutput('p1'), program('p1')],
    0,
    { code: 'items_out_of_order', param: 'input[1]', message: 'input[1]: program_output for p1 comes before its program item.' },
  ],
  [
    'a program_output for a program the conversation lacks',
    [user('go'), programOutput('p_nobody')],
    0,
    {
      code: 'program_item_missing',
      param: 'input[1].call_id',
      message: 'input[1]: program_output for p_nobody, but the conversation has no program item with that call_id.',
    },
  ],
  [
    'a stored program_output for a program the conversation lacks',
    [user('go'), programOutput('p_nobody'), user('more', 'msg_2')],
    2,
    { code: 'program_item_missing', param: 'previous_response_id', message: 'stored item po_p_nobody: program_output for p_nobody' },
  ],
  [
    'an mcp_approval_response before its request',
    [user('go'), approvalResponse('mcpr_1', true), approvalRequest('mcpr_1')],
    0,
    { code: 'items_out_of_order', param: 'input[1]', message: 'input[1]: the mcp_approval_response for mcpr_1 comes before its mcp_approval_request.' },
  ],
  [
    'a tool_search_call sent twice',
    [user('go'), searchCall('ts1', 'client'), searchOutput('ts1', ['find']), searchCall('ts1', 'client', 'tsc_again')],
    0,
    { code: 'program_item_altered', param: 'input[3]', message: 'input[3]: tool_search_call ts1 appears twice in the conversation.' },
  ],
  [
    'a tool_search_output before its search',
    [user('go'), searchOutput('ts1', ['find']), searchCall('ts1', 'client')],
    0,
    { code: 'items_out_of_order', param: 'input[1]', message: 'input[1]: the tool_search_output for ts1 comes before its tool_search_call.' },
  ],
  [
    'a call sent twice',
    [user('go'), functionCall('c1'), functionOutput('c1', 'x'), functionCall('c1', undefined, 'fc_again')],
    0,
    { code: 'program_item_altered', param: 'input[3]', message: 'input[3]: function call c1 appears twice in the conversation.' },
  ],
  [
    'a call of another type reusing a call_id',
    [user('go'), functionCall('c1'), customCall('c1')],
    0,
    { code: 'program_item_altered', param: 'input[2]', message: 'input[2]: custom tool call c1 appears twice in the conversation.' },
  ],
  [
    'a call before the program that made it',
    [user('go'), functionCall('c1', byProgram('p1')), program('p1')],
    0,
    { code: 'items_out_of_order', param: 'input[1]', message: 'input[1]: function call c1 comes before the program item p1 that made it.' },
  ],
  [
    'a call made by a program the conversation lacks',
    [user('go'), shellCall('c1', byProgram('p_nobody')), shellOutput('c1', byProgram('p_nobody'))],
    0,
    {
      code: 'program_item_missing',
      param: 'input[1].caller.caller_id',
      message: 'input[1]: shell call c1 was made by program p_nobody, but that program item is missing from the conversation.',
    },
  ],
  [
    'a server call before the program that made it',
    [user('go'), mcpCall('mcp_1', byProgram('p1')), program('p1')],
    0,
    { code: 'items_out_of_order', param: 'input[1]', message: 'input[1]: mcp_call mcp_1 comes before the program item p1 that made it.' },
  ],
  [
    'an approval request made by a program the conversation lacks',
    [user('go'), approvalRequest('mcpr_1', byProgram('p_nobody'))],
    0,
    { code: 'program_item_missing', param: 'input[1].caller.caller_id', message: 'input[1]: mcp_approval_request mcpr_1 was made by program p_nobody' },
  ],
  [
    'an output before its call',
    [user('go'), program('p1'), functionOutput('c1', '1', byProgram('p1')), functionCall('c1', byProgram('p1'))],
    0,
    { code: 'items_out_of_order', param: 'input[2]', message: 'input[2]: the output for c1 comes before its function_call.' },
  ],
  [
    'a shell output before its shell call',
    [user('go'), shellOutput('c1'), shellCall('c1')],
    0,
    { code: 'items_out_of_order', param: 'input[1]', message: 'input[1]: the output for c1 comes before its shell_call.' },
  ],
  [
    'an output of the wrong type for its call',
    [user('go'), functionCall('c1'), customOutput('c1', 'x')],
    0,
    {
      code: 'tool_output_unknown_call',
      param: 'input[2].type',
      message: 'input[2]: a custom_tool_call_output answers function call c1, which is a function_call: answer it with a function_call_output.',
    },
  ],
  [
    'a shell call answered as a function',
    [user('go'), program('p1'), shellCall('c1', byProgram('p1')), functionOutput('c1', 'x', byProgram('p1'))],
    0,
    { code: 'tool_output_unknown_call', param: 'input[3].type', message: 'which is a shell_call: answer it with a shell_call_output.' },
  ],
  [
    "a program's call left without output",
    [user('go'), program('p1'), functionCall('c1', byProgram('p1')), functionCall('c2', byProgram('p1')), functionOutput('c1', '1', byProgram('p1'))],
    0,
    { code: 'tool_output_missing', param: 'input[3]', message: 'No tool output found for function call c2.' },
  ],
  [
    'a stored call of a program left without output',
    [user('go'), program('p1'), patchCall('c1', byProgram('p1'))],
    3,
    { code: 'tool_output_missing', param: 'previous_response_id', message: 'No tool output found for apply_patch call c1.' },
  ],
  [
    "a program's approval request left unanswered",
    [user('go'), program('p1'), approvalRequest('mcpr_1', byProgram('p1'))],
    0,
    {
      code: 'tool_output_missing',
      param: 'input[2]',
      message: 'No mcp_approval_response found for mcp_approval_request mcpr_1: approve or deny it to resume the program that made it.',
    },
  ],
  [
    "a program's approval request answered for another request",
    [user('go'), program('p1'), approvalRequest('mcpr_1', byProgram('p1')), approvalRequest('mcpr_2', byProgram('p1')), approvalResponse('mcpr_2', true)],
    0,
    { code: 'tool_output_missing', param: 'input[2]', message: 'No mcp_approval_response found for mcp_approval_request mcpr_1' },
  ],
  [
    'a client search left without output',
    [user('go'), searchCall('ts1', 'client')],
    0,
    { code: 'tool_output_missing', param: 'input[1]', message: 'No tool_search_output found for the client-executed tool_search_call ts1.' },
  ],
  [
    'a direct call left without output',
    [user('go'), functionCall('c1'), customCall('c2'), functionOutput('c1', 'x')],
    0,
    { code: 'tool_output_missing', param: 'input[2]', message: 'No tool output found for custom tool call c2.' },
  ],
  [
    "a direct call and a program's call both left without output: the program's is named",
    [user('go'), functionCall('d1'), program('p1'), functionCall('c1', byProgram('p1'))],
    0,
    { code: 'tool_output_missing', param: 'input[3]', message: 'No tool output found for function call c1.' },
  ],
];

describe('readConversation in strict mode', () => {
  it.each([...RECOVERABLE, ...UNRECOVERABLE])('refuses %s', (_, items, inputStart, expected) => {
    expectError(errorOf(items, 'strict', inputStart), expected);
  });
});

describe('readConversation in lenient mode', () => {
  it.each(UNRECOVERABLE)('still refuses %s', (_, items, inputStart, expected) => {
    expectError(errorOf(items, 'lenient', inputStart), expected);
  });

  it.each(RECOVERABLE)('lets through %s, noting it as `code: message`', (_, items, inputStart, expected) => {
    const { tolerated } = readConversation(items, 'lenient', inputStart);
    expect(tolerated).toHaveLength(1);
    expect(tolerated[0]).toMatch(new RegExp(`^${expected.code}: `));
    expect(tolerated[0]).toContain(expected.message);
  });

  // What each mistake let through leaves in the state.
  it.each<[name: string, items: ConversationItem[], expected: Partial<Summary>]>([
    [
      'a second approval answer: the first one stands',
      [user('go'), approvalRequest('mcpr_1'), approvalResponse('mcpr_1', true), approvalResponse('mcpr_1', false)],
      { approvals: { mcpr_1: true } },
    ],
    ['an answer to no request: dropped', [user('go'), approvalResponse('mcpr_nobody', true)], { approvals: {} }],
    [
      'an unmatched search output: its tools load all the same',
      [user('go'), searchOutput('ts_nobody', ['find'])],
      { loadedTools: [{ name: 'find', param: 'input[1].tools[0]' }], tail: { kind: 'after_search' } },
    ],
    [
      "a second search output: only the first one's tools load",
      [user('go'), searchCall('ts1', 'client'), searchOutput('ts1', ['find']), searchOutput('ts1', ['add'])],
      { loadedTools: [{ name: 'find', param: 'input[2].tools[0]' }] },
    ],
    [
      'a call after its program ended: kept with the program',
      [user('go'), program('p1'), programOutput('p1'), functionCall('c1', byProgram('p1'))],
      { programs: [{ program: 'prog_p1', index: 1, calls: ['fc_c1'], outputs: {}, approved: {}, closedBy: 'po_p1' }] },
    ],
    [
      'a second direct output: the first one stands',
      [user('go'), functionCall('c1'), functionOutput('c1', 'first'), functionOutput('c1', 'second')],
      { directCalls: [{ call: 'fc_c1', index: 1, output: 'first' }] },
    ],
    [
      "a program's output without caller: it still reaches the program",
      [user('go'), program('p1'), functionCall('c1', byProgram('p1')), functionOutput('c1', '1')],
      { programs: [{ program: 'prog_p1', index: 1, calls: ['fc_c1'], outputs: { c1: 'fco_c1_1' }, approved: {}, closedBy: null }] },
    ],
    [
      "a program's output naming another program: it reaches the program that made the call",
      [user('go'), program('p1'), program('p2'), functionCall('c1', byProgram('p1')), functionOutput('c1', '1', byProgram('p2'))],
      {
        programs: [
          { program: 'prog_p1', index: 1, calls: ['fc_c1'], outputs: { c1: 'fco_c1_1' }, approved: {}, closedBy: null },
          { program: 'prog_p2', index: 2, calls: [], outputs: {}, approved: {}, closedBy: null },
        ],
      },
    ],
    [
      'a direct output naming a program: it answers the direct call',
      [user('go'), program('p1'), programOutput('p1'), functionCall('c1'), functionOutput('c1', 'x', byProgram('p1'))],
      { directCalls: [{ call: 'fc_c1', index: 3, output: 'x' }] },
    ],
  ])('%s', (_, items, expected) => {
    expect(summary(readConversation(items, 'lenient'))).toMatchObject(expected);
  });

  it('notes every mistake of one request in order', () => {
    const items = [user('go'), functionCall('c1'), functionOutput('c1', 'a'), functionOutput('c1', 'b'), functionOutput('c_nobody', 'x')];
    expect(readConversation(items, 'lenient').tolerated).toEqual([
      'tool_output_duplicate: input[3]: a second function_call_output for call_id c1; each call takes exactly one output.',
      'tool_output_unknown_call: No tool call found for function call output with call_id c_nobody (input[4]).',
    ]);
  });

  it('notes 20 mistakes one by one and counts the rest', () => {
    const items = [user('go'), ...Array.from({ length: 23 }, (_, index) => functionOutput(`c_nobody_${index}`, 'x'))];
    const { tolerated } = readConversation(items, 'lenient');
    expect(tolerated).toHaveLength(21);
    expect(tolerated[0]).toBe('tool_output_unknown_call: No tool call found for function call output with call_id c_nobody_0 (input[1]).');
    expect(tolerated[19]).toBe('tool_output_unknown_call: No tool call found for function call output with call_id c_nobody_19 (input[20]).');
    expect(tolerated[20]).toBe('… and 3 more mistakes let through');
  });

  it('notes exactly 20 mistakes without a count', () => {
    const items = [user('go'), ...Array.from({ length: 20 }, (_, index) => functionOutput(`c_nobody_${index}`, 'x'))];
    const { tolerated } = readConversation(items, 'lenient');
    expect(tolerated).toHaveLength(20);
    expect(tolerated.at(-1)).toBe('tool_output_unknown_call: No tool call found for function call output with call_id c_nobody_19 (input[20]).');
  });
});

describe('locateItem', () => {
  it.each([
    [0, 0, 'input[0]'],
    [3, 0, 'input[3]'],
    [3, 2, 'input[1]'],
    [1, 2, 'previous_response_id'],
    [-1, 0, 'input'],
  ])('item %i with the input from %i is %s', (index, inputStart, expected) => {
    expect(locateItem(index, inputStart)).toBe(expected);
  });
});
