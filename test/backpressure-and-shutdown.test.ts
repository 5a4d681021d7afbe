import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { type APIError } from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../runtime/limits.ts';
import { SQLITE_FILE_NAME } from '../server/platform/stores/create-store.ts';
import { SqliteResponseStore } from '../server/platform/stores/sqlite-store.ts';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { functionCallsOf, inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { startServer } from './support/server.ts';
import { spawnServer } from './support/server-process.ts';

// A program that holds its place until its step's wall-clock ceiling (the servers below set
// 1.5 s): a duration that does not depend on the machine's speed.
const BUSY = inlineProgram('for (;;) {}');
const HOLD = { ...DEFAULT_LIMITS, stepWallTimeMs: 1_500, cpuTimeMs: 20_000 };

describe('backpressure', () => {
  it('answers 429 server_busy with retry-after beyond the running and waiting bound, and the SDK retries through it', async () => {
    const server = await startServer({ config: { maxConcurrentTurns: 1, maxQueuedTurns: 0, limits: HOLD } });
    try {
      const tools = programTools();
      const running = server.client.responses.create({ model: 'm', input: BUSY, tools });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const error = await rejectionOf(server.client.responses.create({ model: 'm', input: 'hello' }));
      expectSdkError(error, { code: 'server_busy', mentions: ['PTC_MAX_CONCURRENT_TURNS'] });
      expect((error as APIError).headers?.get('retry-after-ms')).toBe('250');
      expect((error as APIError).headers?.get('retry-after')).toBe('1');
      // A client that retries (the SDK does, on 429) gets through once the place is free.
      const patient = new OpenAI({ apiKey: 'k', baseURL: server.baseURL, maxRetries: 20 });
      const [done, later] = await Promise.all([running, patient.responses.create({ model: 'm', input: 'hello' })]);
      expect(JSON.parse(programOutputOf(done)!.result).error.code).toBe('wall_time_exceeded');
      expect(later.status).toBe('completed');
    } finally {
      await server.close();
    }
  });

  it('refuses new conversations first: continuations and retries may use the whole queue, and go first', async () => {
    // One running; of three waiting places, new conversations may take one.
    const server = await startServer({ config: { maxConcurrentTurns: 1, maxQueuedTurns: 3, limits: HOLD } });
    try {
      const tools = programTools('get');
      // A paused program whose continuation will arrive while the server is busy.
      const user: ResponseInputItem = { role: 'user', content: inlineProgram('text(await tools.get({}))') };
      const paused = await server.client.responses.create({ model: 'm', store: false, input: [user], tools });
      const [call] = functionCallsOf(paused);
      const continuation: ResponseInputItem[] = [
        user,
        ...toResponseInputItems(paused.output),
        { type: 'function_call_output', call_id: call!.call_id, output: 'resumed', caller: call!.caller ?? null },
      ];

      const order: string[] = [];
      const note = (what: string) => () => order.push(what);
      const running = server.client.responses.create({ model: 'm', input: BUSY, tools }).then(note('busy'));
      await new Promise((resolve) => setTimeout(resolve, 100));
      // Half the queue (1 place) for new work: the first waits, the second is refused.
      const newOne = server.client.responses.create({ model: 'm', input: 'new one' }).then(note('new'));
      await new Promise((resolve) => setTimeout(resolve, 20));
      expectSdkError(await rejectionOf(server.client.responses.create({ model: 'm', input: 'new two' })), { code: 'server_busy' });
      // A continuation still fits, and is served before the new conversation that waited longer.
      const resumed = server.client.responses.create({ model: 'm', store: false, input: continuation, tools }).then((response) => {
        order.push('continuation');
        return response;
      });
      // So does a retry, whatever it asks (the SDK numbers its attempts).
      const retry = server.client.responses.create({ model: 'm', input: 'retried' }, { headers: { 'x-stainless-retry-count': '1' } }).then(note('retry'));
      expect(programOutputOf(await resumed)?.result).toBe('resumed');
      await Promise.all([running, newOne, retry]);
      expect(order).toEqual(['busy', 'continuation', 'retry', 'new']);
    } finally {
      await server.close();
    }
  });

  it('lets requests wait for a place while the queue has room', async () => {
    // One running, and three new conversations waiting: half of a queue of six.
    const server = await startServer({ config: { maxConcurrentTurns: 1, maxQueuedTurns: 6 } });
    try {
      const responses = await Promise.all(
        Array.from({ length: 4 }, (_, i) => server.client.responses.create({ model: 'm', input: inlineProgram(`text(${i})`), tools: programTools() })),
      );
      expect(responses.map((response) => response.output_text)).toEqual(['0', '1', '2', '3']);
    } finally {
      await server.close();
    }
  });
});

describe('program_expired', () => {
  it('ends a program resumed longer after its start than PTC_PROGRAM_EXPIRY_MS, live or replayed alike', async () => {
    const server = await startServer({ config: { programExpiryMs: 50 } });
    try {
      const tools = programTools('get');
      const user: ResponseInputItem = { role: 'user', content: inlineProgram('text(await tools.get({}))') };
      const first = await server.client.responses.create({ model: 'm', store: false, input: [user], tools });
      const [call] = functionCallsOf(first);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const late = await server.client.responses.create({
        model: 'm',
        store: false,
        input: [
          user,
          ...toResponseInputItems(first.output),
          { type: 'function_call_output', call_id: call!.call_id, output: 'x', caller: call!.caller ?? null },
        ],
        tools,
      });
      const output = programOutputOf(late);
      expect(output?.status).toBe('incomplete');
      expect(JSON.parse(output!.result).error).toMatchObject({ code: 'program_expired', message: expect.stringContaining('50 ms') });
    } finally {
      await server.close();
    }
  });
});

describe('SIGTERM', () => {
  it('drains: the running request ends (here at its step limit), new ones are refused, the store keeps it, the process exits 0', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ptc-drain-'));
    try {
      // A loop that runs until its step's wall-clock ceiling: 3 s, whatever the machine's speed.
      const server = await spawnServer({
        PTC_STORE: 'sqlite',
        PTC_DATA_DIR: dataDir,
        PTC_WORKERS: '1',
        PTC_STEP_WALL_TIME_MS: '3000',
        PTC_CPU_TIME_MS: '60000',
      });
      const running = server.client.responses.create({ model: 'm', input: inlineProgram('for (;;) {}'), tools: programTools() });
      await new Promise((resolve) => setTimeout(resolve, 500));
      const exited = new Promise<number | null>((resolve) => server.process.once('exit', (code) => resolve(code)));
      server.process.kill('SIGTERM');
      const finished = await running;
      expect(JSON.parse(programOutputOf(finished)!.result).error.code).toBe('wall_time_exceeded');
      // Refused: the connection is closed, or, on a connection still open, a 503 shutting_down.
      const late = await rejectionOf(server.client.responses.create({ model: 'm', input: 'too late' }));
      if (!(late instanceof OpenAI.APIConnectionError)) expectSdkError(late, { code: 'shutting_down', mentions: ['shutting down'] });
      const code = await exited;
      expect(code, server.output()).toBe(0);
      const store = new SqliteResponseStore(join(dataDir, SQLITE_FILE_NAME));
      expect((await store.get(finished.id))?.response.status).toBe('completed');
      await store.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
