// The same check with Node's own test runner:   node --test
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { startEmulator } from "ptc-emulator/testing";

let emulator;
before(async () => {
  emulator = await startEmulator({
    scenarios: {
      rules: [
        {
          match: { user: "How many units" },
          // Without an output_schema, the program receives the output string as it is.
          program: "const units = await tools.get_inventory({ sku: 'sku_123' }); text(units);",
          message: "{{result}} units on hand.",
        },
      ],
    },
  });
});
after(() => emulator.close());

test("a scenario's program pauses on the client's tool, then ends with the final message", async () => {
  const client = new OpenAI({ baseURL: emulator.baseURL, apiKey: "any" });
  const tools = [
    { type: "function", name: "get_inventory", parameters: { type: "object", properties: { sku: { type: "string" } } }, allowed_callers: ["programmatic"] },
    { type: "programmatic_tool_calling" },
  ];
  const first = await client.responses.create({ model: "gpt-6-astra", tools, input: "How many units of sku_123?" });
  const call = first.output.find((item) => item.type === "function_call");
  assert.deepEqual(JSON.parse(call.arguments), { sku: "sku_123" });

  const final = await client.responses.create({
    model: "gpt-6-astra",
    tools,
    previous_response_id: first.id,
    input: [{ type: "function_call_output", call_id: call.call_id, output: "42", caller: call.caller }],
  });
  assert.equal(final.output_text, "42 units on hand.");
});
