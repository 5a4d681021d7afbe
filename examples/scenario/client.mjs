// The request inventory.yaml answers: its tools, and the client loop that serves the calls.
//   npx ptc-emulator serve --scenarios inventory.yaml   (in another terminal)
//   node client.mjs                                     → prints expected-output.txt
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: process.env.OPENAI_BASE_URL ?? "http://127.0.0.1:8787/v1",
  apiKey: process.env.OPENAI_API_KEY ?? "any",
});

const skuParameters = { type: "object", properties: { sku: { type: "string" } }, required: ["sku"], additionalProperties: false };
const outputSchema = (field) => ({
  type: "object",
  properties: { sku: { type: "string" }, [field]: { type: "number" } },
  required: ["sku", field],
});
const tools = [
  { type: "function", name: "get_inventory", parameters: skuParameters, output_schema: outputSchema("available_units"), strict: true, allowed_callers: ["programmatic"] },
  { type: "function", name: "get_demand", parameters: skuParameters, output_schema: outputSchema("requested_units"), strict: true, allowed_callers: ["programmatic"] },
  { type: "programmatic_tool_calling" },
];
const implementations = {
  get_inventory: ({ sku }) => ({ sku, available_units: 12 }),
  get_demand: ({ sku }) => ({ sku, requested_units: 30 }),
};

let response = await client.responses.create({ model: "gpt-6-astra", tools, input: "Compare inventory with demand for sku_123." });
const seen = [];
for (;;) {
  seen.push(...response.output.map((item) => item.type));
  const calls = response.output.filter((item) => item.type === "function_call");
  if (calls.length === 0) break;
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
console.log(seen.join(" "));
console.log(response.output_text);
