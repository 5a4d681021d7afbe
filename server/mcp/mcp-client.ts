import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { breaksConnection, DeadlineExceeded, describeFailure, httpStatusOf, type McpTransportKind } from './mcp-failure.ts';
import { toolOutcome } from './mcp-output.ts';
import { type McpConnection, newHttpScope, openMcpConnection, raceSignal, runInHttpScope } from './mcp-transport.ts';

/**
 * The emulator as a real MCP client: server-owned `mcp` tools are listed and called by us over
 * the network, on connections kept per server and reused across responses.
 */

export interface McpServerConfig {
  readonly serverLabel: string;
  readonly serverUrl: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** A bearer token, sent as `Authorization: Bearer <token>` unless `headers` has Authorization. */
  readonly authorization?: string;
}

export interface McpToolInfo {
  readonly name: string;
  readonly description?: string;
  readonly inputSchema: Record<string, unknown>;
  readonly annotations?: Record<string, unknown>;
}

export type McpCallResult = { readonly output: string } | { readonly error: string };

export interface McpOperationOptions {
  /** The whole operation (connecting included) gives up after this long. */
  readonly timeoutMs: number;
}

/** How long close() lets a Streamable HTTP server take to acknowledge the end of a session. */
const END_SESSION_TIMEOUT_MS = 2_000;

interface ConnectionEntry {
  readonly promise: Promise<McpConnection>;
}

export class McpClients {
  /** Connections by server URL and headers: pending while connecting, then established. */
  readonly #connections = new Map<string, ConnectionEntry>();
  /** The transport that last worked for each key, tried first when reconnecting. */
  readonly #transportKinds = new Map<string, McpTransportKind>();
  #closed = false;

  /**
   * Every tool of the server, following pagination. Rejects with an Error naming the server and
   * the cause; the caller reports it as an `mcp_list_tools` item with `error`.
   */
  async listTools(config: McpServerConfig, options: McpOperationOptions): Promise<McpToolInfo[]> {
    try {
      return await this.#operate(config, options.timeoutMs, async (client, signal) => {
        const tools: McpToolInfo[] = [];
        const cursorsSeen = new Set<string>();
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor === undefined ? {} : { cursor }, { signal, timeout: options.timeoutMs });
          for (const tool of page.tools) {
            tools.push({
              name: tool.name,
              ...(tool.description === undefined ? {} : { description: tool.description }),
              inputSchema: tool.inputSchema,
              ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
            });
          }
          cursor = page.nextCursor;
          // A server handing back a cursor it already gave would otherwise loop until the deadline.
          if (cursor !== undefined) {
            if (cursorsSeen.has(cursor)) throw new Error(`the server repeated the pagination cursor ${JSON.stringify(cursor)}`);
            cursorsSeen.add(cursor);
          }
        } while (cursor !== undefined);
        return tools;
      });
    } catch (error) {
      throw new Error(`MCP server '${config.serverLabel}': listing tools failed: ${describeFailure(error)}`, { cause: error });
    }
  }

  /**
   * Calls a tool. Never rejects: every failure (server down, HTTP error, timeout, JSON-RPC
   * error, a result with `isError`) resolves `{ error }`, which the program receives as an error.
   */
  async callTool(config: McpServerConfig, name: string, args: Record<string, unknown>, options: McpOperationOptions): Promise<McpCallResult> {
    try {
      const result = await this.#operate(config, options.timeoutMs, (client, signal) =>
        client.callTool({ name, arguments: args }, undefined, { signal, timeout: options.timeoutMs }),
      );
      const outcome = toolOutcome(result);
      if (outcome.kind === 'output') return { output: outcome.text };
      return { error: outcome.text || `MCP server '${config.serverLabel}': tool '${name}' reported an error without a message` };
    } catch (error) {
      return { error: `MCP server '${config.serverLabel}': tool '${name}' failed: ${describeFailure(error)}` };
    }
  }

  /** Closes every connection, ending Streamable HTTP sessions; later operations fail. */
  async close(): Promise<void> {
    this.#closed = true;
    const entries = [...this.#connections.values()];
    this.#connections.clear();
    await Promise.all(
      entries.map(async (entry) => {
        const connection = await entry.promise.catch(() => undefined);
        await connection?.close({ endSession: true, signal: AbortSignal.timeout(END_SESSION_TIMEOUT_MS) });
      }),
    );
  }

  /**
   * Runs one operation on the server's connection within the operation's deadline. A server
   * that restarted (or forgot our session) answers 404 to the old session: the spec says to
   * start a new session, and the request was not processed, so it is sent once more on a fresh
   * connection.
   */
  async #operate<T>(config: McpServerConfig, timeoutMs: number, operation: (client: Client, signal: AbortSignal) => Promise<T>): Promise<T> {
    const url = new URL(config.serverUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new Error(`the server URL must be http or https, not ${url.protocol}`);
    }
    const headers = requestHeaders(config);
    const key = connectionKey(url, headers);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new DeadlineExceeded(timeoutMs, 'waiting')), timeoutMs);
    try {
      for (let attempt = 1; ; attempt++) {
        if (this.#closed) throw new Error('the MCP client is closed');
        const entry = this.#connectionFor(key, url, headers, timeoutMs);
        const connection = await raceSignal(entry.promise, controller.signal).catch((error: unknown) => {
          throw controller.signal.aborted ? new DeadlineExceeded(timeoutMs, 'connecting') : error;
        });
        const scope = newHttpScope(controller.signal);
        try {
          return await raceSignal(
            runInHttpScope(scope, () => operation(connection.client, controller.signal)),
            controller.signal,
          );
        } catch (error) {
          // After the deadline, whatever the SDK reports is a consequence of our abort.
          if (controller.signal.aborted) throw controller.signal.reason;
          if (breaksConnection(error)) this.#drop(key, entry, connection);
          if (attempt === 1 && httpStatusOf(error, scope.failedStatus) === 404) continue;
          throw error;
        }
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** The established or pending connection for `key`, starting one if there is none. */
  #connectionFor(key: string, url: URL, headers: Record<string, string>, timeoutMs: number): ConnectionEntry {
    const existing = this.#connections.get(key);
    if (existing) return existing;
    // The connect is shared by every operation that arrives meanwhile, and is bounded by the
    // deadline of the one that started it.
    const promise = openMcpConnection({
      url,
      headers,
      preferred: this.#transportKinds.get(key) ?? 'streamable-http',
      timeoutMs,
      onBroken: () => {
        promise.then(
          (connection) => this.#drop(key, entry, connection),
          () => {},
        );
      },
    });
    const entry: ConnectionEntry = { promise };
    this.#connections.set(key, entry);
    promise.then(
      (connection) => {
        this.#transportKinds.set(key, connection.kind);
        // close() ran while this was connecting: nothing will use or close it otherwise.
        if (this.#closed) void connection.close({ endSession: true, signal: AbortSignal.timeout(END_SESSION_TIMEOUT_MS) });
      },
      () => {
        if (this.#connections.get(key) === entry) this.#connections.delete(key);
      },
    );
    return entry;
  }

  /** Forgets a broken connection so the next operation reconnects, and closes it. */
  #drop(key: string, entry: ConnectionEntry, connection: McpConnection): void {
    if (this.#connections.get(key) === entry) this.#connections.delete(key);
    void connection.close({ endSession: false, signal: AbortSignal.abort() });
  }
}

/** The configured headers plus the bearer token, which explicit headers override. */
function requestHeaders(config: McpServerConfig): Record<string, string> {
  const headers: Record<string, string> = { ...config.headers };
  const hasAuthorization = Object.keys(headers).some((name) => name.toLowerCase() === 'authorization');
  if (config.authorization !== undefined && !hasAuthorization) headers.Authorization = `Bearer ${config.authorization}`;
  return headers;
}

/** Same URL and same headers (names case-insensitively) share a connection. */
function connectionKey(url: URL, headers: Readonly<Record<string, string>>): string {
  const normalized = Object.entries(headers)
    .map(([name, value]): [string, string] => [name.toLowerCase(), value])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([url.href, normalized]);
}
