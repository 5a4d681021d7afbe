import { readdirSync, readFileSync } from 'node:fs';
import OpenAI, { type APIError } from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import { API_ERRORS } from '../schemas/error-codes.ts';
import { functionCallsOf, inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { startServer } from './support/server.ts';

describe('two requests resuming the same program at once', () => {
  it('answers the second with 409 program_busy while the first finishes the program', async () => {
    const server = await startServer();
    try {
      const tools = programTools('wait');
      // After its call is answered the program computes for a while, so the second request arrives mid-step.
      const code = 'await tools.wait({}); let x = 0; for (let i = 0; i < 3e8; i++) x ^= i; text("done")';
      const input: ResponseInputItem[] = [{ role: 'user', content: inlineProgram(code) }];
      const first = await server.client.responses.create({ model: 'm', store: false, input, tools });
      const [call] = functionCallsOf(first);
      const resume = [
        ...input,
        ...toResponseInputItems(first.output),
        { type: 'function_call_output' as const, call_id: call!.call_id, output: '', caller: call!.caller ?? null },
      ];
      const settled = await Promise.allSettled([
        server.client.responses.create({ model: 'm', store: false, input: resume, tools }),
        new Promise((resolve) => setTimeout(resolve, 30)).then(() => server.client.responses.create({ model: 'm', store: false, input: resume, tools })),
      ]);
      // Whichever reaches the program first finishes it; the other is turned away.
      const winners = settled.filter((result) => result.status === 'fulfilled');
      const losers = settled.filter((result) => result.status === 'rejected');
      expect([winners.length, losers.length]).toEqual([1, 1]);
      expect(programOutputOf(winners[0]!.value)).toMatchObject({ status: 'completed', result: 'done' });
      const error = losers[0]!.reason as APIError;
      expect(error).toBeInstanceOf(OpenAI.ConflictError);
      expect(error.code).toBe('program_busy');
      expect(error.message).toContain(call!.caller && 'caller_id' in call!.caller ? call!.caller.caller_id : '?');
    } finally {
      await server.close();
    }
  });
});

describe('a fault inside the emulator', () => {
  it('is a 500 server_error in the envelope with the request id, and the server keeps serving', async () => {
    const server = await startServer({
      model: (context) => {
        if (context.lastUserText === 'explode') throw new Error('stand-in bug');
        return undefined;
      },
    });
    try {
      const error = await server.client.responses.create({ model: 'm', input: 'explode' }).then(
        () => undefined,
        (reason: unknown) => reason as APIError,
      );
      expect(error).toBeInstanceOf(OpenAI.InternalServerError);
      expect(error?.status).toBe(500);
      expect(error?.code).toBe('server_error');
      expect(error?.message).toContain(error?.requestID ?? 'no request id');
      expect(error?.message).not.toContain('stand-in bug');
      const next = await server.client.responses.create({ model: 'm', input: 'hello' });
      expect(next.status).toBe('completed');
    } finally {
      await server.close();
    }
  });
});

describe('test coverage of the declared error codes', () => {
  it('exercises every API error code in some test', () => {
    const directory = new URL('./', import.meta.url);
    const sources = readdirSync(directory, { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.test.ts'))
      .map((name) => readFileSync(new URL(name, directory), 'utf8'))
      .join('\n');
    expect(Object.keys(API_ERRORS).filter((code) => !sources.includes(`'${code}'`))).toEqual([]);
  });
});
