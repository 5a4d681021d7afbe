import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../runtime/limits.ts';
import { inlineProgram, programOutputOf } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// A step's wall clock is the isolate's own running time: a light program that waits for a busy
// worker (here, the worker's loop starting a hundred other programs' isolates first) is not
// charged for the wait, however tight PTC_STEP_WALL_TIME_MS is.
const CONCURRENT = 128;

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({
    config: { workers: 1, maxConcurrentTurns: CONCURRENT, maxQueuedTurns: CONCURRENT, limits: { ...DEFAULT_LIMITS, stepWallTimeMs: 100 } },
  });
});
afterAll(() => server.close());

it(`${CONCURRENT} light programs started at once on one worker all complete within a 100 ms step limit`, async () => {
  const responses = await Promise.all(
    Array.from({ length: CONCURRENT }, (_, index) =>
      server.client.responses.create({ model: 'm', store: false, input: inlineProgram(`text("ok ${index}")`), tools: [{ type: 'programmatic_tool_calling' }] }),
    ),
  );
  const outcomes = responses.map((response) => programOutputOf(response));
  const failed = outcomes.filter((output) => output?.status !== 'completed');
  expect(failed.map((output) => output?.result)).toEqual([]);
  expect(outcomes.map((output) => output?.result)).toEqual(Array.from({ length: CONCURRENT }, (_, index) => `ok ${index}`));
});
