import { afterAll, beforeAll, expect, it } from 'vitest';
import { inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// A result large enough that its deltas (one per token) outnumber what a call may take as
// arguments: the stream must still be built, live and when a stored response is replayed.
const TEXT = 'x '.repeat(150_000);

let server: RunningServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

it('a program that text()s ~300k characters streams, and its stored response streams again', async () => {
  const { client } = server;
  const stream = client.responses.stream({
    model: 'm',
    input: inlineProgram("text('x '.repeat(150_000))"),
    tools: programTools('unused'),
  });
  let deltas = 0;
  stream.on('response.output_text.delta', () => (deltas += 1));
  const live = await stream.finalResponse();
  expect(programOutputOf(live)).toMatchObject({ status: 'completed', result: TEXT });
  expect(live.output_text).toBe(TEXT);
  expect(deltas).toBeGreaterThan(130_000);

  const replayed = await client.responses.stream({ response_id: live.id }).finalResponse();
  expect(replayed.output).toEqual(live.output);
});
