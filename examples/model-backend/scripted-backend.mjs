// A stand-in for a model server (llama-server, vLLM, Ollama) so that this example runs offline:
// an OpenAI-compatible POST /v1/chat/completions that answers as a model would, with the program
// on the user's turn and the final message once it is shown the program's result.
//   node scripted-backend.mjs        → prints its API base, e.g. http://127.0.0.1:8080/v1
// With a real model server, skip this file and give its URL to --model-backend.
import { createServer } from "node:http";

const PROGRAM = `const [inventory, demand] = await Promise.all([
  tools.get_inventory({ sku: "sku_123" }),
  tools.get_demand({ sku: "sku_123" }),
]);
text(JSON.stringify({ sku: "sku_123", available: inventory.available_units, requested: demand.requested_units }));`;

function answer(messages) {
  const last = messages.at(-1)?.content ?? "";
  if (!last.includes("final message")) return "I'll look both up at once.\n```js\n" + PROGRAM + "\n```";
  const shown = messages.map((message) => message.content ?? "").join("\n");
  const { sku, available, requested } = JSON.parse(/program_output\.result\):\n(.*)/.exec(shown)[1]);
  return available >= requested ? `${sku}: ${available} available covers the ${requested} requested.` : `${sku}: ${available} available, ${requested} requested: short by ${requested - available}.`;
}

const server = createServer((request, response) => {
  let body = "";
  request.on("data", (chunk) => (body += chunk));
  request.on("end", () => {
    const { messages } = JSON.parse(body);
    const content = answer(messages);
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify({
      object: "chat.completion",
      choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content } }],
      usage: { prompt_tokens: JSON.stringify(messages).length >> 2, completion_tokens: content.length >> 2 },
    }));
  });
});
server.listen(Number(process.env.PORT ?? 8080), "127.0.0.1", () => {
  console.log(`http://127.0.0.1:${server.address().port}/v1`);
});
