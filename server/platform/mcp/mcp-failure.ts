import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError, SseError } from '@modelcontextprotocol/client';
import { EmulatorError } from '../../../runtime/index.ts';

/**
 * Why an MCP operation failed, in words a user can act on. The SDK's errors are of many kinds
 * (a server's JSON-RPC errors as ProtocolError; its own local failures as SdkError, HTTP ones
 * as SdkHttpError; fetch's bare "fetch failed" whose reason hides in `cause`; the EventSource's
 * error events); this module turns each into one short sentence and says which of them mean
 * the connection itself is unusable.
 */

export type McpTransportKind = 'streamable-http' | 'sse';

export const TRANSPORT_NAMES: Readonly<Record<McpTransportKind, string>> = {
  'streamable-http': 'Streamable HTTP',
  sse: 'legacy HTTP+SSE',
};

/** The per-operation deadline passed: raised by us, never by the SDK. */
export class DeadlineExceeded extends EmulatorError {
  override readonly name = 'DeadlineExceeded';
  readonly code = 'PTC_ERR_MCP_DEADLINE';
  constructor(
    readonly timeoutMs: number,
    readonly phase: 'connecting' | 'waiting',
  ) {
    super(`no answer within ${timeoutMs} ms${phase === 'connecting' ? ' while connecting' : ''}`);
  }
}

/** One transport that was tried while connecting and failed. */
export interface ConnectAttempt {
  readonly kind: McpTransportKind;
  readonly error: unknown;
}

/** No transport could connect; carries each attempt so the message can name every cause. */
export class McpConnectError extends EmulatorError {
  override readonly name = 'McpConnectError';
  readonly code = 'PTC_ERR_MCP_CONNECT';
  constructor(readonly attempts: readonly ConnectAttempt[]) {
    super(`could not connect: ${attempts.map((attempt) => `${TRANSPORT_NAMES[attempt.kind]}: ${describeFailure(attempt.error)}`).join('; ')}`);
    this.name = 'McpConnectError';
  }
}

/**
 * The HTTP status behind an error, when one is known: the Streamable HTTP transport's errors
 * carry it as `status`, the EventSource's as `code`; the legacy SSE transport's POST failures
 * are plain Errors, so the status our fetch saw for the operation (`observedStatus`) fills in
 * for them.
 */
export function httpStatusOf(error: unknown, observedStatus?: number): number | undefined {
  if (error instanceof SdkHttpError && isHttpStatus(error.status)) return error.status;
  if (error instanceof SseError && isHttpStatus(error.code)) return error.code;
  return observedStatus;
}

/**
 * Whether a failure means the connection cannot be trusted any more (so it is dropped and the
 * next operation reconnects). A JSON-RPC error is an answer from a working connection, and a
 * request that timed out says nothing against it; anything else (HTTP errors, network errors,
 * a closed transport, an answer we could not parse) does.
 */
export function breaksConnection(error: unknown): boolean {
  if (error instanceof DeadlineExceeded || error instanceof ProtocolError) return false;
  if (error instanceof SdkError) return error.code !== SdkErrorCode.RequestTimeout;
  return true;
}

/**
 * Whether a transport that failed to connect should give way to the other one: the MCP spec's
 * backwards-compatibility rule is "a 4xx on the initial POST means try the legacy SSE
 * transport". 401 and 403 are left out: falling back would bury a credentials problem the user
 * must fix under a second, misleading error from the other transport.
 */
export function invitesFallback(error: unknown, observedStatus?: number): boolean {
  const status = httpStatusOf(error, observedStatus);
  return status !== undefined && status >= 400 && status < 500 && status !== 401 && status !== 403;
}

/**
 * How an `mcp_call.error` classifies a failed call: a JSON-RPC error is the server's
 * `mcp_protocol_error` with its code; anything else is an `http_error` with the HTTP status
 * seen, or, when no status came back, 504 for a deadline passed and 502 for a server that
 * could not be reached or answered nonsense (the emulator stands as a gateway to it).
 */
export function failureCode(error: unknown, observedStatus?: number): { type: 'mcp_protocol_error' | 'http_error'; code: number } {
  if (error instanceof ProtocolError) return { type: 'mcp_protocol_error', code: error.code };
  const status = httpStatusOf(error, observedStatus);
  if (status !== undefined) return { type: 'http_error', code: status };
  const timedOut = error instanceof DeadlineExceeded || (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout);
  return { type: 'http_error', code: timedOut ? 504 : 502 };
}

export function describeFailure(error: unknown, observedStatus?: number): string {
  if (error instanceof DeadlineExceeded || error instanceof McpConnectError) return error.message;
  if (error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed) return 'the connection to the server closed';
  if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) return 'the request timed out';
  if (error instanceof ProtocolError) {
    // A v1 SDK server sends an McpError's whole message, "MCP error <code>: <message>", as the
    // JSON-RPC message when a handler throws one, and the client may prefix it again, so it
    // could read "MCP error -32602: MCP error -32602: ...": say it once.
    return `MCP error ${error.code}: ${error.message.replace(/^(MCP error -?\d+: )+/, '')}`;
  }
  const status = httpStatusOf(error, observedStatus);
  const detail = messageWithCauses(error);
  if (status === undefined) return detail;
  const hint = status === 401 || status === 403 ? ', check the authorization and headers configured for it' : '';
  return `HTTP ${status}${hint} (${detail})`;
}

/**
 * An error's message followed by its causes': Node's fetch says only "fetch failed" and keeps
 * "connect ECONNREFUSED 127.0.0.1:1234" in `cause`.
 */
function messageWithCauses(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    const message = current instanceof Error ? current.message : String(current);
    if (message && !parts.some((part) => part.includes(message))) parts.push(message);
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(': ') || 'unknown error';
}

function isHttpStatus(code: unknown): code is number {
  return typeof code === 'number' && code >= 100 && code <= 599;
}
