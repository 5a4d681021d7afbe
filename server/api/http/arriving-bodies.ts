import { ApiError } from '../../platform/api-error.ts';

/**
 * The bytes of request bodies received and not yet whole, on one server, held to
 * PTC_MAX_ARRIVING_BODY_BYTES: each body is bounded by PTC_BODY_LIMIT_BYTES, but clients
 * sending many at once (or slowly, until PTC_REQUEST_TIMEOUT_MS) would otherwise hold as much
 * memory as they like. A body that would take the total past the bound is a 429 `server_busy`,
 * unless it is the only one arriving: any one body within its limit is always read.
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
    if (this.#bytes > 0 && this.#bytes + (Number.isNaN(declared) ? 0 : declared) > this.#maxBytes) throw this.#busy();
    let mine = 0;
    let ended = false;
    return {
      received: (bytes) => {
        if (ended) return;
        mine += bytes;
        this.#bytes += bytes;
        if (this.#bytes > this.#maxBytes && this.#bytes > mine) throw this.#busy();
      },
      end: () => {
        if (ended) return;
        ended = true;
        this.#bytes -= mine;
      },
    };
  }

  #busy(): ArrivingBodiesBusyError {
    return new ArrivingBodiesBusyError(this.#bytes, this.#maxBytes);
  }
}

/** A body refused, unread, as one too many arriving: its 429 is answered once the client has sent the rest, as a 413 is (error-handler.ts). */
class ArrivingBodiesBusyError extends ApiError {
  constructor(arrivingBytes: number, maxBytes: number) {
    super(
      'server_busy',
      `The server is busy: ${arrivingBytes} bytes of request bodies are arriving, at most ${maxBytes} may (PTC_MAX_ARRIVING_BODY_BYTES). Retry shortly.`,
      null,
      { 'retry-after': '1' },
    );
  }
}

/** One body as it arrives: each chunk's size as it comes (throws the 429 when past the bound), then its end however it ends. */
export interface ArrivingBody {
  received(bytes: number): void;
  end(): void;
}

/** Whether a request's error is the refusal of its body as one too many arriving (the body left unread). */
export function isArrivingBodiesBusy(error: unknown): boolean {
  return error instanceof ArrivingBodiesBusyError;
}
