import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../server/app.ts';
import type { ModelContext } from '../server/engine/stand-ins/model-decision.ts';
import { ScenarioError } from '../server/engine/stand-ins/scenario-model.ts';
import { functionCallsOf, inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

const weatherTool: OpenAI.Responses.Tool = {
  type: 'function',
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } } },
  strict: false,
  output_schema: { type: 'object' },
  allowed_callers: ['direct', 'programmatic'],
};
const WEATHER_TOOLS: OpenAI.Responses.Tool[] = [weatherTool, { type: 'programmatic_tool_calling' }];

describe('the inline stand-in', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it.each([['js'], ['javascript'], ['JS']])('runs a fenced ```%s block of the last user message, whatever the model name', async (lang) => {
    const response = await server.client.responses.create({
      model: `made-up-model-${lang}`,
      input: `Please:\n\`\`\`${lang}\ntext(6 * 7)\n\`\`\`\nthanks`,
      tools: programTools(),
    });
    expect(response.output.map((item) => item.type)).toEqual(['program', 'program_output', 'message']);
    expect(response.output[0]).toMatchObject({ type: 'program', code: 'text(6 * 7)\n' });
    expect(response.output_text).toBe('42');
  });

  it('passes a turn with no code on: the autopilot writes the program (with it off, test/autopilot.test.ts)', async () => {
    const { data, response } = await server.client.responses.create({ model: 'any', input: 'hello', tools: programTools('lookup') }).withResponse();
    expect(data.output.map((item) => item.type)).toEqual(['reasoning', 'program', 'function_call']);
    expect(response.headers.get('x-ptc-stand-in')).toBe('autopilot');
  });

  it.each([
    ['the request has no programmatic_tool_calling tool', [], undefined, 'programs are off for this turn'],
    ['tool_choice is "none"', programTools(), 'none' as const, 'tool_choice is "none"'],
  ])('does not write a program when %s, and says why', async (_, tools, toolChoice, reason) => {
    const response = await server.client.responses.create({
      model: 'any',
      input: inlineProgram('text(1)'),
      tools,
      ...(toolChoice ? { tool_choice: toolChoice } : {}),
    });
    expect(response.output.map((item) => item.type)).toEqual(['message']);
    expect(response.output_text).toContain(reason);
  });

  it('sees only the tools that allow the programmatic caller', async () => {
    const tools: OpenAI.Responses.Tool[] = [
      ...programTools('both_ok'),
      { type: 'function', name: 'direct_only', parameters: {}, strict: false },
      { type: 'function', name: 'explicit_direct', parameters: {}, strict: false, allowed_callers: ['direct'] },
    ];
    const response = await server.client.responses.create({ model: 'any', input: inlineProgram('text(Object.keys(tools))'), tools });
    expect(response.output_text).toBe('["both_ok"]');
  });
});

describe('scenario files', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ scenarios: fileURLToPath(new URL('./fixtures/weather-scenario.json', import.meta.url)) });
  });
  afterAll(() => server.close());

  it('makes the direct calls of a matching rule, then answers with its message template', async () => {
    const first = await server.client.responses.create({ model: 'any', input: 'What is the weather in Paris?', tools: WEATHER_TOOLS });
    expect(first.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
    const [call] = functionCallsOf(first);
    expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Paris"}', caller: { type: 'direct' } });
    const second = await server.client.responses.create({
      model: 'any',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call!.call_id, output: '{"city":"Paris","temp":21}' }],
      tools: WEATHER_TOOLS,
    });
    expect(second.output_text).toBe('It is 21 degrees in Paris.');
  });

  it('omits caller on direct calls when programs are not enabled', async () => {
    const first = await server.client.responses.create({ model: 'any', input: 'weather in Rome', tools: [{ ...weatherTool, allowed_callers: ['direct'] }] });
    expect(functionCallsOf(first)[0]).not.toHaveProperty('caller');
  });

  it('matches on turn and model, and fills {{user}}', async () => {
    const first = await server.client.responses.create({ model: 'gpt-test', input: 'hi' });
    const second = await server.client.responses.create({ model: 'gpt-test', previous_response_id: first.id, input: 'again' });
    expect(second.output_text).toBe('Turn two for again');
    const otherModel = await server.client.responses.create({ model: 'o-test', previous_response_id: first.id, input: 'again' });
    expect(otherModel.output_text).not.toBe('Turn two for again');
  });

  it('matches on metadata and fills {{result.field}} and {{status}} after the program', async () => {
    const first = await server.client.responses.create({ model: 'any', input: 'go', tools: WEATHER_TOOLS, metadata: { suite: 'stand-in' } });
    const [call] = functionCallsOf(first);
    const second = await server.client.responses.create({
      model: 'any',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call!.call_id, output: '{"summary":"cold"}', caller: call!.caller ?? null }],
      tools: WEATHER_TOOLS,
      metadata: { suite: 'stand-in' },
    });
    expect(programOutputOf(second)).toMatchObject({ status: 'completed', result: '{"summary":"cold"}' });
    expect(second.output_text).toBe('Program said cold (completed)');
  });

  it('refuses, with a message, a rule that calls a programs-only tool directly', async () => {
    const programsOnly: OpenAI.Responses.Tool[] = [{ ...weatherTool, allowed_callers: ['programmatic'] }, { type: 'programmatic_tool_calling' }];
    const response = await server.client.responses.create({ model: 'any', input: 'weather in Paris', tools: programsOnly });
    expect(response.output_text).toContain('only programs may call it');
  });

  it("refuses, with a message, a rule whose arguments break the tool's strict parameters, as no model would send them", async () => {
    const strict = (parameters: Record<string, unknown>): OpenAI.Responses.Tool[] => [
      { ...weatherTool, parameters, strict: true },
      { type: 'programmatic_tool_calling' },
    ];
    const refused = await server.client.responses.create({
      model: 'any',
      input: 'weather in Paris',
      tools: strict({ type: 'object', properties: { city: { type: 'integer' } } }),
    });
    expect(refused.output.map((item) => item.type)).toEqual(['message']);
    expect(refused.output_text).toContain("the stand-in's arguments for get_weather do not match its strict parameters: arguments.city must be integer");
    const kept = await server.client.responses.create({
      model: 'any',
      input: 'weather in Paris',
      tools: strict({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
    });
    expect(kept.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
  });
});

describe('scenario rounds: direct calls made one round after another (then)', () => {
  const pageTool: OpenAI.Responses.Tool = {
    type: 'function',
    name: 'list_page',
    parameters: { type: 'object', properties: { page: { type: 'integer' } }, required: ['page'], additionalProperties: false },
    strict: true,
  };
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({
      scenarios: {
        rules: [
          {
            match: { user: 'count the pages' },
            calls: [{ name: 'list_page', arguments: { page: 1 } }],
            then: [
              { calls: [{ name: 'list_page', arguments: { page: 2 } }] },
              {
                calls: [
                  { name: 'list_page', arguments: { page: 3 } },
                  { name: 'list_page', arguments: { page: 4 } },
                ],
              },
            ],
            message: 'Last pages: {{outputs}}',
          },
        ],
      },
    });
  });
  afterAll(() => server.close());

  /** Answers each round's calls with `page N`, as a chain or resending everything; returns what each response asked. */
  async function converse(store: boolean, after?: string): Promise<{ asked: number[][]; final: string; id: string }> {
    const asked: number[][] = [];
    const items: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'Please count the pages' }];
    let previous = after;
    let input: OpenAI.Responses.ResponseInputItem[] = items;
    for (let request = 0; request < 6; request++) {
      const response = await server.client.responses.create({
        model: 'any',
        input,
        tools: [pageTool],
        store,
        ...(previous && store ? { previous_response_id: previous } : {}),
      });
      const calls = functionCallsOf(response);
      if (calls.length === 0) return { asked, final: response.output_text, id: response.id };
      asked.push(calls.map((call) => (JSON.parse(call.arguments) as { page: number }).page));
      const outputs = calls.map((call) => ({
        type: 'function_call_output' as const,
        call_id: call.call_id,
        output: `page ${(JSON.parse(call.arguments) as { page: number }).page}`,
      }));
      items.push(...(response.output as OpenAI.Responses.ResponseInputItem[]), ...outputs);
      previous = response.id;
      input = store ? outputs : items;
    }
    throw new Error('the rule never answered');
  }

  it.each([true, false])('makes each round once the last one is answered, then the message over the outputs of every round (store: %s)', async (store) => {
    expect(await converse(store)).toMatchObject({ asked: [[1], [2], [3, 4]], final: 'Last pages: ["page 1","page 2","page 3","page 4"]' });
  });

  it('starts again from the first round on the next user message', async () => {
    const first = await converse(true);
    // The same chain, a second user message: the rounds (and the outputs the message shows) start over.
    expect(await converse(true, first.id)).toMatchObject({ asked: [[1], [2], [3, 4]], final: 'Last pages: ["page 1","page 2","page 3","page 4"]' });
  });

  it('refuses then without calls, naming the rule', async () => {
    await expect(buildServer({ logger: false, scenarios: { rules: [{ message: 'x', then: [{ calls: [{ name: 'a' }] }] }] } as never })).rejects.toThrow(
      /rules\[0\]: then follows calls/,
    );
  });
});

describe('YAML scenario files and their errors', () => {
  it('loads YAML from PTC_SCENARIOS-style paths', async () => {
    const path = join(tmpdir(), `ptc-scenario-${process.pid}.yaml`);
    writeFileSync(path, 'rules:\n  - match: { user: ping }\n    message: pong\n');
    const server = await startServer({ scenarios: path });
    try {
      expect((await server.client.responses.create({ model: 'any', input: 'ping?' })).output_text).toBe('pong');
    } finally {
      await server.close();
    }
  });

  it.each([
    [
      'a rule with neither program, calls, message nor knobs',
      { rules: [{ match: { user: 'x' } }] },
      /rules\[0\]: a rule needs program, calls, message or knobs/,
    ],
    ['a rule with both program and calls', { rules: [{ program: 'x', calls: [{ name: 'a' }] }] }, /a rule has either program or calls/],
    ['an unknown field', { rules: [{ message: 'x', typo: 1 }] }, /rules\[0\]/],
    ['no rules', { rules: [] }, /rules/],
  ])('rejects %s at start-up, naming the field', async (_, document, message) => {
    await expect(buildServer({ logger: false, scenarios: document as never })).rejects.toThrow(ScenarioError);
    await expect(buildServer({ logger: false, scenarios: document as never })).rejects.toThrow(message);
  });

  it('names the file when it cannot be read', async () => {
    await expect(buildServer({ logger: false, scenarios: '/nonexistent/rules.yaml' })).rejects.toThrow(/Scenario file \/nonexistent\/rules.yaml/);
  });
});

describe('an in-process model function', () => {
  it('is asked first, sees the phase and context, and can pass a turn on to the inline stand-in', async () => {
    const seen: ModelContext[] = [];
    const server = await startServer({
      model: (context) => {
        seen.push(context);
        if (context.lastUserText === 'inline please') return undefined;
        if (context.phase === 'user_turn') return { type: 'program', code: 'text(await tools.lookup({q: 1}))', reasoning: 'use a program' };
        return { type: 'message', text: `done: ${context.program?.result}` };
      },
    });
    try {
      const tools = programTools('lookup');
      const first = await server.client.responses.create({ model: 'm', input: 'find it', tools, instructions: 'be brief' });
      expect(first.output.map((item) => item.type)).toEqual(['reasoning', 'program', 'function_call']);
      const [call] = functionCallsOf(first);
      const second = await server.client.responses.create({
        model: 'm',
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: call!.call_id, output: 'found', caller: call!.caller ?? null }],
        tools,
      });
      expect(second.output_text).toBe('done: found');
      expect(seen.map((context) => context.phase)).toEqual(['user_turn', 'after_program']);
      expect(seen[0]).toMatchObject({ model: 'm', lastUserText: 'find it', turn: 1, instructions: 'be brief', programmaticToolCalling: true });
      expect(seen[0]?.tools).toEqual([
        { name: 'lookup', type: 'function', callers: ['programmatic'], parameters: { type: 'object', properties: {}, additionalProperties: true } },
      ]);
      expect(seen[0]?.history).toMatchObject([{ type: 'message', role: 'user', content: 'find it' }]);
      // The second turn sees the whole conversation: the first input and output, then the call's output.
      expect(seen[1]?.history.map((item) => item.type)).toEqual(['message', 'reasoning', 'program', 'function_call', 'function_call_output']);

      // Passed on, past the inline stand-in (no fenced code), to the autopilot.
      const passed = await server.client.responses.create({ model: 'm', input: 'inline please' });
      expect(passed.output_text).toMatch(/^ptc-emulator autopilot: the request has no tools/);
    } finally {
      await server.close();
    }
  });
});
