import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { type AddressInfo, Server as NetServer, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  isInitializeRequest,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * Real MCP servers for tests, built with the SDK the emulator uses as a client, on ephemeral
 * loopback ports. They record what they see (tool calls with their HTTP headers, sessions
 * initialized, HTTP requests) so tests can assert on the server side.
 *
 * They use the SDK's low-level `Server` rather than `McpServer`: McpServer answers every
 * exception in a tool handler (even an McpError) with an `isError` result, and lists all tools
 * in one page, so it can produce neither a JSON-RPC error from a tool nor pagination.
 */

export interface RecordedCall {
  readonly tool: string;
  readonly arguments: Readonly<Record<string, unknown>>;
  /** The HTTP headers of the request that carried the call, names in lower case. */
  readonly headers: Readonly<Record<string, string>>;
}

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
}

export interface McpTestServerOptions {
  /** The exact Authorization header every HTTP request must carry, else 401. */
  readonly requireAuth?: string;
  /** Tools per tools/list page; all in one page when absent. */
  readonly pageSize?: number;
  /** Listen on this port (to restart a server where a client knew it); ephemeral when absent. */
  readonly port?: number;
  /** Tools listed after TOOLS, each answered by its `answer`. */
  readonly extraTools?: readonly ExtraTool[];
  /** Every tool call, once recorded, waits for this before it is answered. */
  readonly holdCalls?: Promise<unknown>;
}

/** A tool a test adds to a server of its own (TOOLS, which other tests enumerate, stays as is). */
export interface ExtraTool {
  readonly tool: Tool;
  readonly answer: (args: Readonly<Record<string, unknown>>) => CallToolResult;
}

export interface McpTestServer {
  readonly url: string;
  readonly port: number;
  readonly calls: readonly RecordedCall[];
  /** Every HTTP request received, in order. */
  readonly requests: readonly RecordedRequest[];
  /** Sessions that completed the initialize handshake. */
  readonly initializations: number;
  /** tools/list requests answered (one per page). */
  readonly listRequests: number;
  /** Tool calls whose handler saw the client cancel them. */
  readonly cancelledCalls: number;
  /** Sessions currently open. */
  readonly openSessions: number;
  /** POST requests whose response has not finished or been abandoned by the client yet. */
  readonly openPosts: number;
  /**
   * A graceful shutdown: sessions end, every connection is ended, and this resolves once the
   * clients have hung up (so a client has seen the shutdown before the test goes on).
   */
  close(): Promise<void>;
  /** An abrupt stop: connections are cut, sessions are not ended. */
  crash(): Promise<void>;
}

/**
 * Stopping a server (by close or crash) happens once; later calls wait for that stop and do
 * nothing more, so a test may stop a server itself (to restart it) and cleanup may still close it.
 */
function stopsOnce(): (stop: () => Promise<void>) => () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return (stop) => () => (stopping ??= stop());
}

export const TOOLS: readonly Tool[] = [
  {
    name: 'echo',
    description: 'Returns its arguments as JSON text.',
    inputSchema: { type: 'object', additionalProperties: true },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'add',
    description: 'Adds a and b.',
    inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
    outputSchema: { type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'] },
  },
  { name: 'fail', description: 'Always reports a tool error.', inputSchema: { type: 'object' } },
  { name: 'explode', description: 'Throws: answered with a JSON-RPC error.', inputSchema: { type: 'object' } },
  {
    name: 'slow',
    description: 'Waits ms milliseconds, then answers.',
    inputSchema: { type: 'object', properties: { ms: { type: 'number' } }, required: ['ms'] },
  },
  { name: 'whoami', description: 'Returns the Authorization header it saw.', inputSchema: { type: 'object' } },
  { name: 'mixed', description: 'Returns text, an image and a resource link.', inputSchema: { type: 'object' } },
];

interface ServerState {
  readonly options: McpTestServerOptions;
  readonly calls: RecordedCall[];
  readonly requests: RecordedRequest[];
  initializations: number;
  listRequests: number;
  cancelledCalls: number;
  openPosts: number;
}

function newState(options: McpTestServerOptions): ServerState {
  return { options, calls: [], requests: [], initializations: 0, listRequests: 0, cancelledCalls: 0, openPosts: 0 };
}

/** One MCP server session: the SDK's Protocol object serves exactly one transport. */
function newMcpSession(state: ServerState): Server {
  const server = new Server({ name: 'ptc-test-server', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.oninitialized = () => {
    state.initializations += 1;
  };
  const extraTools = state.options.extraTools ?? [];
  const tools = [...TOOLS, ...extraTools.map((extraTool) => extraTool.tool)];
  server.setRequestHandler(ListToolsRequestSchema, (request) => {
    state.listRequests += 1;
    const pageSize = state.options.pageSize ?? tools.length;
    const start = request.params?.cursor === undefined ? 0 : Number(request.params.cursor);
    if (!Number.isInteger(start) || start < 0 || start > tools.length) {
      throw new McpError(ErrorCode.InvalidParams, `bad cursor ${request.params?.cursor}`);
    }
    const end = start + pageSize;
    return { tools: tools.slice(start, end), ...(end < tools.length ? { nextCursor: String(end) } : {}) };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const args = request.params.arguments ?? {};
    const headers = normalizeHeaders(extra.requestInfo?.headers ?? {});
    state.calls.push({ tool: request.params.name, arguments: args, headers });
    await state.options.holdCalls;
    const extraTool = extraTools.find((candidate) => candidate.tool.name === request.params.name);
    if (extraTool) return extraTool.answer(args);
    switch (request.params.name) {
      case 'echo':
        return { content: [{ type: 'text', text: JSON.stringify(args) }] };
      case 'add': {
        const sum = Number(args.a) + Number(args.b);
        return { content: [{ type: 'text', text: String(sum) }], structuredContent: { sum } };
      }
      case 'fail':
        return { content: [{ type: 'text', text: 'the fail tool always fails' }], isError: true };
      case 'explode':
        throw new Error('kaboom');
      case 'slow': {
        const ms = Number(args.ms);
        try {
          await sleep(ms, undefined, { signal: extra.signal });
        } catch (error) {
          if (extra.signal.aborted) state.cancelledCalls += 1;
          throw error;
        }
        return { content: [{ type: 'text', text: `slept ${ms} ms` }] };
      }
      case 'whoami':
        return { content: [{ type: 'text', text: headers.authorization ?? '(none)' }] };
      case 'mixed':
        return {
          content: [
            { type: 'text', text: 'a picture:' },
            { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
            { type: 'resource_link', uri: 'file:///report.txt', name: 'report', mimeType: 'text/plain' },
          ],
        };
      default:
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    }
  });
  return server;
}

/** A Streamable HTTP server at `/mcp`, with sessions (as most deployed servers have). */
export async function startStreamableMcpServer(options: McpTestServerOptions = {}): Promise<McpTestServer> {
  const state = newState(options);
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer((req, res) => {
    void (async () => {
      if (!admit(state, req, res, '/mcp')) return;
      const sessionId = req.headers['mcp-session-id'];
      if (typeof sessionId === 'string') {
        const transport = sessions.get(sessionId);
        // The spec's answer to a session the server does not know (e.g. after a restart).
        if (!transport) return sendJsonRpcError(res, 404, ErrorCode.ConnectionClosed, 'Session not found');
        return transport.handleRequest(req, res, req.method === 'POST' ? await readJson(req) : undefined);
      }
      if (req.method !== 'POST') return sendJsonRpcError(res, 400, ErrorCode.InvalidRequest, 'No session');
      const body = await readJson(req);
      if (!isInitializeRequest(body)) return sendJsonRpcError(res, 400, ErrorCode.InvalidRequest, 'Initialize first');
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, transport);
        },
      });
      transport.onclose = () => {
        if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
      };
      await newMcpSession(state).connect(transport);
      await transport.handleRequest(req, res, body);
    })().catch((error: unknown) => failRequest(res, error));
  });
  return listening(
    http,
    state,
    '/mcp',
    () => sessions.size,
    async () => {
      await Promise.all([...sessions.values()].map((transport) => transport.close()));
    },
  );
}

/**
 * A server still on the legacy HTTP+SSE transport: GET `/sse` opens the event stream, POST
 * `/messages?sessionId=…` carries requests. POST `/sse` is refused with 405, as such servers do.
 */
export async function startSseMcpServer(options: McpTestServerOptions = {}): Promise<McpTestServer> {
  const state = newState(options);
  const sessions = new Map<string, SSEServerTransport>();
  const http = createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://localhost').pathname;
      if (!admit(state, req, res, path === '/messages' ? '/messages' : '/sse')) return;
      if (path === '/sse') {
        if (req.method !== 'GET') {
          res.writeHead(405, { allow: 'GET' }).end('Method Not Allowed');
          return;
        }
        const transport = new SSEServerTransport('/messages', res);
        sessions.set(transport.sessionId, transport);
        transport.onclose = () => {
          sessions.delete(transport.sessionId);
        };
        await newMcpSession(state).connect(transport);
        return;
      }
      const sessionId = new URL(req.url ?? '/', 'http://localhost').searchParams.get('sessionId') ?? '';
      const transport = sessions.get(sessionId);
      if (req.method !== 'POST' || !transport) {
        res.writeHead(404).end('Session not found');
        return;
      }
      await transport.handlePostMessage(req, res);
    })().catch((error: unknown) => failRequest(res, error));
  });
  return listening(
    http,
    state,
    '/sse',
    () => sessions.size,
    async () => {
      await Promise.all([...sessions.values()].map((transport) => transport.close()));
    },
  );
}

export interface PlainTestServer {
  readonly url: string;
  close(): Promise<void>;
}

export interface UnresponsiveTestServer extends PlainTestServer {
  /** Requests the client has not given up on yet. */
  readonly openRequests: number;
}

/** Answers 500 to every request, like a server whose MCP endpoint crashes. */
export async function startBrokenHttpServer(): Promise<PlainTestServer> {
  const http = createServer((req, res) => {
    req.resume();
    res.writeHead(500, { 'content-type': 'text/plain' }).end('internal failure');
  });
  const port = await listen(http, 0);
  return { url: `http://127.0.0.1:${port}/mcp`, close: stopsOnce()(() => closeHttp(http)) };
}

/**
 * A hung server: accepts requests and never answers them. With `eventStreamOnly`, it refuses
 * POST with 405 (so a client falls back to legacy SSE) and answers GET with an event stream
 * that never sends anything, not even the `endpoint` event.
 */
export async function startUnresponsiveHttpServer(options: { readonly eventStreamOnly?: boolean } = {}): Promise<UnresponsiveTestServer> {
  let openRequests = 0;
  const http = createServer((req, res) => {
    openRequests += 1;
    res.once('close', () => {
      openRequests -= 1;
    });
    req.resume();
    if (!options.eventStreamOnly) return;
    if (req.method === 'GET') res.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders();
    else res.writeHead(405, { allow: 'GET' }).end();
  });
  const port = await listen(http, 0);
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get openRequests() {
      return openRequests;
    },
    close: stopsOnce()(() => closeHttp(http)),
  };
}

/** A loopback URL where nothing listens: a port bound and released again. */
export async function unusedLoopbackUrl(): Promise<string> {
  const http = createServer();
  const port = await listen(http, 0);
  await closeHttp(http);
  return `http://127.0.0.1:${port}/mcp`;
}

/** Logs the request and checks path and credentials; answers it and returns false when refused. */
function admit(state: ServerState, req: IncomingMessage, res: ServerResponse, path: string): boolean {
  const requestPath = new URL(req.url ?? '/', 'http://localhost').pathname;
  state.requests.push({ method: req.method ?? '', path: requestPath });
  if (req.method === 'POST') {
    state.openPosts += 1;
    res.once('close', () => {
      state.openPosts -= 1;
    });
  }
  if (requestPath !== path) {
    req.resume();
    res.writeHead(404).end('Not Found');
    return false;
  }
  if (state.options.requireAuth !== undefined && req.headers.authorization !== state.options.requireAuth) {
    req.resume();
    res.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'text/plain' }).end('unauthorized');
    return false;
  }
  return true;
}

async function listening(
  http: HttpServer,
  state: ServerState,
  path: string,
  openSessions: () => number,
  closeSessions: () => Promise<void>,
): Promise<McpTestServer> {
  const sockets = trackSockets(http);
  const once = stopsOnce();
  const port = await listen(http, state.options.port ?? 0);
  return {
    url: `http://127.0.0.1:${port}${path}`,
    port,
    calls: state.calls,
    requests: state.requests,
    get initializations() {
      return state.initializations;
    },
    get listRequests() {
      return state.listRequests;
    },
    get cancelledCalls() {
      return state.cancelledCalls;
    },
    get openSessions() {
      return openSessions();
    },
    get openPosts() {
      return state.openPosts;
    },
    close: once(async () => {
      await closeSessions();
      await closeGracefully(http, sockets);
    }),
    crash: once(() => closeHttp(http)),
  };
}

function listen(http: HttpServer, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, '127.0.0.1', () => {
      http.off('error', reject);
      resolve((http.address() as AddressInfo).port);
    });
  });
}

function trackSockets(http: HttpServer): Set<Socket> {
  const sockets = new Set<Socket>();
  http.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return sockets;
}

/**
 * Stops listening, ends every connection and resolves once each peer has closed its side too
 * (http servers are half-open, so a socket closes only then). net.Server's close, not
 * http.Server's: since Node 19 the latter destroys idle keep-alive connections at once, and a
 * client notices that only when it next tries to use them.
 */
function closeGracefully(http: HttpServer, sockets: ReadonlySet<Socket>): Promise<void> {
  return new Promise((resolve, reject) => {
    NetServer.prototype.close.call(http, (error) => (error ? reject(error) : resolve()));
    for (const socket of sockets) socket.end();
  });
}

/** Stops listening and cuts open connections (event streams never end on their own). */
function closeHttp(http: HttpServer): Promise<void> {
  return new Promise((resolve, reject) => {
    http.close((error) => (error ? reject(error) : resolve()));
    http.closeAllConnections();
  });
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : (JSON.parse(text) as unknown);
}

function sendJsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

function failRequest(res: ServerResponse, error: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(500, { 'content-type': 'text/plain' }).end(error instanceof Error ? error.message : String(error));
}

function normalizeHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): Record<string, string> {
  const normalized: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) normalized[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return normalized;
}
