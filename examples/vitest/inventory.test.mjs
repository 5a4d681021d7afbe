// A vitest suite against an emulator the suite starts and stops itself: no server to run by
// hand, no Node flag to set, nothing written to disk.   npx vitest run
import OpenAI from "openai";
import { expect, it } from "vitest";
import { usePtcEmulator } from "ptc-emulator/vitest";

const emulator = usePtcEmulator({
  // The stand-in model: write this program on the user's turn, then report its result.
  model: (context) =>
    context.phase === "after_program"
      ? { type: "message", text: `units: ${JSON.parse(context.program.result).units}` }
      : { type: "program", code: "const s = await tools.get_inventory({ sku: 'sku_123' }); text({ units: s.available_units });" },
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

it("answers the program's call and reports its result", async () => {
  // usePtcEmulator set OPENAI_BASE_URL and OPENAI_API_KEY for the suite.
  const client = new OpenAI();
  const first = await client.responses.create({ model: "gpt-6-astra", tools, input: "How many units of sku_123?" });
  const call = first.output.find((item) => item.type === "function_call");
  expect(call?.caller?.type).toBe("program");

  const final = await client.responses.create({
    model: "gpt-6-astra",
    tools,
    previous_response_id: first.id,
    input: [{ type: "function_call_output", call_id: call.call_id, output: JSON.stringify({ available_units: 42 }), caller: call.caller }],
  });
  expect(final.output_text).toBe("units: 42");

  // The journal says what the emulator did: two requests, one program that completed.
  const journal = await emulator.journal();
  expect(journal.map((entry) => entry.status)).toEqual([200, 200]);
});
