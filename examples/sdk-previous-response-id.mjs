// The same loop with `store: true` (the default): the emulator keeps the conversation, and each
// request sends only the new outputs, continuing from `previous_response_id`. Both calls of the
// program arrive in one response (one batch); the loop goes on until a message ends the turn.
//   npx ptc-emulator serve            (in another terminal)
//   node sdk-previous-response-id.mjs → get_inventory returned sku sku_123 and available_units 42; get_demand returned sku sku_123 and requested_units 70.
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: process.env.OPENAI_BASE_URL ?? "http://127.0.0.1:8787/v1",
  apiKey: process.env.OPENAI_API_KEY ?? "any",
});

const skuParameters = { type: "object", properties: { sku: { type: "string" } }, required: ["sku"], additionalProperties: false };
const tools = [
  { type: "function", name: "get_inventory", parameters: skuParameters, strict: true, allowed_callers: ["programmatic"],
    output_schema: { type: "object", properties: { sku: { type: "string" }, available_units: { type: "number" } }, required: ["sku", "available_units"] } },
  { type: "function", name: "get_demand", parameters: skuParameters, strict: true, allowed_callers: ["programmatic"],
    output_schema: { type: "object", properties: { sku: { type: "string" }, requested_units: { type: "number" } }, required: ["sku", "requested_units"] } },
  { type: "programmatic_tool_calling" },
];
const implementations = {
  get_inventory: ({ sku }) => ({ sku, available_units: 42 }),
  get_demand: ({ sku }) => ({ sku, requested_units: 70 }),
};

let response = await client.responses.create({ model: "gpt-6-astra", tools, input: "Should we reorder sku_123? Compare inventory with demand." });
for (;;) {
  const calls = response.output.filter((item) => item.type === "function_call");
  if (calls.length === 0 && response.output.some((item) => item.type === "message")) break;
  response = await client.responses.create({
    model: "gpt-6-astra",
    tools,
    previous_response_id: response.id,
    input: calls.map((call) => ({
      type: "function_call_output",
      call_id: call.call_id,
      output: JSON.stringify(implementations[call.name](JSON.parse(call.arguments))),
      caller: call.caller,
    })),
  });
}
console.log(response.output_text);
