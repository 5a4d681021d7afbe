import OpenAI from "openai";
import { expect, it } from "vitest";
import { usePtcEmulator } from "ptc-emulator/vitest";

// An emulator for this file, on a free port, nothing written to disk; OPENAI_BASE_URL and
// OPENAI_API_KEY point at it. No scenario: the autopilot writes the program a model would.
const emulator = usePtcEmulator();

const tools = [
  { type: "function", name: "get_weather", allowed_callers: ["programmatic"],
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
  { type: "programmatic_tool_calling" },
];
const getWeather = ({ city }) => ({ city, celsius: 21 });

it("my PTC loop answers the program's calls and ends with its message", async () => {
  const client = new OpenAI();
  let response = await client.responses.create({ model: "gpt-6-astra", tools, input: "What is the weather in the city Paris?" });
  while (!response.output.some((item) => item.type === "message")) {
    const calls = response.output.filter((item) => item.type === "function_call");
    response = await client.responses.create({
      model: "gpt-6-astra",
      tools,
      previous_response_id: response.id,
      input: calls.map((call) => ({
        type: "function_call_output",
        call_id: call.call_id,
        caller: call.caller, // copied, so the output reaches the program
        output: JSON.stringify(getWeather(JSON.parse(call.arguments))),
      })),
    });
  }
  expect(response.output_text).toBe("get_weather returned city Paris and celsius 21.");
  const [last] = await emulator.journal(); // what the emulator did, newest request first
  expect(last.programs[0].outcome).toBe("completed");
});
