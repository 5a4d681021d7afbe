import type { ResponseItem } from 'openai/resources/responses/responses';

type RequiredKeys<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? never : K }[keyof T];

/**
 * The fields each listed input item must have, by type: `tsc` checks this table against the
 * pinned SDK's `ResponseItem` union (a missing or extra key, or a type the union lacks, fails
 * the build), and the input_items test checks what the emulator lists against it.
 */
export const LISTED_ITEM_REQUIRED_KEYS: { readonly [I in ResponseItem as I['type']]: { readonly [K in RequiredKeys<I>]: true } } = {
  additional_tools: { id: true, role: true, tools: true, type: true },
  apply_patch_call: { call_id: true, id: true, operation: true, status: true, type: true },
  apply_patch_call_output: { call_id: true, id: true, status: true, type: true },
  code_interpreter_call: { code: true, container_id: true, id: true, outputs: true, status: true, type: true },
  configuration_update: { id: true, type: true },
  compaction: { encrypted_content: true, id: true, type: true },
  computer_call: { call_id: true, id: true, pending_safety_checks: true, status: true, type: true },
  computer_call_output: { call_id: true, id: true, output: true, status: true, type: true },
  custom_tool_call: { call_id: true, id: true, input: true, name: true, status: true, type: true },
  custom_tool_call_output: { call_id: true, id: true, output: true, status: true, type: true },
  file_search_call: { id: true, queries: true, status: true, type: true },
  function_call: { arguments: true, call_id: true, id: true, name: true, status: true, type: true },
  function_call_output: { id: true, output: true, status: true, type: true },
  image_generation_call: { id: true, result: true, status: true, type: true },
  local_shell_call: { action: true, call_id: true, id: true, status: true, type: true },
  local_shell_call_output: { id: true, output: true, type: true },
  mcp_approval_request: { arguments: true, id: true, name: true, server_label: true, type: true },
  mcp_approval_response: { approval_request_id: true, approve: true, id: true, type: true },
  mcp_call: { arguments: true, id: true, name: true, server_label: true, type: true },
  mcp_list_tools: { id: true, server_label: true, tools: true, type: true },
  message: { content: true, id: true, role: true, status: true, type: true },
  program: { call_id: true, code: true, fingerprint: true, id: true, type: true },
  program_output: { call_id: true, id: true, result: true, status: true, type: true },
  reasoning: { id: true, summary: true, type: true },
  shell_call: { action: true, call_id: true, environment: true, id: true, status: true, type: true },
  shell_call_output: { call_id: true, id: true, max_output_length: true, output: true, status: true, type: true },
  tool_search_call: { arguments: true, call_id: true, execution: true, id: true, status: true, type: true },
  tool_search_output: { call_id: true, execution: true, id: true, status: true, tools: true, type: true },
  web_search_call: { action: true, id: true, status: true, type: true },
};
