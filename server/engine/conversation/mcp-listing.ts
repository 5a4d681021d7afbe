import type { EmittedMcpListTools, McpListToolsItem } from '../../../schemas/items.ts';
import { newId } from '../../platform/ids.ts';
import type { ServerCallServices } from './server-calls.ts';
import type { McpServer, ToolSet } from './tool-set.ts';

/**
 * Lists the tools of every MCP server of the request that the conversation has no listing of
 * yet (or only a failed one), as the hosted API does on the first turn that uses a server. A
 * server that cannot be listed gets an `mcp_list_tools` item with `error`, and no tools.
 */
export async function listMcpServers(
  toolSet: ToolSet,
  known: ReadonlyMap<string, McpListToolsItem>,
  services: ServerCallServices,
): Promise<EmittedMcpListTools[]> {
  const missing = [...toolSet.mcpServers.values()].filter((server) => {
    const listing = known.get(server.label);
    return !listing || listing.error;
  });
  return Promise.all(missing.map((server) => listServer(server, services)));
}

async function listServer(server: McpServer, services: ServerCallServices): Promise<EmittedMcpListTools> {
  const item = { type: 'mcp_list_tools' as const, id: newId('mcpl'), server_label: server.label };
  const { server_url: serverUrl, headers, authorization } = server.definition;
  if (!serverUrl) {
    return {
      ...item,
      tools: [],
      error: `MCP server '${server.label}' has no server_url: the emulator connects to remote MCP servers only (connectors are not emulated).`,
    };
  }
  try {
    const tools = await services.mcp.listTools(
      { serverLabel: server.label, serverUrl, ...(headers ? { headers } : {}), ...(authorization === undefined ? {} : { authorization }) },
      { timeoutMs: services.mcpTimeoutMs, ...(services.signal ? { signal: services.signal } : {}) },
    );
    return {
      ...item,
      tools: tools.map((tool) => ({
        name: tool.name,
        input_schema: tool.inputSchema,
        ...(tool.description === undefined ? {} : { description: tool.description }),
        ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
      })),
      error: null,
    };
  } catch (error) {
    return { ...item, tools: [], error: (error as Error).message };
  }
}
