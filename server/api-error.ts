import { API_ERRORS, type ApiErrorCode } from '../schemas/error-codes.ts';
import type { ErrorEnvelope } from '../schemas/response.ts';

/**
 * An HTTP error in OpenAI's envelope. Status and `type` come from the code's single
 * declaration in schemas/error-codes.ts; the message says what was wrong and where.
 */
export class ApiError extends Error {
  readonly code: ApiErrorCode;
  readonly status: number;
  readonly param: string | null;
  readonly headers: Readonly<Record<string, string>>;

  /** `status` overrides the declared one: only the simulated errors of the knobs use it. */
  constructor(code: ApiErrorCode, message: string, param: string | null = null, headers: Record<string, string> = {}, status?: number) {
    // No stack: an ApiError is an answer to the client, never logged as a fault, and capturing
    // one costs more than the rest of it (a lenient request noting 20,000 mistakes made 20,000).
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'ApiError';
    this.code = code;
    this.status = status ?? API_ERRORS[code].status;
    this.param = param;
    this.headers = headers;
  }

  /** The OpenAI `type`: the declared one, or for a simulated error the one its status implies. */
  get type(): string {
    if (this.status === API_ERRORS[this.code].status) return API_ERRORS[this.code].type;
    if (this.status === 429) return 'rate_limit_error';
    return this.status >= 500 ? 'server_error' : 'invalid_request_error';
  }

  toEnvelope(): ErrorEnvelope {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}
