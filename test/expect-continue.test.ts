import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postHead, RawConnection, withRawConnection } from './support/raw-connection.ts';
import { envelopeErrorOf, type EnvelopeError } from './support/api-errors.ts';
import { untilArriving } from './support/arriving-gauge.ts';
import { spawnServer, type ServerProcess } from './support/server-process.ts';

/**
 * `Expect: 100-continue` (curl sends it for a large body): the client sends the head and waits
 * for `100 Continue` before the body. The server sends it only as it starts reading the body; a
 * request it refuses by its head is answered at once, with no 100, the body never sent, and its
 * connection closed (server/api/http/expect-continue.ts). The server runs in a process of its
 * own, as users run it, and is spoken to on raw connections: the test decides when (and whether)
 * the body is sent.
 */

const MODEL = 'ptc-emulator';
const KEY = 'test-key';
const MiB = 1024 * 1024;
const LIMIT = 2 * MiB;
const MAX_ARRIVING = 3 * MiB;
const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';

let server: ServerProcess | undefined;
let port: number;
beforeAll(async () => {
  server = await spawnServer({
    PTC_STORE: 'memory',
    PTC_API_KEY: KEY,
    PTC_BODY_LIMIT_BYTES: String(LIMIT),
    PTC_MAX_ARRIVING_BODY_BYTES: String(MAX_ARRIVING),
    LOG_LEVEL: 'warn',
  });
  port = Number(new URL(server.baseURL).port);
});
afterAll(() => server?.kill());

/** A valid request whose JSON is `size` bytes or a little more. */
const requestOf = (size: number): string => JSON.stringify({ model: MODEL, input: 'x'.repeat(size) });

const AUTHORIZED = `authorization: Bearer ${KEY}`;
const EXPECT = 'expect: 100-continue';

/** The head of a `POST /v1/responses` with the key, `Expect: 100-continue` and `headers`. */
const expectHead = (headers: readonly string[]): string => postHead([AUTHORIZED, EXPECT, ...headers]);

/** A whole `POST /v1/responses` of `body` with the key, and no Expect. */
const post = (body: string): string => postHead([AUTHORIZED, `content-length: ${Buffer.byteLength(body)}`]) + body;

/** The body in one chunk and the last one. */
const chunked = (body: string): string => `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;

/** Waits for the first head the server sends, interim or final. */
const firstHead = (connection: RawConnection): Promise<boolean> => connection.until((received) => received.includes('\r\n\r\n'));

/**
 * A request refused by its head, only the head sent: its answer comes with no 100 before it, and
 * says the connection closes, which it then does (the body, were it sent now, would be read by no
 * one, neither as this request's nor as another).
 */
async function expectRefusedAtOnce(head: string, status: number, code: string): Promise<EnvelopeError> {
  let error: EnvelopeError | undefined;
  await withRawConnection(port, async (connection) => {
    connection.write(head);
    const answer = await connection.next();
    expect(answer?.status, answer?.body ?? 'no answer: the connection closed').toBe(status);
    expect(connection.received.startsWith(`HTTP/1.1 ${status} `), connection.received.slice(0, 200)).toBe(true);
    expect(connection.received).not.toContain('100 Continue');
    expect(answer?.headers.connection).toBe('close');
    error = envelopeErrorOf(answer!.body);
    expect(error.code).toBe(code);
    expect(await connection.next()).toBeUndefined();
    expect(connection.closed).toBe(true);
  });
  return error!;
}

describe('Expect: 100-continue, a body the server reads', () => {
  it('is asked for with 100 Continue, sent only then, and answered 200; the connection serves the next request', async () => {
    await withRawConnection(port, async (connection) => {
      const body = requestOf(100_000);
      connection.write(expectHead([`content-length: ${Buffer.byteLength(body)}`]));
      expect(await firstHead(connection)).toBe(true);
      expect(connection.received).toBe(CONTINUE);
      connection.write(body);
      const answer = await connection.next();
      expect(answer?.status, answer?.body).toBe(200);
      expect(answer?.headers.connection).not.toBe('close');
      // A second request on the connection, with Expect again: one 100 each.
      const small = requestOf(10);
      connection.write(expectHead([`content-length: ${Buffer.byteLength(small)}`]));
      expect(await connection.until((received) => received.endsWith(CONTINUE))).toBe(true);
      connection.write(small);
      const next = await connection.next();
      expect(next?.status, next?.body).toBe(200);
      expect(connection.received.split('100 Continue').length - 1).toBe(2);
      expect(connection.closed).toBe(false);
    });
  });

  it('in chunks (no Content-Length): asked for with 100 Continue, then answered 200', async () => {
    await withRawConnection(port, async (connection) => {
      connection.write(expectHead(['transfer-encoding: chunked']));
      expect(await firstHead(connection)).toBe(true);
      expect(connection.received).toBe(CONTINUE);
      const answer = await connection.exchange([chunked(requestOf(10))]);
      expect(answer?.status, answer?.body).toBe(200);
    });
  });

  it('once asked for, a body found over the limit as it arrives is read and dropped, and its 413 comes once it is sent', async () => {
    await withRawConnection(port, async (connection) => {
      connection.write(expectHead(['transfer-encoding: chunked']));
      expect(await firstHead(connection)).toBe(true);
      expect(connection.received).toBe(CONTINUE);
      const body = requestOf(2 * LIMIT);
      const chunks = body.match(/[\s\S]{1,65536}/g)!.map((chunk) => `${chunk.length.toString(16)}\r\n${chunk}\r\n`);
      const answer = await connection.exchange([...chunks, '0\r\n\r\n']);
      expect(answer?.status, answer?.body ?? 'no answer: the connection closed').toBe(413);
      expect(envelopeErrorOf(answer!.body).code).toBe('request_too_large');
      // Read to its end: the connection serves the next request.
      const next = await connection.exchange([post(requestOf(10))]);
      expect(next?.status, next?.body).toBe(200);
      expect(connection.closed).toBe(false);
    });
  });
});

describe('Expect: 100-continue, a request refused by its head: answered at once, no 100, the body never sent, the connection closed', () => {
  it('a Content-Length over PTC_BODY_LIMIT_BYTES: 413 request_too_large', async () => {
    const error = await expectRefusedAtOnce(expectHead([`content-length: ${LIMIT + 1}`]), 413, 'request_too_large');
    expect(error.message).toContain('PTC_BODY_LIMIT_BYTES');
  });

  it('an expectation other than 100-continue: 417 expectation_failed in the envelope (Node answers it bare)', async () => {
    const error = await expectRefusedAtOnce(postHead([AUTHORIZED, 'expect: a-teapot', 'content-length: 1000']), 417, 'expectation_failed');
    expect(error.message).toContain('a-teapot');
  });

  it('a bad API key: 401 invalid_api_key', async () => {
    const head = postHead(['authorization: Bearer wrong-key', EXPECT, 'content-length: 1000']);
    await expectRefusedAtOnce(head, 401, 'invalid_api_key');
  });

  it('no API key: 401 invalid_api_key', async () => {
    await expectRefusedAtOnce(postHead([EXPECT, 'content-length: 1000']), 401, 'invalid_api_key');
  });

  it('a URL no route serves: 404 unknown_url', async () => {
    const head = expectHead(['content-length: 1000']).replace('POST /v1/responses ', 'POST /v1/no-such-route ');
    await expectRefusedAtOnce(head, 404, 'unknown_url');
  });

  it('a charset other than UTF-8: 415 unsupported_media_type', async () => {
    const head = expectHead(['content-length: 1000']).replace('content-type: application/json', 'content-type: application/json; charset=latin1');
    const error = await expectRefusedAtOnce(head, 415, 'unsupported_media_type');
    expect(error.message).toContain('charset=latin1');
  });

  it('a body not JSON: 415 unsupported_media_type', async () => {
    const head = expectHead(['content-length: 1000']).replace('content-type: application/json', 'content-type: multipart/form-data; boundary=x');
    await expectRefusedAtOnce(head, 415, 'unsupported_media_type');
  });

  it('a body that would take the bodies arriving past PTC_MAX_ARRIVING_BODY_BYTES: 429 server_busy', async () => {
    const held = await RawConnection.open(port);
    try {
      // 1.5 MiB of a body sent, the last bytes held back.
      const heldRequest = post(requestOf(1.5 * MiB));
      held.write(heldRequest.slice(0, -2));
      await untilArriving(server!, (bytes) => bytes >= 1.5 * MiB);
      // 1.5 + 1.8 MiB would not fit in 3.
      const declared = Buffer.byteLength(requestOf(1.8 * MiB));
      const error = await expectRefusedAtOnce(expectHead([`content-length: ${declared}`]), 429, 'server_busy');
      expect(error.message).toContain('PTC_MAX_ARRIVING_BODY_BYTES');
      // The held body ends: it is served.
      const answer = await held.exchange([heldRequest.slice(-2)]);
      expect(answer?.status, answer?.body).toBe(200);
    } finally {
      held.close();
    }
  });
});
