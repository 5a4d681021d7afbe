// The seed's client loop against an emulator whose programs a model backend writes.
//   node scripted-backend.mjs                                                   (terminal 1)
//   npx ptc-emulator serve --model-backend http://127.0.0.1:8080/v1 --model any (terminal 2)
//   node client.mjs                                                             → prints expected-output.txt
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
  additionalProperties: false,
});
const tools = [
  { type: "function", name: "get_inventory", description: "Return an object with sku (string) and available_units (number).", parameters: skuParameters, output_schema: outputSchema("available_units"), strict: true, allowed_callers: ["programmatic"] },
  { type: "function", name: "get_demand", description: "Return an object with sku (string) and requested_units (number).", parameters: skuParameters, output_schema: outputSchema("requested_units"), strict: true, allowed_callers: ["programmatic"] },
  { type: "programmatic_tool_calling" },
];
const implementations = {
  get_inventory: ({ sku }) => ({ sku, available_units: 12 }),
  get_demand: ({ sku }) => ({ sku, requested_units: 30 }),
};

const input = [{ role: "user", content: "Compare inventory with demand for sku_123." }];
for (;;) {
  const response = await client.responses.create({ model: "any", store: false, input, tools });
  input.push(...response.output);
  for (const item of response.output) {
    if (item.type === "program") console.log(`program:\n${item.code}`);
    if (item.type === "program_output") console.log(`result: ${item.result}`);
  }
  const calls = response.output.filter((item) => item.type === "function_call");
  if (calls.length === 0) {
    console.log(`message: ${response.output_text}`);
    break;
  }
  for (const call of calls) {
    const output = implementations[call.name](JSON.parse(call.arguments));
    input.push({ type: "function_call_output", call_id: call.call_id, output: JSON.stringify(output), caller: call.caller });
  }
}
