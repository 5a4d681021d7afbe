import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postHead, postWithLength, RawConnection, withRawConnection } from './support/raw-connection.ts';
import { envelopeErrorOf } from './support/api-errors.ts';
import { untilArriving } from './support/arriving-gauge.ts';
import { spawnServer, type ServerProcess } from './support/server-process.ts';

/**
 * Bodies still arriving hold the server's memory: a client that stops in the middle of one is
 * cut off after PTC_REQUEST_TIMEOUT_MS (a 408), and all of them together are held to
 * PTC_MAX_ARRIVING_BODY_BYTES (a 429). Each server runs in a process of its own, as users run it,
 * and is spoken to on raw connections: an SDK cannot stop in the middle of a body.
 */

const MODEL = 'ptc-emulator';
const MiB = 1024 * 1024;

/** A valid request whose JSON is `size` bytes or a little more. */
const requestOf = (size: number): string => JSON.stringify({ model: MODEL, input: 'x'.repeat(size) });

describe('a client that stops in the middle of its body (PTC_REQUEST_TIMEOUT_MS)', () => {
  let server: ServerProcess | undefined;
  let port: number;
  beforeAll(async () => {
    server = await spawnServer({ PTC_STORE: 'memory', PTC_REQUEST_TIMEOUT_MS: '3000', LOG_LEVEL: 'warn' });
    port = Number(new URL(server.baseURL).port);
  });
  afterAll(() => server?.kill());

  it('gets a 408 request_timeout in the envelope, the connection is closed, what it sent is let go, and it is journaled', async () => {
    let requestId: string | undefined;
    await withRawConnection(port, async (connection) => {
      const body = requestOf(200_000);
      // All but the last byte: the body never ends.
      connection.write(postWithLength(body).slice(0, -1));
      await untilArriving(server!, (bytes) => bytes >= body.length - 1);
      const answer = await connection.next();
      expect(answer?.status, answer?.body ?? 'no answer: the connection closed').toBe(408);
      expect(answer?.headers.connection).toBe('close');
      expect(answer?.headers['content-type']).toMatch(/^application\/json/);
      expect(envelopeErrorOf(answer!.body)).toMatchObject({ code: 'request_timeout', type: 'invalid_request_error', param: null });
      expect(envelopeErrorOf(answer!.body).message).toContain('PTC_REQUEST_TIMEOUT_MS');
      requestId = answer?.headers['x-request-id'];
      expect(await connection.next()).toBeUndefined();
      expect(connection.closed).toBe(true);
    });
    // Journaled as any answer is, under the id the 408 carried (Node's timer answers it, not Fastify),
    // once the server has seen the connection close.
    const journaled = async () => {
      const journal = (await (await fetch(new URL('/v1/emulator/journal', server!.baseURL))).json()) as {
        data: { request_id: string; method: string; path: string; status: number; error?: { code: string } }[];
      };
      return journal.data.find((entry) => entry.request_id === requestId);
    };
    while ((await journaled()) === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await journaled()).toMatchObject({
      method: 'POST',
      path: '/v1/responses',
      status: 408,
      error: { code: 'request_timeout' },
    });
    // What it sent is let go once the server has seen the connection close.
    await untilArriving(server!, (bytes) => bytes === 0);
    // The server goes on serving.
    const response = await server!.client.responses.create({ model: MODEL, input: 'hi' });
    expect(response.status).toBe('completed');
  });

  it('a request whose route answered without its body (an event stream) is cut off at the timeout, with nothing written into its answer', async () => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    // A body is declared and never sent: the stream is answered at once, the request never ends.
    socket.write('GET /v1/emulator/journal/events HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 10\r\n\r\n');
    await closed;
    expect(received).toMatch(/^HTTP\/1\.1 200 /);
    expect(received).toContain('text/event-stream');
    expect(received).not.toContain('408');
  });
});

describe('bodies arriving at once, all connections together (PTC_MAX_ARRIVING_BODY_BYTES)', () => {
  const LIMIT = 2 * MiB;
  const MAX_ARRIVING = 3 * MiB;
  let server: ServerProcess | undefined;
  let port: number;
  beforeAll(async () => {
    server = await spawnServer({
      PTC_STORE: 'memory',
      PTC_BODY_LIMIT_BYTES: String(LIMIT),
      PTC_MAX_ARRIVING_BODY_BYTES: String(MAX_ARRIVING),
      LOG_LEVEL: 'warn',
    });
    port = Number(new URL(server.baseURL).port);
  });
  afterAll(() => server?.kill());

  function expectBusy(answer: Awaited<ReturnType<RawConnection['next']>>): void {
    expect(answer?.status, answer?.body ?? 'no answer: the connection closed').toBe(429);
    expect(answer?.headers['retry-after']).toBe('1');
    expect(envelopeErrorOf(answer!.body)).toMatchObject({ code: 'server_busy', type: 'rate_limit_error' });
    expect(envelopeErrorOf(answer!.body).message).toContain('PTC_MAX_ARRIVING_BODY_BYTES');
  }

  it('past the bound a body is a 429 server_busy, by its Content-Length or as it arrives; within it, and once the first ends, bodies are served', async () => {
    const held = await RawConnection.open(port);
    try {
      // 1.5 MiB of a body sent, the last bytes held back.
      const heldRequest = postWithLength(requestOf(1.5 * MiB));
      held.write(heldRequest.slice(0, -2));
      await untilArriving(server!, (bytes) => bytes >= 1.5 * MiB);

      const declared = requestOf(1.8 * MiB);
      await withRawConnection(port, async (other) => {
        // Refused by its Content-Length, before it is read: 1.5 + 1.8 MiB would not fit.
        expectBusy(await other.exchange([postWithLength(declared)]));
        // A small one fits beside the held body.
        const small = await other.exchange([postWithLength(requestOf(10))]);
        expect(small?.status, small?.body).toBe(200);
      });

      await withRawConnection(port, async (chunked) => {
        // Sent in chunks, with no Content-Length: refused once what came passes the bound.
        const chunks = declared.match(/[\s\S]{1,65536}/g)!.map((chunk) => `${chunk.length.toString(16)}\r\n${chunk}\r\n`);
        expectBusy(await chunked.exchange([postHead(['transfer-encoding: chunked']), ...chunks, '0\r\n\r\n']));
      });

      // The held body ends: it is served, and the bound is free again.
      const answer = await held.exchange([heldRequest.slice(-2)]);
      expect(answer?.status, answer?.body).toBe(200);
    } finally {
      held.close();
    }
    await untilArriving(server!, (bytes) => bytes === 0);
    await withRawConnection(port, async (again) => {
      const answer = await again.exchange([postWithLength(requestOf(1.8 * MiB))]);
      expect(answer?.status, answer?.body).toBe(200);
    });
  });

  it('small bodies are read even past the bound: large ones held half-sent refuse no one else', async () => {
    const held = await Promise.all([RawConnection.open(port), RawConnection.open(port)]);
    const chunk = (text: string): string => `${text.length.toString(16)}\r\n${text}\r\n`;
    try {
      // Two large bodies, 2.95 MiB of them arrived, the bound 3 MiB: one with its length, one in chunks.
      const whole = postWithLength(requestOf(1.5 * MiB));
      held[0]!.write(whole.slice(0, -2));
      await untilArriving(server!, (bytes) => bytes >= 1.5 * MiB);
      const chunked = requestOf(1.5 * MiB);
      held[1]!.write(postHead(['transfer-encoding: chunked']) + chunk(chunked.slice(0, 1.45 * MiB)));
      await untilArriving(server!, (bytes) => bytes >= 2.95 * MiB);
      // 60 KB more would pass the bound: a small body all the same, so read and served.
      await withRawConnection(port, async (small) => {
        const answer = await small.exchange([postWithLength(requestOf(60_000))]);
        expect(answer?.status, answer?.body).toBe(200);
      });
      expect((await held[0]!.exchange([whole.slice(-2)]))?.status).toBe(200);
      expect((await held[1]!.exchange([`${chunk(chunked.slice(1.45 * MiB))}0\r\n\r\n`]))?.status).toBe(200);
    } finally {
      for (const connection of held) connection.close();
    }
  });

  it('a body in a charset other than UTF-8 is a 415 once sent, and its connection serves the next request', async () => {
    await withRawConnection(port, async (connection) => {
      const body = requestOf(1.8 * MiB);
      const head = postHead([`content-length: ${body.length}`]).replace('content-type: application/json', 'content-type: application/json; charset=latin1');
      const answer = await connection.exchange([head + body]);
      expect(answer?.status, answer?.body ?? 'no answer: the connection closed').toBe(415);
      expect(envelopeErrorOf(answer!.body)).toMatchObject({ code: 'unsupported_media_type', param: null });
      expect(envelopeErrorOf(answer!.body).message).toContain('charset=latin1');
      const next = await connection.exchange([postWithLength(requestOf(10))]);
      expect(next?.status, next?.body).toBe(200);
    });
  });
});
