import type { McpTool } from '../../schemas/tools.ts';

/** A listed tool as the policies read it: its name, and whether the server says it only reads. */
export interface ListedTool {
  readonly name: string;
  readonly annotations?: unknown;
}

type Filter = { readonly tool_names?: readonly string[] | undefined; readonly read_only?: boolean | undefined };

function readOnly(tool: ListedTool): boolean {
  const annotations = tool.annotations;
  return typeof annotations === 'object' && annotations !== null && (annotations as { readOnlyHint?: unknown }).readOnlyHint === true;
}

/** A filter picks a tool by name, or by its read-only hint; an empty filter picks none. */
function picks(filter: Filter | null | undefined, tool: ListedTool): boolean {
  if (!filter) return false;
  if (filter.tool_names?.includes(tool.name)) return true;
  return filter.read_only === true && readOnly(tool);
}

/** `allowed_tools`: absent lets every listed tool through. */
export function mcpToolAllowed(server: McpTool, tool: ListedTool): boolean {
  const allowed = server.allowed_tools;
  if (allowed == null) return true;
  if (Array.isArray(allowed)) return allowed.includes(tool.name);
  return picks(allowed as Filter, tool);
}

/**
 * `require_approval`: `always` (the default, as the hosted API), `never`, or filters. With
 * filters, a tool `never` picks runs without approval and every other tool waits for it.
 */
export function mcpApprovalRequired(server: McpTool, tool: ListedTool): boolean {
  const policy = server.require_approval;
  if (policy == null || policy === 'always') return true;
  if (policy === 'never') return false;
  const { always, never } = policy as { always?: Filter | null; never?: Filter | null };
  if (picks(always, tool)) return true;
  return !picks(never, tool);
}
