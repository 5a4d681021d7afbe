import fc from 'fast-check';
import type { FunctionTool, ResponseInputItem, Tool } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAgainstSchema } from '../runtime/index.ts';
import { planCalls, type PlanRequest } from '../server/engine/stand-ins/autopilot/call-plan.ts';
import type { ToolSummary } from '../server/engine/conversation/tool-set.ts';
import { agentLoop } from './support/agent-loop.ts';
import { startServer, type RunningServer } from './support/server.ts';

/**
 * The autopilot, the stand-in that decides what nothing else did: it must behave as a model
 * using PTC would for any tool set (nothing in it knows a tool's name), with arguments valid
 * against each tool's parameters and taken from the user's words where they give them.
 */

const SKU = { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'], additionalProperties: false } as const;

/** The guide's two tools. */
const GUIDE_TOOLS: Tool[] = [
  {
    type: 'function',
    name: 'get_inventory',
    description: 'Return an object with sku (string) and available_units (number).',
    parameters: SKU,
    output_schema: {
      type: 'object',
      properties: { sku: { type: 'string' }, available_units: { type: 'number' } },
      required: ['sku', 'available_units'],
      additionalProperties: false,
    },
    allowed_callers: ['programmatic'],
    strict: true,
  } as FunctionTool,
  {
    type: 'function',
    name: 'get_demand',
    description: 'Return an object with sku (string) and requested_units (number).',
    parameters: SKU,
    output_schema: {
      type: 'object',
      properties: { sku: { type: 'string' }, requested_units: { type: 'number' } },
      required: ['sku', 'requested_units'],
      additionalProperties: false,
    },
    allowed_callers: ['programmatic'],
    strict: true,
  } as FunctionTool,
  { type: 'programmatic_tool_calling' } as Tool,
];

const GUIDE_HANDLERS = {
  functions: {
    get_inventory: ({ sku }: { sku: string }) => ({ sku, available_units: 42 }),
    get_demand: ({ sku }: { sku: string }) => ({ sku, requested_units: 31 }),
  },
};

function summary(name: string, parameters: unknown, extra: Partial<ToolSummary> = {}): ToolSummary {
  return { name, type: 'function', callers: ['programmatic'], parameters, ...extra };
}

function plan(tools: readonly ToolSummary[], message: string, seed = 1): ReturnType<typeof planCalls> {
  const request: PlanRequest = { tools, message, seed, programmatic: true };
  return planCalls(request);
}

describe('planning the calls (call-plan.ts)', () => {
  it('takes an argument from the word of the message its property is named by', () => {
    const { calls, choice } = plan([summary('get_inventory', SKU), summary('get_demand', SKU)], 'Compare inventory with demand for sku_123.');
    expect(choice).toBe('named');
    expect(calls.map((call) => [call.tool, call.candidates?.[0]?.value])).toEqual([
      ['get_inventory', { sku: 'sku_123' }],
      ['get_demand', { sku: 'sku_123' }],
    ]);
  });

  it('fills nested objects, enums, formats and bounded numbers from the message, and the rest valid against the schema', async () => {
    const parameters = {
      type: 'object',
      properties: {
        location: {
          type: 'object',
          properties: { city: { type: 'string' }, country: { enum: ['FR', 'DE', 'US'] } },
          required: ['city', 'country'],
          additionalProperties: false,
        },
        date: { type: 'string', format: 'date' },
        days: { type: 'integer', minimum: 1, maximum: 7 },
        units: { enum: ['metric', 'imperial'] },
        detail: { $ref: '#/$defs/detail' },
      },
      required: ['location', 'date', 'days', 'units', 'detail'],
      additionalProperties: false,
      $defs: { detail: { anyOf: [{ type: 'string', enum: ['hourly', 'daily'] }, { type: 'null' }] } },
    };
    const { calls } = plan([summary('weather_forecast', parameters)], 'Weather forecast for the city Lyon in FR on 2027-01-15, imperial units, 3 days');
    const value = calls[0]!.candidates![0]!.value as Record<string, unknown>;
    expect(value).toMatchObject({ location: { city: 'Lyon', country: 'FR' }, date: '2027-01-15', days: 3, units: 'imperial' });
    expect(await checkAgainstSchema(parameters, value, 'arguments')).toBeUndefined();
  });

  it('picks the tools the message names; failing that, by their verb, their namespace, their description; failing that all that change nothing', () => {
    const tools = [
      summary('get_weather', SKU, { description: 'Forecast for a city' }),
      summary('list_flights', SKU, { description: 'Seats free on airline routes' }),
      summary('book_flight', SKU, { description: 'Reserve an airline seat' }),
      summary('fetch_page', SKU),
      summary('wiki.count_words', SKU),
      summary('wiki.get_article', SKU),
    ];
    const chosen = (message: string) => plan(tools, message).calls.map((call) => call.tool);
    expect(chosen('Book a flight to Oslo')).toEqual(['book_flight']);
    // A tool that changes something is called only when the message asks for it by its verb.
    expect(chosen('Which flights go to Oslo?')).toEqual(['list_flights']);
    expect(chosen('Fetch https://example.com/a')).toEqual(['fetch_page']);
    expect(chosen('Anything on the wiki?')).toEqual(['wiki.count_words', 'wiki.get_article']);
    expect(chosen('I need an airline seat')).toEqual(['list_flights']);
    expect(plan(tools, 'Hello there').choice).toBe('all');
    expect(chosen('Hello there')).toEqual(['get_weather', 'list_flights', 'fetch_page', 'wiki.count_words', 'wiki.get_article']);
  });

  it.each([
    ['What is the weather in Paris?', { city: 'Paris' }],
    ['Weather for the city New York, please', { city: 'New York' }],
  ])('takes a place from %j', (message, expected) => {
    const parameters = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    expect(plan([summary('get_weather', parameters)], message).calls[0]!.candidates![0]!.value).toEqual(expected);
  });

  it('takes quoted phrases, identifiers, dates in words, lists of addresses, counts, and each token once', () => {
    const parameters = {
      type: 'object',
      properties: {
        title: { type: 'string' },
        flight_id: { type: 'string' },
        day: { type: 'string', format: 'date' },
        attendees: { type: 'array', items: { type: 'string', format: 'email' } },
        limit: { type: 'integer' },
        origin: { type: 'string', pattern: '^[A-Z]{3}$' },
        destination: { type: 'string', pattern: '^[A-Z]{3}$' },
      },
      required: ['title', 'flight_id', 'day', 'attendees', 'limit', 'origin', 'destination'],
    };
    const message = 'Plan a meeting titled "Design review" about flight AF123 from CDG to JFK on March 14, 2025 with ada@example.com and bob@example.org';
    expect(plan([summary('plan_meeting', parameters)], message).calls[0]!.candidates![0]!.value).toEqual({
      title: 'Design review',
      flight_id: 'AF123',
      day: '2025-03-14',
      attendees: ['ada@example.com', 'bob@example.org'],
      limit: 5,
      origin: 'CDG',
      destination: 'JFK',
    });
  });

  it('takes a required argument the message does not give from the output of another chosen tool, a step later', () => {
    const findCustomer = summary(
      'find_customer',
      { type: 'object', properties: { email: { type: 'string', format: 'email' } }, required: ['email'] },
      {
        outputSchema: { type: 'object', properties: { customer_id: { type: 'string' } }, required: ['customer_id'] },
      },
    );
    const listOrders = summary('list_orders', { type: 'object', properties: { customer_id: { type: 'string' } }, required: ['customer_id'] });
    const { calls } = plan([findCustomer, listOrders], 'Find the customer ada@example.com and list her orders');
    expect(calls[0]!.candidates![0]!.value).toEqual({ email: 'ada@example.com' });
    expect(calls[1]!.references).toEqual([{ property: 'customer_id', call: 0, field: 'customer_id' }]);
  });

  it('is deterministic: the same request, the same plan; another seed may fill what the message leaves open otherwise', () => {
    const parameters = {
      type: 'object',
      properties: { code: { type: 'string', pattern: '^[A-Z]{3}-\\d{4}$' }, weight: { type: 'number', minimum: 0 } },
      required: ['code', 'weight'],
    };
    const tools = [summary('ship_parcel', parameters)];
    expect(plan(tools, 'Ship it', 7)).toEqual(plan(tools, 'Ship it', 7));
    expect(plan(tools, 'Ship it', 7).calls[0]!.candidates![0]!.value).toMatchObject({ code: expect.stringMatching(/^[A-Z]{3}-\d{4}$/) });
  });
});

describe('the autopilot behind a listening server', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  const journal = async (): Promise<{ programs?: { code?: string }[]; stand_in?: { decided_by: string[]; nothing_ran?: string } }[]> =>
    ((await (await fetch(`${server.baseURL}/emulator/journal?limit=50`)).json()) as { data: never[] }).data;

  it.each([
    ['store: false', { store: false }],
    ['previous_response_id', { store: true }],
    ['streamed, store: false', { store: false, stream: true }],
  ])("runs the guide's loop unchanged (%s): a program calls both tools with the message's sku, and the message states both numbers", async (_, options) => {
    const result = await agentLoop(
      server.client,
      { model: 'gpt-6-astra', input: 'Compare inventory with demand for sku_123.', tools: GUIDE_TOOLS },
      GUIDE_HANDLERS,
      options,
    );
    const first = result.responses[0]!;
    const program = first.output.find((item) => item.type === 'program');
    expect(program).toBeDefined();
    const calls = first.output.filter((item) => item.type === 'function_call');
    expect(calls.map((call) => [call.name, JSON.parse(call.arguments), call.caller])).toEqual([
      ['get_inventory', { sku: 'sku_123' }, { type: 'program', caller_id: program!.call_id }],
      ['get_demand', { sku: 'sku_123' }, { type: 'program', caller_id: program!.call_id }],
    ]);
    expect(result.text).toContain('42');
    expect(result.text).toContain('31');
    expect(result.responses.at(-1)!.output.find((item) => item.type === 'program_output')).toMatchObject({ status: 'completed' });
  });

  it('says who decided in the x-ptc-stand-in header and the journal', async () => {
    const { response } = await server.client.responses
      .create({ model: 'm', input: 'Compare inventory with demand for sku_123.', tools: GUIDE_TOOLS })
      .withResponse();
    expect(response.headers.get('x-ptc-stand-in')).toBe('autopilot');
    expect(response.headers.get('x-ptc-nothing-ran')).toBeNull();
    expect((await journal())[0]!.stand_in).toEqual({ decided_by: ['autopilot'] });
  });

  it('runs a tool set of other names: a namespace with nested and enum parameters, a custom tool, and a tool only the model may call, called directly in the same response', async () => {
    const tools = [
      {
        type: 'namespace',
        name: 'travel',
        description: 'Trips',
        tools: [
          {
            type: 'function',
            name: 'search_hotels',
            description: 'Hotels in a city for some nights',
            parameters: {
              type: 'object',
              properties: {
                place: {
                  type: 'object',
                  properties: { city: { type: 'string' }, country: { enum: ['FR', 'IT', 'JP'] } },
                  required: ['city', 'country'],
                  additionalProperties: false,
                },
                nights: { type: 'integer', minimum: 1, maximum: 30 },
                tier: { enum: ['budget', 'standard', 'luxury'] },
              },
              required: ['place', 'nights', 'tier'],
              additionalProperties: false,
            },
            output_schema: {
              type: 'object',
              properties: { hotels: { type: 'array', items: { type: 'string' } }, cheapest: { type: 'number' } },
              required: ['hotels', 'cheapest'],
            },
            allowed_callers: ['programmatic'],
            strict: true,
          },
        ],
      },
      { type: 'custom', name: 'translate_note', description: 'Translates a note', allowed_callers: ['programmatic'] },
      {
        type: 'function',
        name: 'confirm_hotels',
        description: 'Ask the traveller to confirm',
        parameters: { type: 'object', properties: { channel: { enum: ['sms', 'email'] } }, required: ['channel'], additionalProperties: false },
        allowed_callers: ['direct'],
        strict: true,
      },
      { type: 'programmatic_tool_calling' },
    ] as Tool[];
    const seen: unknown[] = [];
    const result = await agentLoop(
      server.client,
      { model: 'm', input: 'Find hotels in the city Kyoto JP for 4 nights, luxury tier; translate_note "arrive late"; confirm the hotels by email.', tools },
      {
        functions: {
          'travel.search_hotels': (args) => (seen.push(args), { hotels: ['Ryokan A', 'Hotel B'], cheapest: 180 }),
          confirm_hotels: (args) => (seen.push(args), { confirmed: true }),
        },
        custom: { translate_note: (input) => (seen.push(input), 'arriver tard') },
      },
    );
    const first = result.responses[0]!.output;
    expect(first.map((item) => item.type)).toEqual(['reasoning', 'program', 'function_call', 'custom_tool_call', 'function_call']);
    expect(first.filter((item) => item.type === 'function_call').map((call) => call.caller?.type)).toEqual(['program', 'direct']);
    expect(seen).toEqual([{ place: { city: 'Kyoto', country: 'JP' }, nights: 4, tier: 'luxury' }, 'arrive late', { channel: 'email' }]);
    expect(result.text).toContain('Ryokan A');
    expect(result.text).toContain('180');
    expect(result.text).toContain('arriver tard');
    expect(result.text).toContain('confirmed true');
  });

  it("makes a call that needs another call's output a step later: two pauses of one program", async () => {
    const tools = [
      {
        type: 'function',
        name: 'find_customer',
        parameters: { type: 'object', properties: { email: { type: 'string' } }, required: ['email'], additionalProperties: false },
        output_schema: { type: 'object', properties: { customer_id: { type: 'string' } }, required: ['customer_id'] },
        allowed_callers: ['programmatic'],
        strict: true,
      },
      {
        type: 'function',
        name: 'list_orders',
        parameters: { type: 'object', properties: { customer_id: { type: 'string' } }, required: ['customer_id'], additionalProperties: false },
        allowed_callers: ['programmatic'],
        strict: true,
      },
      { type: 'programmatic_tool_calling' },
    ] as Tool[];
    const result = await agentLoop(
      server.client,
      { model: 'm', input: 'Find the customer ada@example.com and list her orders.', tools },
      {
        functions: { find_customer: () => ({ customer_id: 'cus_9' }), list_orders: ({ customer_id }) => [`${customer_id}-order-1`] },
      },
    );
    const callsPerResponse = result.responses.map((response) =>
      response.output.filter((item) => item.type === 'function_call').map((call) => `${call.name} ${call.arguments}`),
    );
    expect(callsPerResponse).toEqual([['find_customer {"email":"ada@example.com"}'], ['list_orders {"customer_id":"cus_9"}'], []]);
    expect(result.text).toContain('cus_9-order-1');
  });

  it('calls the tools directly when the request does not enable programs, then states their outputs', async () => {
    const tools = [
      { type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: false },
    ] as Tool[];
    const result = await agentLoop(
      server.client,
      { model: 'm', input: 'What is the weather in the city Oslo?', tools },
      { functions: { get_weather: ({ city }) => ({ city, celsius: -3 }) } },
    );
    expect(result.responses[0]!.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);
    expect(result.text).toBe('get_weather returned city Oslo and celsius -3.');
  });

  it("without programs, makes a call that needs another call's output a round later", async () => {
    const tools = [
      {
        type: 'function',
        name: 'find_customer',
        parameters: { type: 'object', properties: { email: { type: 'string' } }, required: ['email'] },
        output_schema: { type: 'object', properties: { customer_id: { type: 'string' } }, required: ['customer_id'] },
        strict: false,
      },
      {
        type: 'function',
        name: 'list_orders',
        parameters: { type: 'object', properties: { customer_id: { type: 'string' } }, required: ['customer_id'] },
        strict: false,
      },
    ] as Tool[];
    const result = await agentLoop(
      server.client,
      { model: 'm', input: 'Find the customer ada@example.com and list her orders.', tools },
      {
        functions: { find_customer: () => ({ customer_id: 'cus_9' }), list_orders: ({ customer_id }) => [`${customer_id}-order-1`] },
      },
    );
    const rounds = result.responses.map((response) =>
      response.output.filter((item) => item.type === 'function_call').map((call) => `${call.name} ${call.arguments}`),
    );
    expect(rounds).toEqual([['find_customer {"email":"ada@example.com"}'], ['list_orders {"customer_id":"cus_9"}'], []]);
    expect(result.text).toBe('find_customer returned customer_id cus_9; list_orders returned 0 cus_9-order-1.');
  });

  it('searches for deferred tools the message is about before it writes the program', async () => {
    const tools = [
      {
        type: 'function',
        name: 'get_invoice',
        description: 'An invoice by number',
        parameters: { type: 'object', properties: { number: { type: 'string' } }, required: ['number'] },
        allowed_callers: ['programmatic'],
        defer_loading: true,
      },
      { type: 'tool_search' },
      { type: 'programmatic_tool_calling' },
    ] as Tool[];
    const result = await agentLoop(
      server.client,
      { model: 'm', input: 'Show the invoice number INV-77', tools },
      { functions: { get_invoice: ({ number }) => ({ number, total: 99 }) } },
    );
    expect(result.responses[0]!.output.map((item) => item.type)).toEqual(['tool_search_call', 'tool_search_output', 'reasoning', 'program', 'function_call']);
    expect(result.text).toContain('99');
  });

  it('a schema whose values cost seconds to make holds up only its own conversation, which gets a message saying so', async () => {
    // Checking the message's token against this pattern backtracks for ever (2^40 ways to split 40 a's).
    const costly = [
      {
        type: 'function',
        name: 'stamp_label',
        parameters: { type: 'object', properties: { code: { type: 'string', pattern: '^(a+)+$' } }, required: ['code'], additionalProperties: false },
        allowed_callers: ['programmatic'],
        strict: true,
      },
      { type: 'programmatic_tool_calling' },
    ] as Tool[];
    const hostileInput = `Stamp the label with code ${'a'.repeat(40)}b.`;
    const order: string[] = [];
    const hostile = server.client.responses.create({ model: 'm', input: hostileInput, tools: costly }).then((response) => (order.push('costly'), response));
    const honest = agentLoop(server.client, { model: 'm', input: 'Compare inventory with demand for sku_123.', tools: GUIDE_TOOLS }, GUIDE_HANDLERS).then(
      (result) => (order.push('honest'), result),
    );
    const [costlyResponse, honestResult] = await Promise.all([hostile, honest]);
    expect(order).toEqual(['honest', 'costly']);
    expect(honestResult.text).toContain('42');
    expect(costlyResponse.output_text).toMatch(/^ptc-emulator autopilot: working out the calls for this request took over 2000 ms/);
  });

  it.each([
    ['on: a program calls both', true],
    ['off: the model calls both directly', false],
  ])('decides Agents API turns too, PTC %s', async (_, ptc) => {
    const sku = { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] } as const;
    const agent = await server.client.beta.agents.create({
      model: 'm',
      tools: [
        { type: 'function', name: 'get_price', description: 'Unit price of a SKU.', parameters: sku },
        { type: 'function', name: 'get_stock', description: 'Units in stock of a SKU.', parameters: sku },
        ...(ptc ? [] : [{ type: 'programmatic_tool_calling' as const, enabled: false }]),
      ],
    });
    const session = await server.client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: 'none' } });
    const seen: string[] = [];
    const result = await server.client.beta.agents.sessions
      .stream(session.id, {
        input: 'What are the price and the stock of sku_9?',
        toolHandlers: {
          get_price: ({ sku }) => (seen.push(`get_price ${String(sku)}`), { price: 7 }),
          get_stock: ({ sku }) => (seen.push(`get_stock ${String(sku)}`), { units: 6 }),
        },
      })
      .finalResult();
    expect(seen.sort()).toEqual(['get_price sku_9', 'get_stock sku_9']);
    expect(result.output_text).toBe('get_price returned price 7; get_stock returned units 6.');
  });

  it('calls a tool that changes something only when asked by its verb, or when tool_choice names it', async () => {
    const user = { type: 'object', properties: { user_id: { type: 'string' } }, required: ['user_id'], additionalProperties: false };
    const tools = [
      { type: 'function', name: 'get_user_profile', parameters: user, strict: true, allowed_callers: ['programmatic'] },
      { type: 'function', name: 'delete_user', parameters: user, strict: true, allowed_callers: ['programmatic'] },
      { type: 'programmatic_tool_calling' },
    ] as Tool[];
    const calls = async (input: string, extra: Record<string, unknown> = {}) => {
      const response = await server.client.responses.create({ model: 'm', input, tools, ...extra });
      return response.output.filter((item) => item.type === 'function_call').map((call) => `${call.name} ${call.arguments}`);
    };
    expect(await calls('Show me the profile of user u_77')).toEqual(['get_user_profile {"user_id":"u_77"}']);
    expect(await calls('Hi! Who are you?')).toEqual(['get_user_profile {"user_id":"user_id-sample"}']);
    expect(await calls('Delete user u_77')).toEqual(['delete_user {"user_id":"u_77"}']);
    expect(await calls('Hi!', { tool_choice: { type: 'function', name: 'delete_user' } })).toEqual(['delete_user {"user_id":"user_id-sample"}']);
    expect(await calls('user u_77', { tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'get_user_profile' }] } })).toEqual(
      ['get_user_profile {"user_id":"u_77"}'],
    );
  });

  it('keeps its arguments small and its lookups its own, whatever the schema says', async () => {
    // A 16 KiB const in arrays of at least 64 of arrays of at least 64: 64 MiB of arguments, if made.
    let huge: Record<string, unknown> = { type: 'string', const: 'a '.repeat(8_192) };
    huge = { type: 'array', items: { type: 'array', items: huge, minItems: 64 }, minItems: 64 };
    const tools = [
      {
        type: 'function',
        name: 'load_docs',
        parameters: { type: 'object', properties: { data: huge }, required: ['data'] },
        strict: false,
        allowed_callers: ['programmatic'],
      },
      {
        type: 'function',
        name: 'load_names',
        parameters: { type: 'object', properties: { name: { type: 'string', format: 'constructor' }, x: { $ref: '#/%zz' } }, required: ['name'] },
        strict: false,
        allowed_callers: ['programmatic'],
      },
      { type: 'programmatic_tool_calling' },
    ] as Tool[];
    const result = await agentLoop(
      server.client,
      { model: 'm', input: 'Load the docs and the names.', tools },
      { functions: { load_docs: () => 'never', load_names: () => ({ ok: 1 }) } },
    );
    const program = result.responses[0]!.output.find((item) => item.type === 'program')!;
    expect(program.code.length).toBeLessThan(20_000);
    expect(program.code).not.toContain('tools.load_docs');
    expect(result.text).toBe('load_names returned ok 1.');
  });

  it('says plainly when the request has no tools', async () => {
    const response = await server.client.responses.create({ model: 'm', input: 'Hello' });
    expect(response.output_text).toMatch(/^ptc-emulator autopilot: the request has no tools/);
  });

  it('writes programs every random tool set accepts: arguments valid against each strict schema, every call answered, the program completed', async () => {
    const scalar = fc.oneof(
      fc.constant({ type: 'string' }),
      fc.constant({ type: 'string', format: 'date' }),
      fc.constant({ type: 'string', format: 'email' }),
      fc.constant({ type: 'string', pattern: '^[a-z]{2,4}-[0-9]{2}$' }),
      fc.constant({ type: 'string', minLength: 3, maxLength: 5 }),
      fc.record({ type: fc.constant('integer'), minimum: fc.integer({ min: -5, max: 5 }), maximum: fc.integer({ min: 6, max: 50 }) }),
      fc.constant({ type: 'number', exclusiveMinimum: 0 }),
      fc.constant({ type: 'boolean' }),
      fc.uniqueArray(fc.stringMatching(/^[a-z]{2,8}$/), { minLength: 1, maxLength: 4 }).map((values) => ({ enum: values })),
      fc.constant({ anyOf: [{ type: 'string' }, { type: 'null' }] }),
      fc.constant({ type: 'array', items: { type: 'integer' }, minItems: 1, maxItems: 3 }),
    );
    const objectOf = (member: fc.Arbitrary<unknown>) =>
      fc.dictionary(fc.stringMatching(/^[a-z][a-z_]{0,9}$/), member, { minKeys: 1, maxKeys: 4 }).map((properties) => ({
        type: 'object',
        properties,
        required: Object.keys(properties),
        additionalProperties: false,
      }));
    const parameters = objectOf(fc.oneof({ weight: 4, arbitrary: scalar }, { weight: 1, arbitrary: objectOf(scalar) }));
    const toolSet = fc.uniqueArray(fc.record({ name: fc.stringMatching(/^[a-z]{3,8}_[a-z]{3,8}$/), parameters }), {
      minLength: 1,
      maxLength: 4,
      selector: (tool) => tool.name,
    });
    for (const [index, set] of fc.sample(toolSet, { numRuns: 24, seed: 20261206 }).entries()) {
      const tools = [
        ...set.map(({ name, parameters }) => ({ type: 'function', name, parameters, allowed_callers: ['programmatic'], strict: true })),
        { type: 'programmatic_tool_calling' },
      ] as Tool[];
      const answered: string[] = [];
      const functions = Object.fromEntries(set.map(({ name }) => [name, (args: unknown) => (answered.push(name), { ok: true, echo: args })]));
      const result = await agentLoop(server.client, { model: 'm', input: 'Please proceed.', tools }, { functions });
      const outputs = result.responses.flatMap((response) => response.output.filter((item) => item.type === 'program_output'));
      expect(outputs, `tool set ${index}: ${JSON.stringify(set)}`).toEqual([expect.objectContaining({ status: 'completed' })]);
      expect(answered.sort(), JSON.stringify(set)).toEqual(set.map(({ name }) => name).sort());
      // Each tool's entry of the result is its output, never the {error} of a refused call.
      const byTool = JSON.parse(outputs[0]!.type === 'program_output' ? outputs[0]!.result : '{}') as Record<string, unknown>;
      for (const { name } of set) expect(byTool[name], JSON.stringify(set)).toMatchObject({ ok: true });
    }
  });
});

describe('with the autopilot off', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ config: { autopilot: false } });
  });
  afterAll(() => server.close());

  it('a turn nothing decides gets the advice, the x-ptc-nothing-ran header and a journal entry saying why nothing ran', async () => {
    const { data, response } = await server.client.responses
      .create({ model: 'm', input: 'Compare inventory with demand for sku_123.', tools: GUIDE_TOOLS })
      .withResponse();
    expect(data.output.map((item) => item.type)).toEqual(['message']);
    expect(data.output_text).toMatch(/^ptc-emulator has no model/);
    expect(response.headers.get('x-ptc-nothing-ran')).toMatch(/autopilot is off/);
    const [entry] = ((await (await fetch(`${server.baseURL}/emulator/journal?limit=1`)).json()) as { data: { stand_in: unknown }[] }).data;
    expect(entry!.stand_in).toEqual({ decided_by: ['fallback'], nothing_ran: expect.stringMatching(/autopilot is off/) });
  });

  it('an inline program still runs, and the header names the stand-in that ran it', async () => {
    const input: ResponseInputItem[] = [{ role: 'user', content: '```js\ntext("hi");\n```' }];
    const { data, response } = await server.client.responses.create({ model: 'm', input, tools: GUIDE_TOOLS }).withResponse();
    expect(data.output_text).toBe('hi');
    expect(response.headers.get('x-ptc-stand-in')).toBe('inline');
  });
});
