import type { CallToolResult, ContentBlock } from '@modelcontextprotocol/client';

/**
 * The text a program receives from an MCP tool result. Programs get one string (like a
 * function_call_output), so structured results are serialized and non-text content is
 * described rather than dropped silently.
 */

/** A `tools/call` result: a current one, or the pre-2025 `toolResult` shape. */
export type ToolResultLike = CallToolResult | { readonly toolResult: unknown };

/**
 * A tool's error result: the content blocks the item's `mcp_tool_execution_error` carries, and the
 * text a program receives, which `errorContentText` reads back from those blocks alone.
 */
export type ToolOutcome =
  | { readonly kind: 'output'; readonly text: string }
  | { readonly kind: 'error'; readonly content: readonly unknown[]; readonly text: string };

export function toolOutcome(result: ToolResultLike): ToolOutcome {
  if (!('content' in result)) {
    const { toolResult } = result;
    return { kind: 'output', text: typeof toolResult === 'string' ? toolResult : (JSON.stringify(toolResult) ?? '') };
  }
  const contentText = result.content.map(describeContent).join('\n');
  if (result.isError === true) {
    // A tool error is reported in its content; structured content is a fallback for servers
    // that put the details there, carried as a text block so that the item alone holds it.
    const content =
      contentText !== '' || result.structuredContent === undefined ? result.content : [{ type: 'text', text: JSON.stringify(result.structuredContent) }];
    return { kind: 'error', content, text: errorContentText(content) };
  }
  if (result.structuredContent !== undefined) return { kind: 'output', text: JSON.stringify(result.structuredContent) };
  return { kind: 'output', text: contentText };
}

/** The text of an `mcp_tool_execution_error`'s content: its blocks described one per line. */
export function errorContentText(content: unknown): string {
  if (!Array.isArray(content)) return content === undefined || content === null ? '' : typeof content === 'string' ? content : JSON.stringify(content);
  return content
    .map((block) => (typeof block === 'object' && block !== null && 'type' in block ? describeContent(block as ContentBlock) : JSON.stringify(block)))
    .join('\n');
}

function describeContent(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
    case 'audio':
      // The base64 payload is useless to a program reading text, and large.
      return JSON.stringify({ type: block.type, mimeType: block.mimeType });
    case 'resource':
      return JSON.stringify({ type: 'resource', uri: block.resource.uri, mimeType: block.resource.mimeType });
    case 'resource_link':
      return JSON.stringify({ type: 'resource_link', uri: block.uri, name: block.name, mimeType: block.mimeType });
    default:
      // A content type newer than this SDK's schema: say what it was.
      return JSON.stringify({ type: (block as { type: unknown }).type });
  }
}
