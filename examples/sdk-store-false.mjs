// The client loop of OpenAI's PTC guide with `store: false`: the client keeps the conversation
// and resends every item; the emulator resumes the program from the items and its fingerprint.
//   npx ptc-emulator serve            (in another terminal)
//   node sdk-store-false.mjs          → {"units":42}
import OpenAI from "openai";
import { toResponseInputItems } from "openai/lib/responses/ResponseInputItems";

const client = new OpenAI({
  baseURL: process.env.OPENAI_BASE_URL ?? "http://127.0.0.1:8787/v1",
  apiKey: process.env.OPENAI_API_KEY ?? "any",
});

const tools = [
  {
    type: "function",
    name: "get_inventory",
    parameters: { type: "object", properties: { sku: { type: "string" } }, required: ["sku"], additionalProperties: false },
    output_schema: { type: "object", properties: { available_units: { type: "number" } }, required: ["available_units"] },
    allowed_callers: ["programmatic"],
    strict: true,
  },
  { type: "programmatic_tool_calling" },
];

// The tool as the client implements it.
const getInventory = ({ sku }) => ({ sku, available_units: 42 });

// With no model inside, the emulator runs the fenced program of the last user message.
const input = [{
  role: "user",
  content: "Check stock:\n```js\nconst s = await tools.get_inventory({ sku: 'sku_123' });\ntext({ units: s.available_units });\n```",
}];

for (;;) {
  const response = await client.responses.create({ model: "gpt-6-astra", store: false, input, tools });
  input.push(...toResponseInputItems(response.output));
  const calls = response.output.filter((item) => item.type === "function_call");
  if (calls.length === 0) {
    console.log(response.output_text);
    break;
  }
  for (const call of calls) {
    input.push({
      type: "function_call_output",
      call_id: call.call_id,
      output: JSON.stringify(getInventory(JSON.parse(call.arguments))),
      caller: call.caller, // copy caller so the output reaches the program
    });
  }
}
