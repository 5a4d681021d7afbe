// The client loop of OpenAI's PTC guide, unchanged but for where the client points: `store:
// false`, every item resent, `caller` copied. No scenario: the emulator's autopilot writes the
// program a model would (both tools at once, the sku from the message) and states the result.
//   npx ptc-emulator serve            (in another terminal)
//   node sdk-store-false.mjs          → get_inventory returned sku sku_123 and available_units 42; get_demand returned sku sku_123 and requested_units 31.
import OpenAI from "openai";
import { toResponseInputItems } from "openai/lib/responses/ResponseInputItems";

const client = new OpenAI({
  baseURL: process.env.OPENAI_BASE_URL ?? "http://127.0.0.1:8787/v1",
  apiKey: process.env.OPENAI_API_KEY ?? "any",
});

const implementations = {
  get_inventory: async ({ sku }) => ({ sku, available_units: 42 }),
  get_demand: async ({ sku }) => ({ sku, requested_units: 31 }),
};

const tools = [
  {
    type: "function",
    name: "get_inventory",
    description: "Return an object with sku (string) and available_units (number).",
    parameters: { type: "object", properties: { sku: { type: "string" } }, required: ["sku"], additionalProperties: false },
    output_schema: {
      type: "object",
      properties: { sku: { type: "string" }, available_units: { type: "number" } },
      required: ["sku", "available_units"],
      additionalProperties: false,
    },
    allowed_callers: ["programmatic"],
    strict: true,
  },
  {
    type: "function",
    name: "get_demand",
    description: "Return an object with sku (string) and requested_units (number).",
    parameters: { type: "object", properties: { sku: { type: "string" } }, required: ["sku"], additionalProperties: false },
    output_schema: {
      type: "object",
      properties: { sku: { type: "string" }, requested_units: { type: "number" } },
      required: ["sku", "requested_units"],
      additionalProperties: false,
    },
    allowed_callers: ["programmatic"],
    strict: true,
  },
  { type: "programmatic_tool_calling" },
];

const input = [{ role: "user", content: "Compare inventory with demand for sku_123." }];

while (true) {
  const response = await client.responses.create({ model: "gpt-6-astra", store: false, input, tools });
  if (response.status !== "completed") {
    throw new Error(`Response ended with status ${response.status}`);
  }
  // Preserve replayable output, including program and reasoning items.
  input.push(...toResponseInputItems(response.output));
  const calls = response.output.filter((item) => item.type === "function_call");
  if (calls.length === 0) {
    const message = response.output.find((item) => item.type === "message");
    if (message) {
      const refusal = message.content.find((part) => part.type === "refusal");
      console.log(response.output_text || refusal?.refusal || "");
      break;
    }
    continue;
  }
  const outputs = await Promise.all(
    calls.map(async (call) => {
      const run = implementations[call.name];
      if (!run) throw new Error(`Unknown tool: ${call.name}`);
      const result = await run(JSON.parse(call.arguments));
      return {
        type: "function_call_output",
        call_id: call.call_id,
        output: JSON.stringify(result),
        // Preserve caller so the runtime can resume the correct program.
        caller: call.caller,
      };
    }),
  );
  input.push(...outputs);
}
