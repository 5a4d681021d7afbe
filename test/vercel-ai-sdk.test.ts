import { createOpenAI, type OpenAIProvider } from '@ai-sdk/openai';
import { generateText, type ModelMessage, stepCountIs, streamText, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startServer, type RunningServer } from './support/server.ts';

// The Vercel AI SDK (`ai` with `@ai-sdk/openai`, which speaks PTC) driving its own loop —
// generateText and streamText with `stopWhen` — against a listening emulator with no scenario:
// the autopilot writes the programs. With its default, `store: true`, the SDK resends the stored
// reasoning, program and program_output items as `item_reference`s; with `store: false` it
// resends them whole (and asks for reasoning's encrypted_content).

interface SentBody {
  input: { type?: string; id?: string; role?: string }[];
  store?: boolean;
  include?: string[];
}

let server: RunningServer;
let openai: OpenAIProvider;
/** The body of every POST /v1/responses the SDK sent, in order. */
const sent: SentBody[] = [];
/** What the tools were called with, in order. */
const calls: string[] = [];

beforeAll(async () => {
  server = await startServer();
  openai = createOpenAI({
    baseURL: server.baseURL,
    apiKey: 'test-key',
    fetch: (async (url: string | URL | Request, init?: RequestInit) => {
      if (String(url).endsWith('/responses') && typeof init?.body === 'string') sent.push(JSON.parse(init.body) as SentBody);
      return fetch(url, init);
    }) as typeof fetch,
  });
});
afterAll(() => server?.close());

const SKU = z.object({ sku: z.string().describe('The SKU, e.g. sku_123') });
const PROGRAMMATIC = { openai: { allowedCallers: ['programmatic'] } };

function inventoryTools(provider: OpenAIProvider) {
  return {
    programmatic_tool_calling: provider.tools.programmaticToolCalling(),
    get_inventory: tool({
      description: 'Units of a SKU in stock.',
      inputSchema: SKU,
      providerOptions: PROGRAMMATIC,
      execute: async ({ sku }) => {
        calls.push(`get_inventory ${sku}`);
        if (sku === 'sku_offline') throw new Error('the warehouse is offline');
        return { sku, available_units: 42 };
      },
    }),
    get_demand: tool({
      description: 'Units of a SKU customers asked for.',
      inputSchema: SKU,
      providerOptions: PROGRAMMATIC,
      execute: async ({ sku }) => {
        calls.push(`get_demand ${sku}`);
        return { sku, requested_units: 31 };
      },
    }),
  };
}

/** The SDK's settings for a store mode: its default (no option at all), or store: false. */
function settings(store: 'default' | false) {
  return {
    model: openai.responses('gpt-5'),
    tools: inventoryTools(openai),
    stopWhen: stepCountIs(6),
    ...(store === false ? { providerOptions: { openai: { store: false } } } : {}),
  };
}

describe.each(['default', false] as const)('the Vercel AI SDK, store: %s', (store) => {
  it("generateText runs the guide's task to its answer: one program calls both tools, and the answer states both numbers", async () => {
    calls.length = 0;
    const mark = sent.length;
    const result = await generateText({ ...settings(store), prompt: 'Compare inventory with demand for sku_123.' });
    expect(calls.sort()).toEqual(['get_demand sku_123', 'get_inventory sku_123']);
    expect(result.text).toContain('42');
    expect(result.text).toContain('31');
    const toolCalls = result.steps[0]!.content.filter((part) => part.type === 'tool-call').map((part) => part.toolName);
    expect(toolCalls.sort()).toEqual(['get_demand', 'get_inventory', 'programmatic_tool_calling']);
    const bodies = sent.slice(mark);
    expect(bodies).toHaveLength(2);
    const resent = bodies[1]!.input.map((item) => item.type ?? item.role);
    if (store === 'default') {
      // The stored reasoning and program come back as references to them.
      expect(resent.filter((type) => type === 'item_reference')).toHaveLength(2);
      expect(bodies[1]!.input.find((item) => item.type === 'item_reference' && item.id?.startsWith('cm_'))).toBeDefined();
    } else {
      expect(resent).toContain('program');
      expect(resent).not.toContain('item_reference');
      expect(bodies[0]!.include).toEqual(['reasoning.encrypted_content']);
    }
  });

  it('streamText streams the same loop with no error part, ending in the answer', async () => {
    calls.length = 0;
    const result = streamText({ ...settings(store), prompt: 'Compare inventory with demand for sku_123.' });
    const parts: string[] = [];
    const errors: unknown[] = [];
    for await (const part of result.fullStream) {
      parts.push(part.type);
      if (part.type === 'error') errors.push(part.error);
    }
    expect(errors).toEqual([]);
    expect(calls.sort()).toEqual(['get_demand sku_123', 'get_inventory sku_123']);
    const text = await result.text;
    expect(text).toContain('42');
    expect(text).toContain('31');
    expect(parts).toContain('tool-result');
  });

  it('a tool that throws: its error reaches the program, which goes on, and the answer says what failed', async () => {
    calls.length = 0;
    const result = await generateText({ ...settings(store), prompt: 'Compare inventory with demand for sku_offline.' });
    expect(calls.sort()).toEqual(['get_demand sku_offline', 'get_inventory sku_offline']);
    const errors = result.steps.flatMap((step) => step.content.filter((part) => part.type === 'tool-error'));
    expect(errors.map((part) => part.toolName)).toEqual(['get_inventory']);
    expect(result.text).toContain('the warehouse is offline');
    expect(result.text).toContain('31');
  });

  it('a second user turn over the whole history (responseMessages resent) runs a new program', async () => {
    calls.length = 0;
    const question: ModelMessage = { role: 'user', content: 'Compare inventory with demand for sku_123.' };
    const first = await generateText({ ...settings(store), messages: [question] });
    const second = await generateText({
      ...settings(store),
      messages: [question, ...first.responseMessages, { role: 'user', content: 'Now compare inventory with demand for sku_777.' }],
    });
    expect(calls.slice(2).sort()).toEqual(['get_demand sku_777', 'get_inventory sku_777']);
    expect(second.text).toContain('sku_777');
  });
});
