import { AsyncLocalStorage } from 'node:async_hooks';
import { Client, SSEClientTransport, SseError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { type ConnectAttempt, DeadlineExceeded, invitesFallback, McpConnectError, type McpTransportKind } from './mcp-failure.ts';

/**
 * Connecting to an MCP server over the transport it speaks, and tying the HTTP requests of each
 * operation to that operation's deadline.
 */

const CLIENT_INFO = { name: 'ptc-emulator', version: '0.1.0' } as const;

/**
 * What one operation (a connect, a tools/list, a tools/call) knows about the HTTP requests it
 * causes. The SDK's per-request `signal` only stops waiting for the answer: the HTTP request
 * stays open (the Streamable HTTP transport aborts its fetches only when the whole transport
 * closes), and a cancelled request is never answered, so a timed-out call would hold its
 * response stream open for as long as the connection lives. The scope, found through
 * AsyncLocalStorage because the SDK calls fetch deep inside `send`, lets our fetch abort the
 * request with its operation.
 */
export interface HttpScope {
  readonly signal: AbortSignal;
  /** The first HTTP error status seen: the legacy SSE transport's errors do not carry it. */
  failedStatus: number | undefined;
}

const scopes = new AsyncLocalStorage<HttpScope>();

export function newHttpScope(signal: AbortSignal): HttpScope {
  return { signal, failedStatus: undefined };
}

export function runInHttpScope<T>(scope: HttpScope, operation: () => Promise<T>): Promise<T> {
  return scopes.run(scope, operation);
}

async function scopedFetch(url: string | URL, init?: RequestInit): Promise<Response> {
  const scope = scopes.getStore();
  // A scope whose deadline already passed does not apply to requests made after it: those are
  // follow-ups the SDK sends after giving up (such as `notifications/cancelled`, telling the
  // server to stop the work), which must still go out.
  const signal = scope && !scope.signal.aborted ? (init?.signal ? AbortSignal.any([init.signal, scope.signal]) : scope.signal) : init?.signal;
  const response = await fetch(url, { ...init, signal: signal ?? null });
  if (scope && response.status >= 400 && scope.failedStatus === undefined) scope.failedStatus = response.status;
  return response;
}

export interface McpConnection {
  readonly client: Client;
  readonly kind: McpTransportKind;
  /** Ends the session politely where the transport has one (Streamable HTTP DELETE), then closes. */
  close(options: { readonly endSession: boolean; readonly signal: AbortSignal }): Promise<void>;
}

export interface OpenConnectionOptions {
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  /** The transport that worked last time for this server, tried first. */
  readonly preferred: McpTransportKind;
  readonly timeoutMs: number;
  /** Called (possibly more than once) when the connection stops being usable. */
  readonly onBroken: () => void;
}

/**
 * Connects over the preferred transport and, when the server answers it with a 4xx that means
 * "not spoken here", over the other one (the MCP spec's backwards-compatibility procedure,
 * which servers still on HTTP+SSE rely on). Rejects with McpConnectError naming each attempt.
 */
export async function openMcpConnection(options: OpenConnectionOptions): Promise<McpConnection> {
  const order: McpTransportKind[] = options.preferred === 'sse' ? ['sse', 'streamable-http'] : ['streamable-http', 'sse'];
  const attempts: ConnectAttempt[] = [];
  // One deadline for the whole procedure, separate from any caller's: it is cleared once
  // connected, so the long-lived streams opened inside its scope are never aborted by it.
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DeadlineExceeded(options.timeoutMs, 'connecting')), options.timeoutMs);
  try {
    for (const kind of order) {
      const scope = newHttpScope(controller.signal);
      try {
        return await runInHttpScope(scope, () => connectOver(kind, options, controller.signal));
      } catch (error) {
        attempts.push({ kind, error });
        if (controller.signal.aborted || !invitesFallback(error, scope.failedStatus)) break;
      }
    }
    throw new McpConnectError(attempts);
  } finally {
    clearTimeout(timer);
  }
}

async function connectOver(kind: McpTransportKind, options: OpenConnectionOptions, signal: AbortSignal): Promise<McpConnection> {
  const requestInit: RequestInit = { headers: { ...options.headers } };
  const transport =
    kind === 'streamable-http'
      ? new StreamableHTTPClientTransport(options.url, { requestInit, fetch: scopedFetch })
      : new SSEClientTransport(options.url, { requestInit, fetch: scopedFetch });
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  // Until connected, failures surface through connect() itself, and closing a failed attempt
  // must not report the connection being set up (perhaps over the other transport) as broken.
  let connected = false;
  const broken = (): void => {
    if (connected) options.onBroken();
  };
  client.onclose = broken;
  client.onerror = (error) => {
    // The legacy transport's EventSource reports a dropped stream here and then quietly
    // reconnects, landing in a new server session that was never initialized: treat it as
    // broken instead. The Streamable HTTP transport reports non-fatal things here (an aborted
    // request, its optional GET stream ending) and its POSTs fail loudly when it is broken.
    if (error instanceof SseError) broken();
  };
  const connecting = client.connect(transport, { signal, timeout: options.timeoutMs });
  try {
    // The race is needed: the legacy transport waits for its `endpoint` event with no timeout
    // or signal of its own, so a server that accepts the stream and says nothing would hang it.
    await raceSignal(connecting, signal);
  } catch (error) {
    // Client.connect does not close the transport when start() fails, and a failed EventSource
    // keeps reconnecting in the background until closed.
    await client.close().catch(() => {});
    throw error;
  }
  connected = true;
  return {
    client,
    kind,
    async close({ endSession, signal: closeSignal }) {
      if (endSession && transport instanceof StreamableHTTPClientTransport) {
        await runInHttpScope(newHttpScope(closeSignal), () => transport.terminateSession()).catch(() => {});
      }
      await client.close().catch(() => {});
    },
  };
}

/**
 * Settles like `promise` unless `signal` fires first, then rejects with its reason. The
 * promise left behind gets a handler so its later rejection is never unhandled.
 */
export function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  promise.catch(() => {});
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
