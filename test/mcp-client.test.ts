import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { type McpCallResult, McpClients, type McpPoolOptions, type McpServerConfig } from '../server/platform/mcp/mcp-client.ts';
import {
  type ExtraTool,
  type McpTestServer,
  type McpTestServerOptions,
  type PlainTestServer,
  startBrokenHttpServer,
  startSseMcpServer,
  startStreamableMcpServer,
  startUnresponsiveHttpServer,
  TOOLS,
  unusedLoopbackUrl,
} from './support/mcp-servers.ts';

// Vitest fails a run on unhandled rejections too, but names no culprit and may attribute it to
// another file; listening here ties any of them to this file's client.
const unhandled: unknown[] = [];
const recordUnhandled = (reason: unknown): void => {
  unhandled.push(reason);
};
beforeAll(() => {
  process.on('unhandledRejection', recordUnhandled);
  process.on('uncaughtException', recordUnhandled);
});
// Runs after the last test's afterEach, so rejections caused by closing clients are caught too.
afterAll(async () => {
  // Rejections are reported after the microtask queue drains: give them a turn.
  await new Promise((resolve) => setImmediate(resolve));
  process.off('unhandledRejection', recordUnhandled);
  process.off('uncaughtException', recordUnhandled);
  expect(unhandled).toEqual([]);
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Bounds no test reaches unless it sets its own. */
const ROOMY_POOL: McpPoolOptions = { idleTimeoutMs: 600_000, maxConnections: 1_000 };

function newClients(pool: Partial<McpPoolOptions> = {}): McpClients {
  const clients = new McpClients({ ...ROOMY_POOL, ...pool });
  cleanups.push(() => clients.close());
  return clients;
}

/** A server closed after the test (a no-op when the test stopped it itself). */
async function tracked<T extends PlainTestServer>(server: Promise<T>): Promise<T> {
  const started = await server;
  cleanups.push(() => started.close());
  return started;
}

const TIMEOUT = { timeoutMs: 10_000 };

/** A call that failed before the tool answered, as its mcp_call item's `error` says it. */
function httpError(message: unknown, code: unknown = expect.any(Number)): { type: 'http_error'; code: number; message: string } {
  return { type: 'http_error', code: code as number, message: message as string };
}
/** For server-side effects that follow an answer asynchronously (a hang-up, a cancellation). */
const EVENTUALLY = { timeout: 5_000, interval: 10 };

function configFor(server: { readonly url: string }, extra: Partial<McpServerConfig> = {}): McpServerConfig {
  return { serverLabel: 'local', serverUrl: server.url, ...extra };
}

/**
 * Tools whose results the SDK's Client.callTool would check against what its own listTools saw
 * (so only on a connection that listed them): a result violating the output schema, a result
 * missing the structured content the schema promises, a tool declaring it needs task-based
 * execution. The emulator checks none of it.
 */
const UNCHECKED_TOOLS: readonly (ExtraTool & { readonly expected: McpCallResult })[] = [
  {
    tool: {
      name: 'typed',
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
    },
    answer: (): CallToolResult => ({ content: [{ type: 'text', text: 'n is a string' }], structuredContent: { n: 'not a number' } }),
    expected: { output: '{"n":"not a number"}' },
  },
  {
    tool: { name: 'unstructured', inputSchema: { type: 'object' }, outputSchema: { type: 'object', properties: { n: { type: 'number' } } } },
    answer: (): CallToolResult => ({ content: [{ type: 'text', text: 'no structured content' }] }),
    expected: { output: 'no structured content' },
  },
  {
    tool: { name: 'tasky', inputSchema: { type: 'object' }, execution: { taskSupport: 'required' } },
    answer: (): CallToolResult => ({ content: [{ type: 'text', text: 'done without a task' }] }),
    expected: { output: 'done without a task' },
  },
];

const SERVER_KINDS = [
  { transport: 'Streamable HTTP', start: startStreamableMcpServer },
  { transport: 'legacy HTTP+SSE', start: startSseMcpServer },
] as const;

describe.each(SERVER_KINDS)('a server speaking $transport', ({ start }) => {
  const startServer = (options: McpTestServerOptions = {}): Promise<McpTestServer> => tracked(start(options));

  test('its tools are listed with name, description, input schema and annotations', async () => {
    const server = await startServer();
    const tools = await newClients().listTools(configFor(server), TIMEOUT);
    expect(tools.map((tool) => tool.name)).toEqual(['echo', 'add', 'fail', 'explode', 'slow', 'whoami', 'mixed']);
    expect(tools[0]).toEqual({
      name: 'echo',
      description: 'Returns its arguments as JSON text.',
      inputSchema: { type: 'object', additionalProperties: true },
      annotations: { readOnlyHint: true },
    });
    expect(tools[1]).toEqual({
      name: 'add',
      description: 'Adds a and b.',
      inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
    });
  });

  test('a paginated tool list is followed through every nextCursor', async () => {
    const server = await startServer({ pageSize: 2 });
    const tools = await newClients().listTools(configFor(server), TIMEOUT);
    expect(tools.map((tool) => tool.name)).toEqual(TOOLS.map((tool) => tool.name));
    expect(server.listRequests).toBe(Math.ceil(TOOLS.length / 2));
  });

  const toolCases: readonly { tool: string; args: Record<string, unknown>; expected: McpCallResult }[] = [
    { tool: 'echo', args: { text: 'hi', n: 1 }, expected: { output: '{"text":"hi","n":1}' } },
    { tool: 'add', args: { a: 2, b: 3 }, expected: { output: '{"sum":5}' } },
    { tool: 'fail', args: {}, expected: { error: { type: 'mcp_tool_execution_error', content: [{ type: 'text', text: 'the fail tool always fails' }] } } },
    {
      tool: 'explode',
      args: {},
      expected: { error: { type: 'mcp_protocol_error', code: -32603, message: "MCP server 'local': tool 'explode' failed: MCP error -32603: kaboom" } },
    },
    { tool: 'slow', args: { ms: 5 }, expected: { output: 'slept 5 ms' } },
    { tool: 'whoami', args: {}, expected: { output: '(none)' } },
    {
      tool: 'mixed',
      args: {},
      expected: {
        output:
          'a picture:\n{"type":"image","mimeType":"image/png"}\n{"type":"resource_link","uri":"file:///report.txt","name":"report","mimeType":"text/plain"}',
      },
    },
    {
      tool: 'missing',
      args: {},
      expected: {
        error: { type: 'mcp_protocol_error', code: -32602, message: "MCP server 'local': tool 'missing' failed: MCP error -32602: Unknown tool: missing" },
      },
    },
  ];

  test.each(toolCases)('calling $tool resolves $expected', async ({ tool, args, expected }) => {
    const server = await startServer();
    const result = await newClients().callTool(configFor(server), tool, args, TIMEOUT);
    expect(result).toEqual(expected);
    expect(server.calls.map((call) => ({ tool: call.tool, arguments: call.arguments }))).toEqual([{ tool, arguments: args }]);
  });

  test('a call outliving its timeout resolves an error, is cancelled and aborted, and the connection still serves', { timeout: 20_000 }, async () => {
    const server = await startServer();
    const clients = newClients();
    const config = configFor(server);
    await clients.listTools(config, TIMEOUT);

    const result = await clients.callTool(config, 'slow', { ms: 120_000 }, { timeoutMs: 300 });

    expect(result).toEqual({ error: { type: 'http_error', code: 504, message: "MCP server 'local': tool 'slow' failed: no answer within 300 ms" } });
    // The server was told (notifications/cancelled) and the HTTP request carrying the call ended.
    await vi.waitFor(() => expect(server.cancelledCalls).toBe(1), EVENTUALLY);
    await vi.waitFor(() => expect(server.openPosts).toBe(0), EVENTUALLY);
    expect(await clients.callTool(config, 'echo', { after: 'timeout' }, TIMEOUT)).toEqual({ output: '{"after":"timeout"}' });
    expect(server.initializations).toBe(1);
  });

  test('configured headers and the bearer token reach the server with each call', async () => {
    const server = await startServer();
    const config = configFor(server, { headers: { 'X-Tenant': 'acme' }, authorization: 'tok' });
    expect(await newClients().callTool(config, 'whoami', {}, TIMEOUT)).toEqual({ output: 'Bearer tok' });
    expect(server.calls[0]?.headers).toMatchObject({ 'x-tenant': 'acme', authorization: 'Bearer tok' });
  });

  test('an Authorization header in headers wins over the authorization token', async () => {
    const server = await startServer();
    const config = configFor(server, { headers: { authorization: 'Bearer explicit' }, authorization: 'tok' });
    expect(await newClients().callTool(config, 'whoami', {}, TIMEOUT)).toEqual({ output: 'Bearer explicit' });
  });

  test('a server requiring authorization refuses a client without it (401, no fallback) and serves one with it', async () => {
    const server = await startServer({ requireAuth: 'Bearer xyz' });
    const clients = newClients();

    const refused = await clients.callTool(configFor(server), 'whoami', {}, TIMEOUT);
    expect(refused).toEqual({
      error: httpError(
        expect.stringMatching(
          /^MCP server 'local': tool 'whoami' failed: could not connect: Streamable HTTP: HTTP 401, check the authorization and headers configured for it \(.*unauthorized\)$/,
        ),
      ),
    });
    await expect(clients.listTools(configFor(server), TIMEOUT)).rejects.toThrow(/^MCP server 'local': listing tools failed: .*HTTP 401/);
    // A 401 is the user's to fix: the legacy transport was not tried behind it.
    expect(server.requests.filter((request) => request.method === 'GET')).toEqual([]);

    expect(await clients.callTool(configFor(server, { authorization: 'xyz' }), 'whoami', {}, TIMEOUT)).toEqual({ output: 'Bearer xyz' });
  });

  test('one connection, initialized once, serves many calls, concurrent or not', async () => {
    const server = await startServer();
    const clients = newClients();
    const config = configFor(server);
    const concurrent = await Promise.all(Array.from({ length: 10 }, (_, i) => clients.callTool(config, 'add', { a: i, b: 1 }, TIMEOUT)));
    expect(concurrent).toEqual(Array.from({ length: 10 }, (_, i) => ({ output: JSON.stringify({ sum: i + 1 }) })));
    await clients.listTools(config, TIMEOUT);
    for (let i = 0; i < 5; i++) await clients.callTool(config, 'echo', { i }, TIMEOUT);
    expect(await clients.callTool(config, 'fail', {}, TIMEOUT)).toEqual({
      error: { type: 'mcp_tool_execution_error', content: [{ type: 'text', text: 'the fail tool always fails' }] },
    });
    expect(await clients.callTool(config, 'explode', {}, TIMEOUT)).toHaveProperty('error');
    expect(await clients.callTool(config, 'echo', {}, TIMEOUT)).toEqual({ output: '{}' });
    expect(server.initializations).toBe(1);
    expect(server.openSessions).toBe(1);

    // Other headers are another identity for the server: another connection.
    await clients.callTool(configFor(server, { headers: { 'X-Tenant': 'other' } }), 'echo', {}, TIMEOUT);
    expect(server.initializations).toBe(2);
  });

  test('after the server goes down calls fail, and once it is back on the same port they reconnect', async () => {
    const first = await startServer();
    const clients = newClients();
    const config = configFor(first);
    expect(await clients.callTool(config, 'echo', { n: 1 }, TIMEOUT)).toEqual({ output: '{"n":1}' });
    await first.close();

    expect(await clients.callTool(config, 'echo', { n: 2 }, TIMEOUT)).toEqual({
      error: httpError(expect.stringMatching(/^MCP server 'local': tool 'echo' failed: .*ECONNREFUSED/)),
    });

    const second = await startServer({ port: first.port });
    expect(await clients.callTool(config, 'echo', { n: 3 }, TIMEOUT)).toEqual({ output: '{"n":3}' });
    expect(second.initializations).toBe(1);
    expect(second.calls.map((call) => call.arguments)).toEqual([{ n: 3 }]);
  });

  test('the first call after a restart on the same port succeeds: the stale session is replaced', async () => {
    const first = await startServer();
    const clients = newClients();
    const config = configFor(first);
    await clients.listTools(config, TIMEOUT);
    await first.close();
    const second = await startServer({ port: first.port });

    expect(await clients.callTool(config, 'add', { a: 1, b: 2 }, TIMEOUT)).toEqual({ output: '{"sum":3}' });
    expect(second.initializations).toBe(1);
    expect(second.calls).toHaveLength(1);
  });

  test('after a crash and a restart on the same port, the next calls reconnect', async () => {
    const first = await startServer();
    const clients = newClients();
    const config = configFor(first);
    expect(await clients.callTool(config, 'echo', { n: 1 }, TIMEOUT)).toEqual({ output: '{"n":1}' });
    await first.crash();
    const second = await startServer({ port: first.port });

    // The first call may meet the dead connection (a reused socket the server cut) and fail:
    // that call may have reached the old server, so it is not silently sent again. The
    // connection is dropped either way, so the next call reconnects.
    const afterCrash = await clients.callTool(config, 'echo', { n: 2 }, TIMEOUT);
    if ('error' in afterCrash) expect(afterCrash.error).toMatchObject(httpError(expect.stringMatching(/^MCP server 'local': tool 'echo' failed: /)));
    expect(await clients.callTool(config, 'echo', { n: 3 }, TIMEOUT)).toEqual({ output: '{"n":3}' });
    expect(second.initializations).toBe(1);
  });

  test('a connection unused for the idle timeout is closed, ending its session, and the next call opens another', async () => {
    const server = await startServer();
    const clients = newClients({ idleTimeoutMs: 20 });
    const config = configFor(server);
    expect(await clients.callTool(config, 'echo', { n: 1 }, TIMEOUT)).toEqual({ output: '{"n":1}' });

    await vi.waitFor(() => expect(server.openSessions).toBe(0), EVENTUALLY);
    expect(await clients.callTool(config, 'echo', { n: 2 }, TIMEOUT)).toEqual({ output: '{"n":2}' });
    expect(server.initializations).toBe(2);
  });

  test('a result is passed on as the server sent it, whether or not this connection listed the tools', async () => {
    const server = await startServer({ extraTools: UNCHECKED_TOOLS });
    const listedFirst = newClients();
    expect((await listedFirst.listTools(configFor(server), TIMEOUT)).map((tool) => tool.name)).toEqual([
      ...TOOLS.map((tool) => tool.name),
      ...UNCHECKED_TOOLS.map((extra) => extra.tool.name),
    ]);
    const neverListed = newClients();
    for (const { tool, expected } of UNCHECKED_TOOLS) {
      expect(await listedFirst.callTool(configFor(server), tool.name, {}, TIMEOUT)).toEqual(expected);
      expect(await neverListed.callTool(configFor(server), tool.name, {}, TIMEOUT)).toEqual(expected);
    }
  });

  test('close() ends the sessions, and later operations fail naming the server', async () => {
    const server = await startServer();
    const clients = new McpClients(ROOMY_POOL);
    const config = configFor(server);
    await clients.callTool(config, 'echo', {}, TIMEOUT);
    expect(server.openSessions).toBe(1);

    await clients.close();

    await vi.waitFor(() => expect(server.openSessions).toBe(0), EVENTUALLY);
    expect(await clients.callTool(config, 'echo', {}, TIMEOUT)).toEqual({
      error: httpError("MCP server 'local': tool 'echo' failed: the MCP client is closed"),
    });
    await expect(clients.listTools(config, TIMEOUT)).rejects.toThrow("MCP server 'local': listing tools failed: the MCP client is closed");
  });
});

describe('choosing the transport', () => {
  test('a server refusing the Streamable HTTP POST is reached over legacy SSE, and that choice is remembered', async () => {
    const first = await tracked(startSseMcpServer());
    const clients = newClients();
    const config = configFor(first);
    expect(await clients.callTool(config, 'echo', { via: 'sse' }, TIMEOUT)).toEqual({ output: '{"via":"sse"}' });
    expect(first.requests.slice(0, 2)).toEqual([
      { method: 'POST', path: '/sse' },
      { method: 'GET', path: '/sse' },
    ]);

    // The end of the event stream (a graceful shutdown, which the client has seen once close()
    // resolves) drops the connection, so the next call opens a new one, and it goes straight
    // to the transport that worked. Were the old connection kept, its EventSource would slip
    // into a new, uninitialized session on its own, and the call would first POST to the old one.
    await first.close();
    const second = await tracked(startSseMcpServer({ port: first.port }));
    expect(await clients.callTool(config, 'echo', { again: true }, TIMEOUT)).toEqual({ output: '{"again":true}' });
    expect(second.requests[0]).toEqual({ method: 'GET', path: '/sse' });
    expect(second.requests).not.toContainEqual({ method: 'POST', path: '/sse' });
    expect(second.initializations).toBe(1);
  });

  test('a Streamable HTTP server is never asked for an SSE stream at connect time', async () => {
    const server = await tracked(startStreamableMcpServer());
    await newClients().listTools(configFor(server), TIMEOUT);
    expect(server.requests[0]).toEqual({ method: 'POST', path: '/mcp' });
    expect(server.initializations).toBe(1);
  });
});

describe('the connection pool', () => {
  /** A promise the test resolves itself. */
  function gate(): { readonly promise: Promise<void>; readonly open: () => void } {
    let open = (): void => {};
    const promise = new Promise<void>((resolve) => {
      open = resolve;
    });
    return { promise, open };
  }

  test('a connection whose call is still running outlives the idle timeout that closes an unused one', async () => {
    const held = gate();
    const busy = await tracked(startStreamableMcpServer({ holdCalls: held.promise }));
    const quiet = await tracked(startStreamableMcpServer());
    const clients = newClients({ idleTimeoutMs: 20 });

    // Listing (not held) leaves the busy connection idle, its idle timeout running; the call
    // that takes it up at once must stop that timeout.
    await clients.listTools(configFor(busy), TIMEOUT);
    const running = clients.callTool(configFor(busy), 'echo', { held: true }, TIMEOUT);
    await vi.waitFor(() => expect(busy.calls).toHaveLength(1), EVENTUALLY);
    expect(await clients.callTool(configFor(quiet), 'echo', {}, TIMEOUT)).toEqual({ output: '{}' });
    // The quiet connection idled out after the busy one's call had started.
    await vi.waitFor(() => expect(quiet.openSessions).toBe(0), EVENTUALLY);
    expect(busy.openSessions).toBe(1);

    held.open();
    expect(await running).toEqual({ output: '{"held":true}' });
    // Idle from now on, it goes the same way.
    await vi.waitFor(() => expect(busy.openSessions).toBe(0), EVENTUALLY);
    expect(busy.initializations).toBe(1);
  });

  test('beyond the maximum, the least recently used connection is closed, ending its session; its credentials reconnect later', async () => {
    const server = await tracked(startStreamableMcpServer());
    const clients = newClients({ maxConnections: 3 });
    const as = (token: string): McpServerConfig => configFor(server, { authorization: token });
    const whoami = async (token: string): Promise<void> => {
      expect(await clients.callTool(as(token), 'whoami', {}, TIMEOUT)).toEqual({ output: `Bearer ${token}` });
    };

    for (const token of ['t0', 't1', 't2']) await whoami(token);
    await whoami('t0'); // t0 is now the most recently used, t1 the least
    await whoami('t3');
    await vi.waitFor(() => expect(server.openSessions).toBe(3), EVENTUALLY);
    expect(server.initializations).toBe(4);

    // t0, t2 and t3 kept their connections; t1 connects anew (closing t0, now the least recent).
    await whoami('t0');
    await whoami('t2');
    await whoami('t3');
    expect(server.initializations).toBe(4);
    await whoami('t1');
    expect(server.initializations).toBe(5);
    await vi.waitFor(() => expect(server.openSessions).toBe(3), EVENTUALLY);

    for (let i = 0; i < 20; i++) await whoami(`many-${i}`);
    await vi.waitFor(() => expect(server.openSessions).toBe(3), EVENTUALLY);
    expect(server.initializations).toBe(25);
  });

  test('a connection in use is never closed to make room: the pool exceeds its maximum until the call ends', async () => {
    const held = gate();
    const busy = await tracked(startStreamableMcpServer({ holdCalls: held.promise }));
    const other = await tracked(startStreamableMcpServer());
    const clients = newClients({ maxConnections: 1 });

    const running = clients.callTool(configFor(busy), 'echo', { held: true }, TIMEOUT);
    await vi.waitFor(() => expect(busy.calls).toHaveLength(1), EVENTUALLY);
    // Two connections for a maximum of one: the idle one goes, though it is the newer.
    expect(await clients.callTool(configFor(other), 'echo', {}, TIMEOUT)).toEqual({ output: '{}' });
    await vi.waitFor(() => expect(other.openSessions).toBe(0), EVENTUALLY);
    expect(busy.openSessions).toBe(1);

    held.open();
    expect(await running).toEqual({ output: '{"held":true}' });
    expect(busy.openSessions).toBe(1);
    // Another connection now makes room by closing the busy one, idle at last.
    expect(await clients.callTool(configFor(other), 'echo', { again: true }, TIMEOUT)).toEqual({ output: '{"again":true}' });
    await vi.waitFor(() => expect(busy.openSessions).toBe(0), EVENTUALLY);
    expect(other.openSessions).toBe(1);
    expect(busy.initializations).toBe(1);
    expect(other.initializations).toBe(2);
  });

  test('close() also waits for connections the pool is still closing', async () => {
    const server = await tracked(startStreamableMcpServer());
    const clients = new McpClients({ ...ROOMY_POOL, maxConnections: 1 });
    await clients.callTool(configFor(server, { authorization: 'a' }), 'echo', {}, TIMEOUT);
    await clients.callTool(configFor(server, { authorization: 'b' }), 'echo', {}, TIMEOUT);
    await clients.close();
    expect(server.openSessions).toBe(0);
  });
});

describe('PTC_MCP_ALLOWED_URLS', () => {
  test('contacts only servers whose URL starts with an allowed prefix, user info not counting', async () => {
    const server = await tracked(startStreamableMcpServer());
    const { origin, port } = new URL(server.url);
    const allowedHere = newClients({ allowedUrls: [`${origin}/`] });
    expect((await allowedHere.listTools(configFor(server), TIMEOUT)).length).toBeGreaterThan(0);

    const elsewhere = newClients({ allowedUrls: ['https://mcp.example.com/'] });
    await expect(elsewhere.listTools(configFor(server), TIMEOUT)).rejects.toThrow(`${server.url} is not allowed by this emulator's PTC_MCP_ALLOWED_URLS`);
    expect(await elsewhere.callTool(configFor(server), 'echo', {}, TIMEOUT)).toEqual({ error: httpError(expect.stringContaining('PTC_MCP_ALLOWED_URLS')) });
    // This names 127.0.0.1, with user info that reads like the allowed host.
    const disguised = `http://mcp.example.com:x@127.0.0.1:${port}/mcp`;
    await expect(newClients({ allowedUrls: ['http://mcp.example.com'] }).listTools(configFor({ url: disguised }), TIMEOUT)).rejects.toThrow('is not allowed');
    expect(server.initializations).toBe(1);
  });
});

describe('servers that do not work', () => {
  test('a server where nothing listens: the call resolves an error and listing rejects, both naming the refusal', async () => {
    const url = await unusedLoopbackUrl();
    const clients = newClients();
    const config: McpServerConfig = { serverLabel: 'down', serverUrl: url };
    expect(await clients.callTool(config, 'echo', {}, TIMEOUT)).toEqual({
      error: httpError(
        expect.stringMatching(
          /^MCP server 'down': tool 'echo' failed: could not connect: Streamable HTTP: fetch failed: connect ECONNREFUSED 127\.0\.0\.1:\d+$/,
        ),
      ),
    });
    await expect(clients.listTools(config, TIMEOUT)).rejects.toThrow(/^MCP server 'down': listing tools failed: could not connect: .*ECONNREFUSED/);
  });

  test('a URL that neither transport answers: both attempts and their 404s are named', async () => {
    const server = await tracked(startStreamableMcpServer());
    const config: McpServerConfig = { serverLabel: 'typo', serverUrl: server.url.replace('/mcp', '/nope') };
    expect(await newClients().callTool(config, 'echo', {}, TIMEOUT)).toEqual({
      error: httpError(
        expect.stringMatching(
          /^MCP server 'typo': tool 'echo' failed: could not connect: Streamable HTTP: HTTP 404 \(.*\); legacy HTTP\+SSE: HTTP 404 \(.*\)$/,
        ),
      ),
    });
    expect(server.requests).toEqual([
      { method: 'POST', path: '/nope' },
      { method: 'GET', path: '/nope' },
    ]);
  });

  test('a server answering 500 to everything: the error names the status, and SSE is not tried behind it', async () => {
    const server = await tracked(startBrokenHttpServer());
    const clients = newClients();
    const config: McpServerConfig = { serverLabel: 'broken', serverUrl: server.url };
    expect(await clients.callTool(config, 'echo', {}, TIMEOUT)).toEqual({
      error: httpError(expect.stringMatching(/^MCP server 'broken': tool 'echo' failed: could not connect: Streamable HTTP: HTTP 500 \(.*internal failure\)$/)),
    });
    await expect(clients.listTools(config, TIMEOUT)).rejects.toThrow(/^MCP server 'broken': listing tools failed: .*HTTP 500/);
  });

  test('a hung server: the call resolves a timeout error and listing rejects with one', { timeout: 20_000 }, async () => {
    const server = await tracked(startUnresponsiveHttpServer());
    const clients = newClients();
    const config: McpServerConfig = { serverLabel: 'hung', serverUrl: server.url };
    expect(await clients.callTool(config, 'echo', {}, { timeoutMs: 300 })).toEqual({
      error: httpError(expect.stringMatching(/^MCP server 'hung': tool 'echo' failed: no answer within 300 ms/), 504),
    });
    await expect(clients.listTools(config, { timeoutMs: 300 })).rejects.toThrow(/^MCP server 'hung': listing tools failed: .*no answer within 300 ms/);
    // Giving up includes hanging up: no request is left open on the server.
    await vi.waitFor(() => expect(server.openRequests).toBe(0), EVENTUALLY);
  });

  test('a legacy SSE server whose stream never announces its endpoint: the call times out', { timeout: 20_000 }, async () => {
    const server = await tracked(startUnresponsiveHttpServer({ eventStreamOnly: true }));
    const result = await newClients().callTool({ serverLabel: 'mute', serverUrl: server.url }, 'echo', {}, { timeoutMs: 300 });
    expect(result).toEqual({ error: httpError(expect.stringMatching(/^MCP server 'mute': tool 'echo' failed: no answer within 300 ms/), 504) });
    // The abandoned event stream is closed, not left open (or reconnecting) in the background.
    await vi.waitFor(() => expect(server.openRequests).toBe(0), EVENTUALLY);
  });

  test('an invalid or non-HTTP server URL resolves an error instead of throwing', async () => {
    const clients = newClients();
    expect(await clients.callTool({ serverLabel: 'typo', serverUrl: 'not a url' }, 'echo', {}, TIMEOUT)).toEqual({
      error: httpError("MCP server 'typo': tool 'echo' failed: Invalid URL"),
    });
    expect(await clients.callTool({ serverLabel: 'local', serverUrl: 'file:///etc/passwd' }, 'echo', {}, TIMEOUT)).toEqual({
      error: httpError("MCP server 'local': tool 'echo' failed: the server URL must be http or https, not file:"),
    });
  });
});
