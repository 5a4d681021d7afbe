import type { Socket } from 'node:net';
import type { WebSocket } from '@fastify/websocket';
import { ApiError } from '../../platform/api-error.ts';
import type { ArrivingBodies, ArrivingBody } from '../http/arriving-bodies.ts';

/**
 * A socket's message as it arrives, held to what an HTTP body is held to: ws gathers each message
 * whole in memory (up to PTC_BODY_LIMIT_BYTES, its `maxPayload`) before the server sees it, so a
 * client holding messages half-sent on many sockets, or sending one without end, would otherwise
 * hold as much memory as it liked. A message's bytes count among the bodies arriving
 * (PTC_MAX_ARRIVING_BODY_BYTES, arriving-bodies.ts), and it must come whole within
 * PTC_REQUEST_TIMEOUT_MS of its first byte, or the socket is refused: an `error` event, then
 * closed (ws cannot drop the rest of a message without reading it).
 *
 * Counted on the connection's own reads, before ws parses them: a message begins with the first
 * byte read after the last one ended, and ends when ws hands it over (or a ping or pong alone).
 * What a read holds past the end of a message goes uncounted: at most one read (64 KiB), as an
 * HTTP body under 64 KiB is always read.
 */

/** Why a socket is refused, and the close code that says so: 1008 policy violation, 1013 try again later. */
export interface SocketRefusal {
  readonly error: ApiError;
  readonly closeCode: 1008 | 1013;
}

/** A masked control frame's header: two bytes, and the four of its mask (its payload is at most 125 bytes). */
const CONTROL_FRAME_HEADER_BYTES = 6;

export function watchArrivingMessages(
  raw: Socket,
  socket: WebSocket,
  bounds: { readonly arriving: ArrivingBodies; readonly timeoutMs: number },
  refuse: (refusal: SocketRefusal) => void,
): void {
  let message: { readonly body: ArrivingBody; bytes: number; readonly timer: NodeJS.Timeout } | undefined;
  let refused = false;
  const end = (): void => {
    if (!message) return;
    clearTimeout(message.timer);
    message.body.end();
    message = undefined;
  };
  const stop = (refusal: SocketRefusal): void => {
    end();
    refused = true;
    refuse(refusal);
  };
  const expire = (): void => {
    if (!message) return;
    // Not read because the server paused the socket (its requests wait): the client is not late.
    if (socket.isPaused) {
      message.timer.refresh();
      return;
    }
    stop({
      error: new ApiError('request_timeout', `A message was not received whole within PTC_REQUEST_TIMEOUT_MS (${bounds.timeoutMs} ms): the socket is closed.`),
      closeCode: 1008,
    });
  };
  // Before ws's own listener: the bytes are counted before ws parses them (and hands a message over).
  raw.prependListener('data', (chunk: Buffer) => {
    if (refused) return;
    if (!message) {
      const timer = setTimeout(expire, bounds.timeoutMs);
      timer.unref();
      message = { body: bounds.arriving.begin(Number.NaN), bytes: 0, timer };
    }
    message.bytes += chunk.length;
    try {
      message.body.received(chunk.length);
    } catch (busy) {
      stop({ error: busy as ApiError, closeCode: 1013 });
    }
  });
  socket.on('message', end);
  // A ping or pong ends only what it alone began: one between the frames of a message leaves it counted.
  const control = (data: Buffer): void => {
    if (message?.bytes === CONTROL_FRAME_HEADER_BYTES + data.length) end();
  };
  socket.on('ping', control);
  socket.on('pong', control);
  socket.once('close', end);
}
