import { PassThrough } from 'node:stream';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FIXED_LIMITS } from '../schemas/fixed-limits.ts';
import { discardBody } from '../server/api/http/oversized-body.ts';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import type { RawResponse } from './support/fuzz-http.ts';
import { postHead as head, postWithLength as withLength, withRawConnection } from './support/raw-connection.ts';
import { spawnServer, type ServerProcess } from './support/server-process.ts';

/**
 * A body over PTC_BODY_LIMIT_BYTES reaches the client as its 413, never as a broken pipe
 * (issue 40, part 2). The server runs in a process of its own, as users run it: sharing the
 * test's loop, the client would have written its whole body before the server could answer,
 * and the early close this guards against would never show.
 */

const LIMIT = 1024 * 1024;
/** Four times the limit: more than the loopback socket's buffers take, so the client is still writing when an early answer comes. */
const OVERSIZED = 4 * LIMIT;
const UPLOADS = 10;
const MODEL = 'ptc-emulator';

let server: ServerProcess | undefined;
let port: number;
beforeAll(async () => {
  server = await spawnServer({ PTC_STORE: 'memory', PTC_BODY_LIMIT_BYTES: String(LIMIT), LOG_LEVEL: 'warn' });
  port = Number(new URL(server.baseURL).port);
});
afterAll(() => server?.kill());

const client = (): OpenAI => server!.client;

/** What an upload ended in, so that ten are reported together: the SDK's status and code, or the class of its error and why. */
function outcomeOf(error: unknown): string {
  if (error instanceof OpenAI.APIConnectionError)
    return `${error.constructor.name} (${String((error.cause as { cause?: { code?: string } } | undefined)?.cause?.code ?? error.message)})`;
  if (error instanceof OpenAI.APIError) return `${error.status} ${error.code}`;
  return String(error);
}

async function tenUploads(upload: () => Promise<unknown>): Promise<void> {
  const outcomes: string[] = [];
  let last: unknown;
  for (let attempt = 0; attempt < UPLOADS; attempt++) {
    last = await rejectionOf(upload());
    outcomes.push(outcomeOf(last));
  }
  expect(outcomes).toEqual(Array(UPLOADS).fill('413 request_too_large'));
  expectSdkError(last, { code: 'request_too_large', param: null, mentions: [`${LIMIT} bytes`, 'PTC_BODY_LIMIT_BYTES'] });
}

describe('through the openai SDK, an over-limit upload is a 413 every time', () => {
  it(`${UPLOADS} responses.create with a ${OVERSIZED}-byte input`, async () => {
    await tenUploads(() => client().responses.create({ model: MODEL, input: 'x'.repeat(OVERSIZED) }));
  });

  it(`${UPLOADS} agent session messages of ${OVERSIZED} bytes`, async () => {
    // The body is refused before the session is looked up: no session is needed.
    const text = 'x'.repeat(OVERSIZED);
    await tenUploads(() =>
      client().beta.agents.sessions.events.create('sess_oversized', {
        events: [{ type: 'agent.session.input.message', input: [{ role: 'user', content: [{ type: 'input_text', text }] }] }],
      }),
    );
  });
});

const VALID = JSON.stringify({ model: MODEL, input: 'hi' });
const OVERSIZED_BODY = JSON.stringify({ model: MODEL, input: 'x'.repeat(OVERSIZED) });

function expectTooLarge(response: RawResponse | undefined): void {
  expect(response?.status, response?.body ?? 'no answer: the connection closed').toBe(413);
  expect((JSON.parse(response!.body) as { error: { code: string } }).error.code).toBe('request_too_large');
}

describe('on a raw keep-alive connection', () => {
  it('an over-limit body with a Content-Length gets its 413, and the connection then serves a valid request', async () => {
    await withRawConnection(port, async (connection) => {
      for (let round = 0; round < 3; round++) {
        expectTooLarge(await connection.exchange([withLength(OVERSIZED_BODY)]));
        const next = await connection.exchange([withLength(VALID)]);
        expect(next?.status, next?.body).toBe(200);
      }
      expect(connection.closed).toBe(false);
    });
  });

  it('an over-limit body sent in chunks (no Content-Length) gets its 413, and the connection then serves a valid request', async () => {
    await withRawConnection(port, async (connection) => {
      const chunk = 'x'.repeat(64 * 1024);
      const chunks = Array.from({ length: OVERSIZED / chunk.length }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`);
      expectTooLarge(await connection.exchange([head(['transfer-encoding: chunked']), ...chunks, '0\r\n\r\n']));
      const next = await connection.exchange([withLength(VALID)]);
      expect(next?.status, next?.body).toBe(200);
      expect(connection.closed).toBe(false);
    });
  });

  it('a body declaring more than the server reads past the limit is answered at once, and the connection closed', async () => {
    await withRawConnection(port, async (connection) => {
      // Only the head is sent: the answer cannot wait for a body.
      const declared = LIMIT + FIXED_LIMITS.oversizedBodyDiscardBytes.value + 1;
      const response = await connection.exchange([head([`content-length: ${declared}`])]);
      expectTooLarge(response);
      expect(response?.headers.connection).toBe('close');
    });
  });
});

describe('discardBody: what is left of an oversized body, read and dropped within bounds', () => {
  const bounds = { maxBytes: 1000, maxMs: 5000 };

  it('reads a body to its end', async () => {
    const body = new PassThrough();
    const outcome = discardBody(body, bounds);
    body.write(Buffer.alloc(600));
    body.end(Buffer.alloc(400));
    expect(await outcome).toBe('read');
  });

  it('stops once more than maxBytes came', async () => {
    const body = new PassThrough();
    const outcome = discardBody(body, bounds);
    body.write(Buffer.alloc(600));
    body.write(Buffer.alloc(401));
    expect(await outcome).toBe('cut');
    body.destroy();
  });

  it('stops at maxMs of a client sending slowly', async () => {
    vi.useFakeTimers();
    try {
      const body = new PassThrough();
      const outcome = discardBody(body, bounds);
      body.write(Buffer.alloc(10));
      await vi.advanceTimersByTimeAsync(bounds.maxMs);
      expect(await outcome).toBe('cut');
      body.destroy();
    } finally {
      vi.useRealTimers();
    }
  });

  it('tells of a client that went away', async () => {
    const body = new PassThrough();
    const outcome = discardBody(body, bounds);
    body.write(Buffer.alloc(10));
    body.destroy();
    expect(await outcome).toBe('gone');
  });

  it('a body already read to its end is read', async () => {
    const body = new PassThrough();
    body.resume();
    body.end();
    await new Promise((resolve) => body.once('end', resolve));
    expect(await discardBody(body, bounds)).toBe('read');
  });
});
