import type { McpTool } from '../../../schemas/tools.ts';

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

/**
 * A filter picks the tools that meet every condition it states: named in `tool_names`, and
 * read-only or not as `read_only` says (the server's `readOnlyHint`). A filter that states
 * nothing picks every tool.
 */
function picks(filter: Filter, tool: ListedTool): boolean {
  if (filter.tool_names != null && !filter.tool_names.includes(tool.name)) return false;
  if (filter.read_only != null && filter.read_only !== readOnly(tool)) return false;
  return true;
}

/** `allowed_tools`: absent lets every listed tool through; a list of names, or a filter. */
export function mcpToolAllowed(server: McpTool, tool: ListedTool): boolean {
  const allowed = server.allowed_tools;
  if (allowed == null) return true;
  if (Array.isArray(allowed)) return allowed.includes(tool.name);
  return picks(allowed as Filter, tool);
}

/**
 * `require_approval`: `always` (the default, as the hosted API), `never`, or filters. A tool
 * `never` picks runs without approval; one `always` picks waits for it (`always` wins when both
 * pick it). A tool neither picks waits too, unless the filters have only `always`: then they
 * name the tools that need approval, and the rest run.
 */
export function mcpApprovalRequired(server: McpTool, tool: ListedTool): boolean {
  const policy = server.require_approval;
  if (policy == null || policy === 'always') return true;
  if (policy === 'never') return false;
  const { always, never } = policy as { always?: Filter | null; never?: Filter | null };
  if (always && picks(always, tool)) return true;
  if (never && picks(never, tool)) return false;
  return !(always && !never);
}
