import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { arrivingBytes, untilArriving } from './support/arriving-gauge.ts';
import { spawnServer, type ServerProcess } from './support/server-process.ts';

/**
 * A WebSocket message being received is held as an HTTP body is (server/api/responses/
 * socket-arrivals.ts): it counts among the bodies arriving (PTC_MAX_ARRIVING_BODY_BYTES) and must
 * come whole within PTC_REQUEST_TIMEOUT_MS. An SDK cannot stop in the middle of a message, so the
 * client here writes its frames by hand on a raw connection, against a server in its own process.
 */

const MODEL = 'ptc-emulator';

/** What the server sent: a text frame's JSON, or the close frame's code. */
type Received =
  | { readonly kind: 'text'; readonly event: Record<string, unknown> }
  | { readonly kind: 'close'; readonly code: number }
  | { readonly kind: 'pong' };

/** A client frame (masked, as a client's must be); `sent` bytes of its payload at most, the length declared whole. */
function frame(opcode: number, payload: Buffer, options: { readonly fin?: boolean; readonly sent?: number } = {}): Buffer {
  const length = payload.length;
  const head = length < 126 ? Buffer.from([0, 0x80 | length]) : Buffer.alloc(4);
  if (length >= 126) {
    if (length > 0xffff) throw new Error('frames here are under 64 KiB');
    head[1] = 0x80 | 126;
    head.writeUInt16BE(length, 2);
  }
  head[0] = ((options.fin ?? true) ? 0x80 : 0) | opcode;
  const mask = randomBytes(4);
  const masked = Buffer.from(payload.map((byte, index) => byte ^ mask[index % 4]!));
  return Buffer.concat([head, mask, masked.subarray(0, options.sent ?? length)]);
}

/** A socket on the Responses URL, spoken to frame by frame. */
class RawSocket {
  readonly #socket: net.Socket;
  #buffer = Buffer.alloc(0);
  #upgraded = false;
  readonly #frames: Received[] = [];
  #wake: (() => void) | undefined;
  closed = false;

  private constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      this.#parse();
      this.#wake?.();
    });
    socket.on('close', () => {
      this.closed = true;
      this.#wake?.();
    });
    socket.on('error', () => undefined);
  }

  static async open(port: number, headers: readonly string[] = []): Promise<RawSocket> {
    const socket = net.connect({ port, host: '127.0.0.1' });
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const raw = new RawSocket(socket);
    socket.write(
      `GET /v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer test-key\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-version: 13\r\nsec-websocket-key: ${randomBytes(16).toString('base64')}\r\n${headers.map((header) => `${header}\r\n`).join('')}\r\n`,
    );
    await raw.#until(() => raw.#upgraded);
    return raw;
  }

  write(bytes: Buffer): void {
    this.#socket.write(bytes);
  }

  /** The next frame the server sent; undefined once the connection closed without one. */
  async next(): Promise<Received | undefined> {
    await this.#until(() => this.#frames.length > 0);
    return this.#frames.shift();
  }

  /** The next text event whose `type` (and `code`, if given) is that, the events before it passed over. */
  async find(type: string, code?: string): Promise<Record<string, unknown>> {
    for (;;) {
      const received = await this.next();
      if (received === undefined) throw new Error(`the socket closed before an event ${type}`);
      if (received.kind === 'text' && received.event.type === type && (code === undefined || received.event.code === code)) return received.event;
    }
  }

  /** Text events up to the first whose type is `type` (or the end). */
  async eventsUntil(type: string): Promise<Record<string, unknown>[]> {
    const events: Record<string, unknown>[] = [];
    for (;;) {
      const received = await this.next();
      if (received?.kind !== 'text')
        throw new Error(`expected the event ${type}, got ${JSON.stringify(received)} after ${JSON.stringify(events.map((event) => event.type))}`);
      events.push(received.event);
      if (received.event.type === type) return events;
    }
  }

  destroy(): void {
    this.#socket.destroy();
  }

  async #until(done: () => boolean): Promise<void> {
    while (!done() && !this.closed) {
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
  }

  #parse(): void {
    if (!this.#upgraded) {
      const end = this.#buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = this.#buffer.subarray(0, end).toString('latin1');
      if (!head.startsWith('HTTP/1.1 101')) throw new Error(`the upgrade was refused:\n${head}`);
      this.#upgraded = true;
      this.#buffer = this.#buffer.subarray(end + 4);
    }
    for (;;) {
      if (this.#buffer.length < 2) return;
      const opcode = this.#buffer[0]! & 0x0f;
      let length = this.#buffer[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (this.#buffer.length < 4) return;
        length = this.#buffer.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (this.#buffer.length < 10) return;
        length = Number(this.#buffer.readBigUInt64BE(2));
        offset = 10;
      }
      if (this.#buffer.length < offset + length) return;
      const payload = this.#buffer.subarray(offset, offset + length);
      this.#buffer = this.#buffer.subarray(offset + length);
      if (opcode === 1) this.#frames.push({ kind: 'text', event: JSON.parse(payload.toString('utf8')) as Record<string, unknown> });
      else if (opcode === 8) this.#frames.push({ kind: 'close', code: payload.readUInt16BE(0) });
      else if (opcode === 10) this.#frames.push({ kind: 'pong' });
    }
  }
}

/** A `response.create` event's JSON of `size` bytes or a little more. */
const createOf = (size: number): Buffer => Buffer.from(JSON.stringify({ type: 'response.create', model: MODEL, input: 'x'.repeat(size) }));

/**
 * Writes the first `sent` bytes of a message's payload, in frames of 60,000 bytes (the last one
 * cut short); returns what writes the rest.
 */
function sendPart(socket: RawSocket, message: Buffer, sent: number): () => void {
  const frames: Buffer[] = [];
  for (let start = 0; start < message.length; start += 60_000) {
    const end = Math.min(start + 60_000, message.length);
    frames.push(frame(start === 0 ? 1 : 0, message.subarray(start, end), { fin: end === message.length }));
  }
  // Each frame's header is 8 bytes (a 16-bit length and the mask).
  const bytes = Buffer.concat(frames);
  const cut = sent + 8 * Math.ceil(sent / 60_000);
  socket.write(bytes.subarray(0, cut));
  return () => socket.write(bytes.subarray(cut));
}

const opened: RawSocket[] = [];
async function open(server: ServerProcess, headers: readonly string[] = []): Promise<RawSocket> {
  const socket = await RawSocket.open(Number(new URL(server.baseURL).port), headers);
  opened.push(socket);
  return socket;
}
afterEach(() => {
  for (const socket of opened.splice(0)) socket.destroy();
});

describe('a message that does not arrive whole (PTC_REQUEST_TIMEOUT_MS)', () => {
  let server: ServerProcess | undefined;
  beforeAll(async () => {
    server = await spawnServer({ PTC_STORE: 'memory', PTC_API_KEY: 'test-key', PTC_REQUEST_TIMEOUT_MS: '2000', LOG_LEVEL: 'warn' });
  });
  afterAll(() => server?.kill());

  it('is refused with a request_timeout error event, the socket closed with 1008, and what it sent let go', async () => {
    const socket = await open(server!);
    const message = createOf(30_000);
    socket.write(frame(1, message, { sent: 20_000 }));
    await untilArriving(server!, (bytes) => bytes >= 20_000);
    const refusal = await socket.next();
    expect(refusal).toMatchObject({ kind: 'text', event: { type: 'error', code: 'request_timeout', status: 408 } });
    expect(refusal?.kind === 'text' && String(refusal.event.message)).toContain('PTC_REQUEST_TIMEOUT_MS');
    expect(await socket.next()).toEqual({ kind: 'close', code: 1008 });
    await untilArriving(server!, (bytes) => bytes === 0);
    // The journal has it, as the request it would have been.
    const journal = (await (await fetch(new URL('/v1/emulator/journal', server!.baseURL), { headers: { authorization: 'Bearer test-key' } })).json()) as {
      data: { method: string; status: number; error?: { code: string } }[];
    };
    expect(journal.data.some((entry) => entry.method === 'WS' && entry.status === 408 && entry.error?.code === 'request_timeout')).toBe(true);
  });

  it('a message that begins in the read that ended the one before is counted and timed from there', async () => {
    const socket = await open(server!);
    // One write: a whole request, then the first part of the next.
    socket.write(Buffer.concat([frame(1, createOf(10)), frame(1, createOf(30_000), { sent: 20_000 })]));
    await socket.find('response.completed');
    await untilArriving(server!, (bytes) => bytes >= 20_000);
    expect(await socket.next()).toMatchObject({ kind: 'text', event: { type: 'error', code: 'request_timeout' } });
    expect(await socket.next()).toEqual({ kind: 'close', code: 1008 });
    await untilArriving(server!, (bytes) => bytes === 0);
  });

  it('control frames together in one read count for nothing', async () => {
    const socket = await open(server!);
    socket.write(Buffer.concat([frame(9, Buffer.from('one')), frame(9, Buffer.from('two')), frame(10, Buffer.from('unasked'))]));
    expect(await socket.next()).toEqual({ kind: 'pong' });
    expect(await socket.next()).toEqual({ kind: 'pong' });
    expect(await arrivingBytes(server!)).toBe(0);
  });

  it('a ping between messages starts none: nothing is left counted once it is answered, and the socket serves on', async () => {
    const socket = await open(server!);
    socket.write(frame(9, Buffer.from('are you there')));
    expect(await socket.next()).toEqual({ kind: 'pong' });
    expect(await arrivingBytes(server!)).toBe(0);
    socket.write(frame(1, createOf(10)));
    const events = await socket.eventsUntil('response.completed');
    expect(events[0]?.type).toBe('response.created');
  });

  it('a ping between the fragments of a message leaves what came of it counted, and the message is served whole', async () => {
    const socket = await open(server!);
    const message = createOf(100_000);
    const first = message.subarray(0, 60_000);
    socket.write(frame(1, first, { fin: false }));
    socket.write(frame(9, Buffer.from('mid-message')));
    expect(await socket.next()).toEqual({ kind: 'pong' });
    expect(await arrivingBytes(server!)).toBeGreaterThanOrEqual(first.length);
    socket.write(frame(0, message.subarray(60_000), { fin: true }));
    const events = await socket.eventsUntil('response.completed');
    expect(events[0]?.type).toBe('response.created');
    await untilArriving(server!, (bytes) => bytes === 0);
  });
});

describe('messages arriving on many sockets at once (PTC_MAX_ARRIVING_BODY_BYTES)', () => {
  let server: ServerProcess | undefined;
  beforeAll(async () => {
    server = await spawnServer({ PTC_STORE: 'memory', PTC_API_KEY: 'test-key', PTC_MAX_ARRIVING_BODY_BYTES: '100000', LOG_LEVEL: 'warn' });
  });
  afterAll(() => server?.kill());

  it('a large one past the bound is refused server_busy and its socket closed with 1013; the one arriving before it is served', async () => {
    const first = await open(server!);
    const sendRest = sendPart(first, createOf(120_000), 80_000);
    await untilArriving(server!, (bytes) => bytes >= 80_000);

    const second = await open(server!);
    sendPart(second, createOf(120_000), 80_000);
    expect(await second.next()).toMatchObject({ kind: 'text', event: { type: 'error', code: 'server_busy', status: 429 } });
    expect(await second.next()).toEqual({ kind: 'close', code: 1013 });

    // The first is read on to its end, and served.
    sendRest();
    const events = await first.eventsUntil('response.completed');
    expect(events[0]?.type).toBe('response.created');
    second.destroy();
    await untilArriving(server!, (bytes) => bytes === 0);
  });

  it('messages waiting on their sockets count too: past the bound, one more is answered server_busy and its socket serves on', async () => {
    // Each socket's first request is streamed a minute an event: what the client sends after it waits.
    const slow = ['x-ptc-event-latency-ms: 60000'];
    const first = await open(server!, slow);
    first.write(Buffer.concat([frame(1, createOf(10)), frame(1, createOf(40_000)), frame(1, createOf(40_000))]));
    await untilArriving(server!, (bytes) => bytes >= 80_000);

    const second = await open(server!, slow);
    second.write(Buffer.concat([frame(1, createOf(10)), frame(1, createOf(40_000)), frame(1, createOf(40_000))]));
    expect(await second.find('error')).toMatchObject({ code: 'server_busy', status: 429 });
    // Its socket stays open: a ping is answered.
    second.write(frame(9, Buffer.from('still there?')));
    expect(await second.next()).toEqual({ kind: 'pong' });
    // What the refused message brought is let go: the second socket holds its one waiting message.
    first.destroy();
    await untilArriving(server!, (bytes) => bytes > 0 && bytes <= createOf(40_000).length);
    second.destroy();
    await untilArriving(server!, (bytes) => bytes === 0);
  });

  it('a socket flooded with more messages than one read of a waiting client brings is told so and closed', async () => {
    const socket = await open(server!, ['x-ptc-event-latency-ms: 60000']);
    // A request served a minute an event, then hundreds behind it in one write (7 bytes each).
    const flood = Array.from({ length: 300 }, () => frame(1, Buffer.from('{}')));
    socket.write(Buffer.concat([frame(1, createOf(10)), ...flood]));
    expect(await socket.find('error', 'too_many_queued_messages')).toMatchObject({ status: 429 });
    for (;;) {
      const received = await socket.next();
      if (received === undefined) throw new Error('the socket closed without a close frame');
      if (received.kind === 'close') {
        expect(received.code).toBe(1008);
        break;
      }
    }
    await untilArriving(server!, (bytes) => bytes === 0);
  });
});
