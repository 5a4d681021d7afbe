import type { EmittedToolSearchCall, EmittedToolSearchOutput } from '../../../schemas/items.ts';
import type { Tool } from '../../../schemas/tools.ts';
import { newCallId, newId } from '../../platform/ids.ts';
import { echoTool } from '../response-object.ts';
import type { ToolSet } from './tool-set.ts';

/**
 * Tool search: the model loads tools marked `defer_loading: true` by a query. The emulator runs
 * it (`execution: "server"`, the default) by matching the query's words against the deferred
 * tools' names and descriptions, or hands it to the client (`execution: "client"`), who answers
 * with a `tool_search_output` of its own.
 */

/** The words of a tool a query can match: its name and description, and those of a namespace's members or an MCP server. */
function searchableText(tool: Tool): string {
  const parts: unknown[] = [];
  if (tool.type === 'namespace') {
    parts.push(tool.name, tool.description);
    for (const member of tool.tools) parts.push(member.name, member.description);
  } else if (tool.type === 'mcp') {
    parts.push(tool.server_label, tool.server_description);
  } else {
    parts.push((tool as { name?: unknown }).name, (tool as { description?: unknown }).description);
  }
  return parts
    .filter((part): part is string => typeof part === 'string')
    .join(' ')
    .toLowerCase();
}

/** The deferred tools a query finds: those whose name or description holds any of its words (of 3 letters or more, or the whole query). */
export function searchDeferredTools(deferred: readonly Tool[], query: string): Tool[] {
  const words = query
    .toLowerCase()
    .split(/[^\p{L}\p{N}_]+/u)
    .filter((word) => word.length >= 3);
  const needles = words.length > 0 ? words : [query.toLowerCase().trim()].filter((word) => word !== '');
  return deferred.filter((tool) => {
    const text = searchableText(tool);
    return needles.some((needle) => text.includes(needle));
  });
}

/** A search the emulator runs: the call and the output loading what it found, both complete. */
export function serverSearch(toolSet: ToolSet, query: string): [EmittedToolSearchCall, EmittedToolSearchOutput] {
  const found = searchDeferredTools(toolSet.deferred, query);
  return [
    { type: 'tool_search_call', id: newId('tsc'), call_id: null, arguments: { query }, execution: 'server', status: 'completed' },
    { type: 'tool_search_output', id: newId('tso'), call_id: null, tools: found.map(echoTool), execution: 'server', status: 'completed' },
  ];
}

/** A search the client runs: the call, which its tool_search_output answers in the next request. */
export function clientSearch(query: string): EmittedToolSearchCall {
  return { type: 'tool_search_call', id: newId('tsc'), call_id: newCallId(), arguments: { query }, execution: 'client', status: 'completed' };
}
