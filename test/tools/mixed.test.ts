import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentLoop } from '../support/agent-loop.ts';
import { startStreamableMcpServer, type McpTestServer } from '../support/mcp-servers.ts';
import { startServer, type RunningServer } from '../support/server.ts';

// One program that mixes what a real billing agent would: a function the client runs, an MCP
// tool behind approval on a real MCP server, and a deferred tool a search loads first.
const PROGRAM = `
const customer = await tools.get_customer({ id: 'c-1' });
const { sum } = JSON.parse(await tools.calc.add({ a: customer.balance, b: 10 }));
const sent = await tools.send_invoice({ to: customer.email, amount: sum });
text(JSON.stringify({ amount: sum, sent }));
`;

let mcp: McpTestServer;
let server: RunningServer;
beforeAll(async () => {
  mcp = await startStreamableMcpServer();
  server = await startServer({
    scenarios: { rules: [{ match: { user: 'invoice' }, search: 'invoice', program: PROGRAM, message: 'Invoiced {{result.amount}}.' }] },
  });
});
afterAll(async () => {
  await server.close();
  await mcp.close();
});

function tools(): OpenAI.Responses.Tool[] {
  return [
    { type: 'tool_search' },
    {
      type: 'function',
      name: 'get_customer',
      parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      strict: true,
      output_schema: { type: 'object', required: ['balance', 'email'] },
      allowed_callers: ['programmatic'],
    },
    { type: 'mcp', server_label: 'calc', server_url: mcp.url, require_approval: 'always', allowed_tools: ['add'], allowed_callers: ['programmatic'] },
    {
      type: 'function',
      name: 'send_invoice',
      description: 'Sends an invoice by email',
      parameters: null,
      strict: false,
      defer_loading: true,
      allowed_callers: ['programmatic'],
    },
    { type: 'programmatic_tool_calling' },
  ];
}

describe('a function, an MCP tool behind approval and a deferred tool in one program', () => {
  for (const [label, options] of [
    ['store: false, plain create', { store: false }],
    ['previous_response_id, the stream helper', { store: true, stream: true }],
  ] as const) {
    it(`runs end to end (${label})`, async () => {
      const approvals: string[] = [];
      const invoices: unknown[] = [];
      const before = mcp.calls.length;
      const { text, responses } = await agentLoop(
        server.client,
        { model: 'm', input: 'Send the invoice for c-1', tools: tools() },
        {
          functions: {
            get_customer: ({ id }) => ({ id, balance: 32, email: 'ada@example.com' }),
            send_invoice: (invoice) => (invoices.push(invoice), 'queued'),
          },
          approve: (request) => (approvals.push(`${request.server_label}.${request.name} ${request.arguments}`), true),
        },
        options,
      );
      expect(text).toBe('Invoiced 42.');
      expect(approvals).toEqual(['calc.add {"a":32,"b":10}']);
      expect(invoices).toEqual([{ to: 'ada@example.com', amount: 42 }]);
      expect(mcp.calls.slice(before)).toMatchObject([{ tool: 'add', arguments: { a: 32, b: 10 } }]);
      expect(responses.map((response) => response.output.map((item) => item.type))).toEqual([
        ['mcp_list_tools', 'tool_search_call', 'tool_search_output', 'program', 'function_call'],
        ['mcp_approval_request'],
        ['mcp_call', 'function_call'],
        ['program_output', 'message'],
      ]);
      const program = responses[0]!.output.find((item) => item.type === 'program')!;
      const caller = { type: 'program', caller_id: program.call_id };
      for (const item of responses.flatMap((response) => response.output)) {
        if (['function_call', 'mcp_approval_request', 'mcp_call'].includes(item.type)) expect(item).toMatchObject({ caller });
      }
    });
  }
});
