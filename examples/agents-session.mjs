// The Agents API: an agent with two function tools, a session without an environment, and one
// turn. Programmatic tool calling is on by default: the program (the autopilot's, as no scenario
// is set) calls both tools at once, the SDK's sessions.stream() runs them (toolHandlers) and
// sends their results.
//   npx ptc-emulator serve            (in another terminal)
//   node agents-session.mjs           → get_price returned sku sku_1 and price 7; get_stock returned sku sku_1 and units 6.
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: process.env.OPENAI_BASE_URL ?? "http://127.0.0.1:8787/v1",
  apiKey: process.env.OPENAI_API_KEY ?? "any",
});

const sku = { type: "object", properties: { sku: { type: "string" } }, required: ["sku"] };
const agent = await client.beta.agents.create({
  model: "gpt-6-astra",
  tools: [
    { type: "function", name: "get_price", description: "Unit price of a SKU.", parameters: sku },
    { type: "function", name: "get_stock", description: "Units in stock of a SKU.", parameters: sku },
    // { type: "programmatic_tool_calling", enabled: false } would turn PTC off.
  ],
});
const session = await client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: "none" } });

const input = "What are the price and the stock of sku_1?";

const result = await client.beta.agents.sessions
  .stream(session.id, {
    input,
    toolHandlers: {
      get_price: ({ sku }) => ({ sku, price: 7 }),
      get_stock: ({ sku }) => ({ sku, units: 6 }),
    },
  })
  .finalResult();
console.log(result.output_text);
