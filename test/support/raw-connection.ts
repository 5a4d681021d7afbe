import net from 'node:net';
import { parseResponses, type RawResponse } from './fuzz-http.ts';

/** One raw HTTP/1.1 connection to a local server: each request written once the answer to the one before has come. */
export class RawConnection {
  readonly #socket: net.Socket;
  #received = Buffer.alloc(0);
  #closed = false;
  /** Answers returned so far. */
  #answered = 0;
  #waiting: (() => void) | undefined;

  private constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#received = Buffer.concat([this.#received, chunk]);
      this.#waiting?.();
    });
    socket.on('close', () => {
      this.#closed = true;
      this.#waiting?.();
    });
    // A reset shows as the close, with no answer: what the test looks at.
    socket.on('error', () => undefined);
  }

  static async open(port: number): Promise<RawConnection> {
    const socket = net.connect({ port, host: '127.0.0.1' });
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    return new RawConnection(socket);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Writes a request and waits for its answer; undefined when the connection closed without one. */
  async exchange(writes: readonly (string | Buffer)[]): Promise<RawResponse | undefined> {
    for (const write of writes) if (!this.#socket.destroyed) this.#socket.write(write);
    return this.next();
  }

  /** Writes bytes without waiting for an answer: part of a request, the rest sent later (or never). */
  write(bytes: string | Buffer): void {
    this.#socket.write(bytes);
  }

  /** Everything received so far, interim answers (`100 Continue`) included, byte for byte (latin1). */
  get received(): string {
    return this.#received.toString('latin1');
  }

  /** Waits until what was received meets `holds`; false when the connection closed first. */
  async until(holds: (received: string) => boolean): Promise<boolean> {
    for (;;) {
      if (holds(this.received)) return true;
      if (this.#closed) return false;
      await new Promise<void>((resolve) => {
        this.#waiting = resolve;
      });
    }
  }

  /** Waits for the next answer not yet returned (interim ones skipped); undefined when the connection closed without one. */
  async next(): Promise<RawResponse | undefined> {
    for (;;) {
      const responses = parseResponses(this.#received).responses;
      if (responses.length > this.#answered) return responses[this.#answered++];
      if (this.#closed) return undefined;
      await new Promise<void>((resolve) => {
        this.#waiting = resolve;
      });
    }
  }

  close(): void {
    this.#socket.destroy();
  }
}

/** Runs `use` on a fresh raw connection to `port`, closed however it ends. */
export async function withRawConnection(port: number, use: (connection: RawConnection) => Promise<void>): Promise<void> {
  const connection = await RawConnection.open(port);
  try {
    await use(connection);
  } finally {
    connection.close();
  }
}

/** The head of a JSON `POST /v1/responses`, with more header lines (`content-length: …`, `transfer-encoding: chunked`). */
export const postHead = (headers: readonly string[]): string =>
  `POST /v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n${headers.map((line) => `${line}\r\n`).join('')}\r\n`;

/** A whole JSON `POST /v1/responses` of `body`, with its Content-Length. */
export const postWithLength = (body: string): string => postHead([`content-length: ${Buffer.byteLength(body)}`]) + body;
