import type { Client } from '@modelcontextprotocol/client';
import type { McpCallError } from '../../../schemas/items.ts';
import { breaksConnection, DeadlineExceeded, describeFailure, failureCode, httpStatusOf, type McpTransportKind } from './mcp-failure.ts';
import { toolOutcome } from './mcp-output.ts';
import { type McpConnection, newHttpScope, openMcpConnection, raceSignal, runInHttpScope } from './mcp-transport.ts';

/**
 * The emulator as a real MCP client: server-owned `mcp` tools are listed and called by us over
 * the network, on connections kept per server and reused across responses.
 *
 * Requests go out as plain `tools/list` and `tools/call` (`client.request`), not through the
 * SDK's `Client.listTools`/`Client.callTool`: those remember, per connection, each listed tool's
 * output schema and task support, and then check later calls against them (refusing a result
 * whose `structuredContent` violates the schema, or a tool marked task-required). Which
 * connection makes a call (one that listed the tools, or one that did not because the listing
 * came from the conversation) must not change its outcome, and the server's result is its data:
 * it is passed on as sent. It also spares compiling a validator for every output schema at each
 * listing.
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

/** A call's outcome: its output, or the error its mcp_call item carries. */
export type McpCallResult = { readonly output: string } | { readonly error: McpCallError };

export interface McpOperationOptions {
  /** The whole operation (connecting included) gives up after this long. */
  readonly timeoutMs: number;
  /** Abandons the operation when aborted (the request was cancelled). */
  readonly signal?: AbortSignal;
}

/** Bounds of the connection pool: `PTC_MCP_IDLE_TIMEOUT_MS`, `PTC_MCP_MAX_CONNECTIONS` (server/platform/config.ts). */
export interface McpPoolOptions {
  /** A connection no operation has used for this long is closed, ending its session. */
  readonly idleTimeoutMs: number;
  /** Connections kept at most; beyond, the least recently used idle ones are closed. */
  readonly maxConnections: number;
  /** Prefixes a server URL must start with (`PTC_MCP_ALLOWED_URLS`); empty or absent: any URL. */
  readonly allowedUrls?: readonly string[];
}

/** How long closing a connection lets a Streamable HTTP server take to acknowledge the end of a session. */
const END_SESSION_TIMEOUT_MS = 2_000;

/**
 * Server URLs whose working transport is remembered. A constant rather than a setting: an entry
 * is one URL and one word, and only spares a refused POST when reconnecting to a legacy SSE
 * server, so the bound only needs to keep the map from growing without end.
 */
const MAX_REMEMBERED_TRANSPORTS = 1_000;

interface ConnectionEntry {
  readonly key: string;
  readonly promise: Promise<McpConnection>;
  /** Operations using (or waiting for) the connection: while above zero it is never retired. */
  users: number;
  /** Armed while nobody uses the connection: retires it after the idle timeout. */
  idleTimer: NodeJS.Timeout | undefined;
}

export class McpClients {
  readonly #pool: McpPoolOptions;
  /**
   * Connections by server URL and headers, pending while connecting, then established; in order
   * of last use (each use moves its entry to the end), so the first idle one is the least
   * recently used.
   */
  readonly #connections = new Map<string, ConnectionEntry>();
  /**
   * The transport that last worked for each server URL, tried first when reconnecting. Keyed by
   * URL alone (a server speaks the same transport to everyone), so no credentials stay here.
   */
  readonly #transportKinds = new Map<string, McpTransportKind>();
  /** Retired connections still ending their sessions: close() waits for them. */
  readonly #closing = new Set<Promise<void>>();
  #closed = false;

  constructor(pool: McpPoolOptions) {
    this.#pool = pool;
  }

  /**
   * Every tool of the server, following pagination. Rejects with an Error naming the server and
   * the cause; the caller reports it as an `mcp_list_tools` item with `error`.
   */
  async listTools(config: McpServerConfig, options: McpOperationOptions): Promise<McpToolInfo[]> {
    try {
      return await this.#operate(
        config,
        options.timeoutMs,
        async (client, signal) => {
          const tools: McpToolInfo[] = [];
          const cursorsSeen = new Set<string>();
          let cursor: string | undefined;
          do {
            const page = await client.request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, { signal, timeout: options.timeoutMs });
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
        },
        options.signal,
      );
    } catch (error) {
      throw new Error(`MCP server '${config.serverLabel}': listing tools failed: ${describeFailure(error)}`, { cause: error });
    }
  }

  /**
   * Calls a tool. Never rejects: every failure (server down, HTTP error, timeout, JSON-RPC
   * error, a result with `isError`) resolves `{ error }`, which the program receives as an error
   * (mcpErrorMessage).
   */
  async callTool(config: McpServerConfig, name: string, args: Record<string, unknown>, options: McpOperationOptions): Promise<McpCallResult> {
    try {
      const result = await this.#operate(
        config,
        options.timeoutMs,
        (client, signal) => client.request({ method: 'tools/call', params: { name, arguments: args } }, { signal, timeout: options.timeoutMs }),
        options.signal,
      );
      const outcome = toolOutcome(result);
      if (outcome.kind === 'output') return { output: outcome.text };
      return { error: { type: 'mcp_tool_execution_error', content: outcome.content } };
    } catch (error) {
      return { error: { ...failureCode(error), message: `MCP server '${config.serverLabel}': tool '${name}' failed: ${describeFailure(error)}` } };
    }
  }

  /** Closes every connection, ending Streamable HTTP sessions; later operations fail. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const entry of [...this.#connections.values()]) this.#retire(entry);
    this.#transportKinds.clear();
    await Promise.all(this.#closing);
  }

  /**
   * Runs one operation on the server's connection within the operation's deadline. A server
   * that restarted (or forgot our session) answers 404 to the old session: the spec says to
   * start a new session, and the request was not processed, so it is sent once more on a fresh
   * connection.
   */
  async #operate<T>(
    config: McpServerConfig,
    timeoutMs: number,
    operation: (client: Client, signal: AbortSignal) => Promise<T>,
    cancel?: AbortSignal,
  ): Promise<T> {
    const url = new URL(config.serverUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new Error(`the server URL must be http or https, not ${url.protocol}`);
    }
    // Checked on the parsed URL without its user info: `http://allowed.example@elsewhere/` is elsewhere.
    const allowed = this.#pool.allowedUrls ?? [];
    const target = `${url.origin}${url.pathname}${url.search}`;
    if (allowed.length > 0 && !allowed.some((prefix) => target.startsWith(prefix))) {
      throw new Error(`${url.href} is not allowed by this emulator's PTC_MCP_ALLOWED_URLS, so it was not contacted`);
    }
    const headers = requestHeaders(config);
    const key = connectionKey(url, headers);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new DeadlineExceeded(timeoutMs, 'waiting')), timeoutMs);
    const onCancel = (): void => controller.abort(cancel?.reason);
    if (cancel?.aborted) onCancel();
    else cancel?.addEventListener('abort', onCancel, { once: true });
    try {
      for (let attempt = 1; ; attempt++) {
        if (this.#closed) throw new Error('the MCP client is closed');
        const entry = this.#acquire(key, url, headers, timeoutMs);
        try {
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
            if (breaksConnection(error)) this.#drop(entry, connection);
            if (attempt === 1 && httpStatusOf(error, scope.failedStatus) === 404) continue;
            throw error;
          }
        } finally {
          this.#release(entry);
        }
      }
    } finally {
      clearTimeout(timer);
      cancel?.removeEventListener('abort', onCancel);
    }
  }

  /**
   * The established or pending connection for `key`, starting one if there is none, marked in
   * use (until #release) and most recently used.
   */
  #acquire(key: string, url: URL, headers: Record<string, string>, timeoutMs: number): ConnectionEntry {
    const existing = this.#connections.get(key);
    if (existing) {
      this.#connections.delete(key);
      this.#connections.set(key, existing);
      clearTimeout(existing.idleTimer);
      existing.idleTimer = undefined;
      existing.users += 1;
      return existing;
    }
    // The connect is shared by every operation that arrives meanwhile, and is bounded by the
    // deadline of the one that started it.
    const promise = openMcpConnection({
      url,
      headers,
      preferred: this.#transportKinds.get(url.href) ?? 'streamable-http',
      timeoutMs,
      onBroken: () => {
        promise.then(
          (connection) => this.#drop(entry, connection),
          () => {},
        );
      },
    });
    const entry: ConnectionEntry = { key, promise, users: 1, idleTimer: undefined };
    this.#connections.set(key, entry);
    promise.then(
      // Retiring the entry (idle, least recently used, close()) while it connects closes it once connected.
      (connection) => this.#rememberTransport(url.href, connection.kind),
      () => {
        this.#forget(entry);
      },
    );
    this.#trim();
    return entry;
  }

  /** One operation is done with the connection: when nobody else uses it, it starts idling. */
  #release(entry: ConnectionEntry): void {
    entry.users -= 1;
    if (entry.users > 0 || this.#connections.get(entry.key) !== entry) return;
    this.#trim();
    if (this.#connections.get(entry.key) !== entry) return;
    entry.idleTimer = setTimeout(() => {
      if (entry.users === 0) this.#retire(entry);
    }, this.#pool.idleTimeoutMs);
    // An idle connection is no reason to keep the process alive.
    entry.idleTimer.unref();
  }

  /**
   * Retires the least recently used idle connections while there are more than the maximum.
   * Connections in use are skipped: the pool may exceed its maximum until they are released.
   */
  #trim(): void {
    let excess = this.#connections.size - this.#pool.maxConnections;
    for (const entry of this.#connections.values()) {
      if (excess <= 0) return;
      if (entry.users > 0) continue;
      this.#retire(entry);
      excess -= 1;
    }
  }

  /** Removes a connection from the pool and closes it (once connected), ending its session. */
  #retire(entry: ConnectionEntry): void {
    this.#forget(entry);
    const closing = entry.promise.then(
      (connection) => connection.close({ endSession: true, signal: AbortSignal.timeout(END_SESSION_TIMEOUT_MS) }),
      () => {},
    );
    this.#closing.add(closing);
    void closing.finally(() => this.#closing.delete(closing));
  }

  /** Forgets a broken connection so the next operation reconnects, and closes it. */
  #drop(entry: ConnectionEntry, connection: McpConnection): void {
    this.#forget(entry);
    void connection.close({ endSession: false, signal: AbortSignal.abort() });
  }

  /** Takes the entry out of the pool, unless another connection has replaced it there. */
  #forget(entry: ConnectionEntry): void {
    clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
    if (this.#connections.get(entry.key) === entry) this.#connections.delete(entry.key);
  }

  #rememberTransport(href: string, kind: McpTransportKind): void {
    this.#transportKinds.delete(href);
    this.#transportKinds.set(href, kind);
    if (this.#transportKinds.size > MAX_REMEMBERED_TRANSPORTS) {
      this.#transportKinds.delete(this.#transportKinds.keys().next().value as string);
    }
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
