import type { CallToolResult, ContentBlock } from '@modelcontextprotocol/sdk/types.js';

/**
 * The text a program receives from an MCP tool result. Programs get one string (like a
 * function_call_output), so structured results are serialized and non-text content is
 * described rather than dropped silently.
 */

/** A `tools/call` result: a current one, or the pre-2025 `toolResult` shape. */
export type ToolResultLike = CallToolResult | { readonly toolResult: unknown };

export type ToolOutcome = { readonly kind: 'output'; readonly text: string } | { readonly kind: 'error'; readonly text: string };

export function toolOutcome(result: ToolResultLike): ToolOutcome {
  if (!('content' in result)) {
    const { toolResult } = result;
    return { kind: 'output', text: typeof toolResult === 'string' ? toolResult : JSON.stringify(toolResult) ?? '' };
  }
  const contentText = result.content.map(describeContent).join('\n');
  if (result.isError === true) {
    // A tool error is reported in its content; structured content is a fallback for servers
    // that put the details there.
    const text = contentText || (result.structuredContent === undefined ? '' : JSON.stringify(result.structuredContent));
    return { kind: 'error', text };
  }
  if (result.structuredContent !== undefined) return { kind: 'output', text: JSON.stringify(result.structuredContent) };
  return { kind: 'output', text: contentText };
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
