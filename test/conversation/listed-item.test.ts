import { describe, expect, it } from 'vitest';
import type { ConversationItem } from '../../schemas/items.ts';
import { listedItem } from '../../server/api/http/listed-item.ts';
import { LISTED_ITEM_REQUIRED_KEYS } from '../support/listed-item-keys.ts';

// listedItem on its own: each short form a client may send, and the whole item
// `GET /v1/responses/{id}/input_items` lists for it (test/wire-shapes.test.ts lists them over HTTP).

const SHELL_OUTPUT = [{ stdout: 'ok\n', stderr: '', outcome: { type: 'exit', exit_code: 0 } }] as const;

describe('listedItem fills in', () => {
  it.each<[name: string, item: ConversationItem, listed: Record<string, unknown>]>([
    [
      "a user message's string content, as an input_text part",
      { type: 'message', id: 'msg_1', role: 'user', content: 'hi' },
      { type: 'message', id: 'msg_1', role: 'user', content: [{ type: 'input_text', text: 'hi' }], status: 'completed' },
    ],
    [
      "an assistant message's string content, as an output_text part with no annotations",
      { type: 'message', id: 'msg_2', role: 'assistant', content: 'hello' },
      { type: 'message', id: 'msg_2', role: 'assistant', content: [{ type: 'output_text', text: 'hello', annotations: [] }], status: 'completed' },
    ],
    [
      "a developer message's string content, as input_text",
      { type: 'message', id: 'msg_3', role: 'developer', content: 'be brief' },
      { type: 'message', id: 'msg_3', role: 'developer', content: [{ type: 'input_text', text: 'be brief' }], status: 'completed' },
    ],
    [
      "a system message's string content, as input_text",
      { type: 'message', id: 'msg_4', role: 'system', content: '' },
      { type: 'message', id: 'msg_4', role: 'system', content: [{ type: 'input_text', text: '' }], status: 'completed' },
    ],
    [
      "a message's status, its parts kept",
      {
        type: 'message',
        id: 'msg_5',
        role: 'user',
        content: [
          { type: 'input_text', text: 'a' },
          { type: 'input_image', image_url: 'https://example.com/a.png' },
        ],
      },
      {
        type: 'message',
        id: 'msg_5',
        role: 'user',
        content: [
          { type: 'input_text', text: 'a' },
          { type: 'input_image', image_url: 'https://example.com/a.png' },
        ],
        status: 'completed',
      },
    ],
    [
      'nothing of a message with parts and a status, its phase kept',
      { type: 'message', id: 'msg_6', role: 'assistant', content: [{ type: 'output_text', text: 'x' }], status: 'incomplete', phase: 'final_answer' },
      { type: 'message', id: 'msg_6', role: 'assistant', content: [{ type: 'output_text', text: 'x' }], status: 'incomplete', phase: 'final_answer' },
    ],
    [
      "a string message's content, its status kept",
      { type: 'message', id: 'msg_7', role: 'assistant', content: 'partial', status: 'in_progress' },
      { type: 'message', id: 'msg_7', role: 'assistant', content: [{ type: 'output_text', text: 'partial', annotations: [] }], status: 'in_progress' },
    ],
    [
      "a function_call's status",
      { type: 'function_call', id: 'fc_1', call_id: 'c1', name: 'f', arguments: '{}', caller: { type: 'program', caller_id: 'p1' } },
      { type: 'function_call', id: 'fc_1', call_id: 'c1', name: 'f', arguments: '{}', caller: { type: 'program', caller_id: 'p1' }, status: 'completed' },
    ],
    [
      'nothing of a function_call with a status',
      { type: 'function_call', id: 'fc_2', call_id: 'c2', name: 'f', arguments: '{}', namespace: 'crm', status: 'in_progress' },
      { type: 'function_call', id: 'fc_2', call_id: 'c2', name: 'f', arguments: '{}', namespace: 'crm', status: 'in_progress' },
    ],
    [
      "a function_call_output's status, null as absent",
      { type: 'function_call_output', id: 'fco_1', call_id: 'c1', output: 'x', status: null },
      { type: 'function_call_output', id: 'fco_1', call_id: 'c1', output: 'x', status: 'completed' },
    ],
    [
      "a function_call_output's status, its parts kept",
      { type: 'function_call_output', id: 'fco_2', call_id: 'c1', output: [{ type: 'input_text', text: 'x' }], caller: null },
      { type: 'function_call_output', id: 'fco_2', call_id: 'c1', output: [{ type: 'input_text', text: 'x' }], caller: null, status: 'completed' },
    ],
    [
      "a custom_tool_call's status, a field its short form has none of",
      { type: 'custom_tool_call', id: 'ctc_1', call_id: 'c3', name: 'note', input: 'text' },
      { type: 'custom_tool_call', id: 'ctc_1', call_id: 'c3', name: 'note', input: 'text', status: 'completed' },
    ],
    [
      "a custom_tool_call_output's status",
      { type: 'custom_tool_call_output', id: 'ctco_1', call_id: 'c3', output: 'done' },
      { type: 'custom_tool_call_output', id: 'ctco_1', call_id: 'c3', output: 'done', status: 'completed' },
    ],
    [
      'nothing of an apply_patch_call, whose status is required',
      { type: 'apply_patch_call', id: 'apc_1', call_id: 'c4', operation: { type: 'delete_file', path: 'a' }, status: 'in_progress' },
      { type: 'apply_patch_call', id: 'apc_1', call_id: 'c4', operation: { type: 'delete_file', path: 'a' }, status: 'in_progress' },
    ],
    [
      "a shell_call's status, environment and the limits its action left out, as null",
      { type: 'shell_call', id: 'sh_1', call_id: 'c5', action: { commands: ['ls'] } },
      {
        type: 'shell_call',
        id: 'sh_1',
        call_id: 'c5',
        action: { commands: ['ls'], timeout_ms: null, max_output_length: null },
        environment: null,
        status: 'completed',
      },
    ],
    [
      'nothing of a whole shell_call',
      {
        type: 'shell_call',
        id: 'sh_2',
        call_id: 'c6',
        action: { commands: ['ls', 'pwd'], timeout_ms: 1000, max_output_length: 2048 },
        environment: { type: 'container_reference', container_id: 'cntr_1' },
        status: 'incomplete',
      },
      {
        type: 'shell_call',
        id: 'sh_2',
        call_id: 'c6',
        action: { commands: ['ls', 'pwd'], timeout_ms: 1000, max_output_length: 2048 },
        environment: { type: 'container_reference', container_id: 'cntr_1' },
        status: 'incomplete',
      },
    ],
    [
      "a shell_call's limits given as null, kept null",
      {
        type: 'shell_call',
        id: 'sh_3',
        call_id: 'c7',
        action: { commands: [], timeout_ms: null, max_output_length: 0 },
        environment: { type: 'local' },
        status: null,
      },
      {
        type: 'shell_call',
        id: 'sh_3',
        call_id: 'c7',
        action: { commands: [], timeout_ms: null, max_output_length: 0 },
        environment: { type: 'local' },
        status: 'completed',
      },
    ],
    [
      "a shell_call_output's status and max_output_length",
      { type: 'shell_call_output', id: 'sho_1', call_id: 'c5', output: [...SHELL_OUTPUT] },
      { type: 'shell_call_output', id: 'sho_1', call_id: 'c5', output: [...SHELL_OUTPUT], max_output_length: null, status: 'completed' },
    ],
    [
      'nothing of a whole shell_call_output',
      { type: 'shell_call_output', id: 'sho_2', call_id: 'c5', output: [], max_output_length: 0, status: 'incomplete' },
      { type: 'shell_call_output', id: 'sho_2', call_id: 'c5', output: [], max_output_length: 0, status: 'incomplete' },
    ],
    [
      "a tool_search_call's call_id, status and execution: the server's, as the API's default",
      { type: 'tool_search_call', id: 'tsc_1', arguments: { query: 'crm' } },
      { type: 'tool_search_call', id: 'tsc_1', arguments: { query: 'crm' }, call_id: null, execution: 'server', status: 'completed' },
    ],
    [
      'nothing of a client tool_search_call',
      { type: 'tool_search_call', id: 'tsc_2', call_id: 'ts2', arguments: { query: 'crm' }, execution: 'client', status: 'in_progress' },
      { type: 'tool_search_call', id: 'tsc_2', call_id: 'ts2', arguments: { query: 'crm' }, execution: 'client', status: 'in_progress' },
    ],
    [
      "a tool_search_output's call_id (null as absent), status and execution",
      { type: 'tool_search_output', id: 'tso_1', call_id: null, tools: [{ type: 'function', name: 'find' }] },
      { type: 'tool_search_output', id: 'tso_1', call_id: null, tools: [{ type: 'function', name: 'find' }], execution: 'server', status: 'completed' },
    ],
    [
      "a client tool_search_output's status only",
      { type: 'tool_search_output', id: 'tso_2', call_id: 'ts2', tools: [], execution: 'client' },
      { type: 'tool_search_output', id: 'tso_2', call_id: 'ts2', tools: [], execution: 'client', status: 'completed' },
    ],
  ])('%s', (_, item, listed) => {
    const before = structuredClone(item);
    expect(listedItem(item)).toStrictEqual(listed);
    // The stored item stays as the client sent it.
    expect(item).toStrictEqual(before);
  });
});

describe('listedItem lists as they are', () => {
  it.each<[name: string, item: ConversationItem]>([
    ['a program', { type: 'program', id: 'prog_1', call_id: 'p1', code: 'text(1)', fingerprint: 'fp' }],
    ['a program_output', { type: 'program_output', id: 'po_1', call_id: 'p1', result: '1', status: 'completed' }],
    ['an apply_patch_call_output', { type: 'apply_patch_call_output', id: 'apco_1', call_id: 'c4', status: 'failed' }],
    ['a code_interpreter_call', { type: 'code_interpreter_call', id: 'ci_1', code: null, container_id: 'cntr_1', outputs: null, status: 'interpreting' }],
    ['an mcp_call', { type: 'mcp_call', id: 'mcp_1', server_label: 'crm', name: 'find', arguments: '{}' }],
    ['an mcp_approval_request', { type: 'mcp_approval_request', id: 'mcpr_1', server_label: 'crm', name: 'drop', arguments: '{}' }],
    ['an mcp_approval_response', { type: 'mcp_approval_response', id: 'mcpra_1', approval_request_id: 'mcpr_1', approve: false }],
    ['an mcp_list_tools', { type: 'mcp_list_tools', id: 'mcpl_1', server_label: 'crm', tools: [] }],
    ['a reasoning item', { type: 'reasoning', id: 'rs_1', summary: [] }],
    ['an item the emulator only keeps', { type: 'web_search_call', id: 'ws_1', action: { type: 'search' }, status: 'completed' }],
  ])('%s', (_, item) => {
    expect(listedItem(item)).toBe(item);
  });
});

describe('what listedItem lists', () => {
  // The short forms of every item type listedItem fills in: each listed whole, as the SDK's types require.
  const SHORT_FORMS: ConversationItem[] = [
    { type: 'message', id: 'msg_1', role: 'user', content: 'hi' },
    { type: 'message', id: 'msg_2', role: 'assistant', content: [] },
    { type: 'function_call', id: 'fc_1', call_id: 'c1', name: 'f', arguments: '{}' },
    { type: 'function_call_output', id: 'fco_1', call_id: 'c1', output: 'x' },
    { type: 'custom_tool_call', id: 'ctc_1', call_id: 'c2', name: 'n', input: '' },
    { type: 'custom_tool_call_output', id: 'ctco_1', call_id: 'c2', output: '' },
    { type: 'shell_call', id: 'sh_1', call_id: 'c3', action: { commands: ['ls'] } },
    { type: 'shell_call_output', id: 'sho_1', call_id: 'c3', output: [] },
    { type: 'tool_search_call', id: 'tsc_1', arguments: {} },
    { type: 'tool_search_output', id: 'tso_1', tools: [] },
  ];

  it.each(SHORT_FORMS.map((item) => [item.type, item] as const))("has every field the SDK's %s requires", (type, item) => {
    const required = Object.keys(LISTED_ITEM_REQUIRED_KEYS[type as keyof typeof LISTED_ITEM_REQUIRED_KEYS]);
    expect(required.filter((key) => !Object.hasOwn(listedItem(item), key))).toEqual([]);
  });
});
