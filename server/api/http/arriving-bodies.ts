import type { ApiError } from '../../platform/api-error.ts';
import { OFF_LOOP_JSON_BYTES } from './json-body.ts';
import { unreadBodyRefusal } from './unread-body.ts';

/**
 * The bytes of request bodies received and not yet whole, on one server, held to
 * PTC_MAX_ARRIVING_BODY_BYTES: each body is bounded by PTC_BODY_LIMIT_BYTES, but clients
 * sending many at once (or slowly, until PTC_REQUEST_TIMEOUT_MS) would otherwise hold as much
 * memory as they like. A large body that would take the total past the bound is a 429
 * `server_busy`, unless it is the only one arriving. Small bodies (under OFF_LOOP_JSON_BYTES,
 * parsed on the loop) are always read, and counted: a few clients holding large bodies half-sent
 * must not refuse the ordinary requests of everyone else.
 */
export class ArrivingBodies {
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** Bytes received of bodies still arriving (GET /metrics). */
  get bytes(): number {
    return this.#bytes;
  }

  /** One more body, its Content-Length `declared` (NaN when chunked): refused at once when that much more would not fit. */
  begin(declared: number): ArrivingBody {
    if (declared >= OFF_LOOP_JSON_BYTES && this.#bytes > 0 && this.#bytes + declared > this.#maxBytes) throw this.#busy();
    let mine = 0;
    let ended = false;
    return {
      received: (bytes) => {
        if (ended) return;
        mine += bytes;
        this.#bytes += bytes;
        if (mine >= OFF_LOOP_JSON_BYTES && this.#bytes > this.#maxBytes && this.#bytes > mine) throw this.#busy();
      },
      released: (bytes) => {
        if (ended) return;
        const freed = Math.min(bytes, mine);
        mine -= freed;
        this.#bytes -= freed;
      },
      end: () => {
        if (ended) return;
        ended = true;
        this.#bytes -= mine;
      },
    };
  }

  #busy(): ApiError {
    return unreadBodyRefusal(
      'server_busy',
      `The server is busy: ${this.#bytes} bytes of request bodies are arriving, at most ${this.#maxBytes} may (PTC_MAX_ARRIVING_BODY_BYTES). Retry shortly.`,
      null,
      { 'retry-after': '1' },
    );
  }
}

/**
 * One body as it arrives: each chunk's size as it comes (throws the 429 when past the bound), then
 * its end however it ends. What is held longer (a socket's waiting messages) is released in parts.
 */
export interface ArrivingBody {
  received(bytes: number): void;
  released(bytes: number): void;
  end(): void;
}
