import type { Socket } from 'node:net';
import type { WebSocket } from '@fastify/websocket';
import { ApiError } from '../../platform/api-error.ts';
import type { ArrivingBodies } from '../http/arriving-bodies.ts';

/**
 * A socket's message as it arrives, held to what an HTTP body is held to: ws gathers each message
 * whole in memory (up to PTC_BODY_LIMIT_BYTES, its `maxPayload`) before the server sees it, so a
 * client holding messages half-sent on many sockets, or sending one without end, would otherwise
 * hold as much memory as it liked. A message's bytes count among the bodies arriving
 * (PTC_MAX_ARRIVING_BODY_BYTES, arriving-bodies.ts), and it must come whole within
 * PTC_REQUEST_TIMEOUT_MS of its first byte, or the socket is refused: an `error` event, then
 * closed (ws cannot drop the rest of a message without reading it).
 *
 * The connection's reads are followed frame by frame (RFC 6455 §5.2: only each frame's header is
 * read, its payload skipped), before ws parses them: a message begins with the first byte of its
 * first data frame and ends with the last byte of its final one, wherever those fall in a read.
 * Control frames (ping, pong, close: 131 bytes at most) are neither counted nor timed. Once ws
 * no longer reads the socket as open (it closed it, or is closing), nothing more is counted.
 */

/** Why a socket is refused, and the close code that says so: 1008 policy violation, 1013 try again later. */
export interface SocketRefusal {
  readonly error: ApiError;
  readonly closeCode: 1008 | 1013;
}

/** A frame header's bytes at most: 2, 8 of an extended length, 4 of the mask. */
const MAX_HEADER_BYTES = 14;

/** Where a connection's bytes stand in the frames they carry. */
class FrameReader {
  readonly #header = Buffer.alloc(MAX_HEADER_BYTES);
  #headerBytes = 0;
  #payloadLeft = 0;
  /** The frame being read carries data (text, binary, continuation), not control. */
  #data = false;
  #final = false;

  /**
   * Follows `chunk`: `messageBytes` for each run of it inside a message's data frames (`begins`
   * when it starts a message), `ended` when a message's final frame ends.
   */
  read(chunk: Buffer, on: { messageBytes(bytes: number, begins: boolean): void; ended(): void }): void {
    let offset = 0;
    while (offset < chunk.length) {
      const from = offset;
      let begins = false;
      if (this.#payloadLeft > 0) {
        const taken = Math.min(this.#payloadLeft, chunk.length - offset);
        this.#payloadLeft -= taken;
        offset += taken;
      } else {
        if (this.#headerBytes === 0) {
          const opcode = chunk[offset]! & 0x0f;
          this.#data = opcode < 0x8;
          this.#final = (chunk[offset]! & 0x80) !== 0;
          // A data frame other than a continuation starts a message.
          begins = this.#data && opcode !== 0x0;
        }
        this.#header[this.#headerBytes++] = chunk[offset++]!;
        const length = this.#headerLength();
        if (length === undefined || this.#headerBytes < length) {
          if (this.#data) on.messageBytes(offset - from, begins);
          continue;
        }
        this.#payloadLeft = this.#payloadLength();
        this.#headerBytes = 0;
      }
      if (this.#data) on.messageBytes(offset - from, begins);
      if (this.#payloadLeft === 0 && this.#headerBytes === 0 && this.#data && this.#final) on.ended();
    }
  }

  /** The header's whole length, once its first two bytes are in. */
  #headerLength(): number | undefined {
    if (this.#headerBytes < 2) return undefined;
    const second = this.#header[1]!;
    const short = second & 0x7f;
    return 2 + (short === 126 ? 2 : short === 127 ? 8 : 0) + ((second & 0x80) !== 0 ? 4 : 0);
  }

  #payloadLength(): number {
    const short = this.#header[1]! & 0x7f;
    if (short === 126) return this.#header.readUInt16BE(2);
    if (short === 127) return Number(this.#header.readBigUInt64BE(2));
    return short;
  }
}

export function watchArrivingMessages(
  raw: Socket,
  socket: WebSocket,
  bounds: {
    readonly arriving: ArrivingBodies;
    readonly timeoutMs: number;
    /** Whether the message's time is stopped for now: the server does not read the socket, by no fault of the client's. */
    readonly excused: () => boolean;
  },
  refuse: (refusal: SocketRefusal) => void,
): void {
  const frames = new FrameReader();
  // One count and one timer for the socket, not one of each per message: a read can carry
  // thousands of short messages.
  const counted = bounds.arriving.begin(Number.NaN);
  /** Bytes counted of the message being received; when its first byte came (undefined: none is). */
  let messageBytes = 0;
  let startedAt: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  let done = false;
  const end = (): void => {
    if (startedAt === undefined) return;
    counted.released(messageBytes);
    messageBytes = 0;
    startedAt = undefined;
  };
  const stop = (refusal?: SocketRefusal): void => {
    done = true;
    clearTimeout(timer);
    counted.end();
    if (refusal) refuse(refusal);
  };
  const expire = (): void => {
    timer = undefined;
    if (done || startedAt === undefined) return;
    const left = startedAt + bounds.timeoutMs - performance.now();
    if (left > 0) return arm(left);
    if (bounds.excused()) {
      startedAt = performance.now();
      return arm(bounds.timeoutMs);
    }
    stop({
      error: new ApiError('request_timeout', `A message was not received whole within PTC_REQUEST_TIMEOUT_MS (${bounds.timeoutMs} ms): the socket is closed.`),
      closeCode: 1008,
    });
  };
  const arm = (ms: number): void => {
    timer = setTimeout(expire, ms);
    timer.unref();
  };
  const events = {
    messageBytes: (bytes: number, begins: boolean): void => {
      if (done) return;
      if (begins || startedAt === undefined) {
        end();
        startedAt = performance.now();
        // Armed once; a message that begins while it runs is looked at when it fires.
        if (timer === undefined) arm(bounds.timeoutMs);
      }
      messageBytes += bytes;
      try {
        counted.received(bytes);
      } catch (busy) {
        stop({ error: busy as ApiError, closeCode: 1013 });
      }
    },
    ended: end,
  };
  // Before ws's own listener: the bytes are counted before ws parses them (and hands a message over).
  raw.prependListener('data', (chunk: Buffer) => {
    if (done) return;
    // ws has closed the socket (a frame it refused, the client's close frame) and reads no more.
    if (socket.readyState !== socket.OPEN) return stop();
    frames.read(chunk, events);
  });
  socket.once('close', () => stop());
}
