import { afterAll, beforeAll, expect, it } from 'vitest';
import { SLICE_CHARS, TOKENIZED_CHARS } from '../server/api/streaming/delta-chunks.ts';
import { inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// A result large enough that its events (one delta per token) once outnumbered what a call may
// take as arguments: the stream must be built, live and when a stored response is replayed.
// A text this long streams in fixed slices (server/api/streaming/delta-chunks.ts).
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
  const deltas: string[] = [];
  stream.on('response.output_text.delta', (event) => deltas.push(event.delta));
  const live = await stream.finalResponse();
  expect(programOutputOf(live)).toMatchObject({ status: 'completed', result: TEXT });
  expect(live.output_text).toBe(TEXT);
  expect(TEXT.length).toBeGreaterThan(TOKENIZED_CHARS);
  expect(deltas.join('')).toBe(TEXT);
  expect(deltas).toHaveLength(Math.ceil(TEXT.length / SLICE_CHARS));

  const replayed = await client.responses.stream({ response_id: live.id }).finalResponse();
  expect(replayed.output).toEqual(live.output);
});
