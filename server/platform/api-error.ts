import { API_ERRORS, type ApiErrorCode, type ApiErrorType } from '../../schemas/error-codes.ts';
import type { ErrorEnvelope, ResponseObject } from '../../schemas/response.ts';

/** `Response.error` of a failed Response. */
export type ResponseError = NonNullable<ResponseObject['error']>;

/** What an error's HTTP status alone says of it. */
export interface StatusClass {
  /** The OpenAI `type` of an HTTP error with this status. */
  readonly type: ApiErrorType;
  /** The `Response.error.code` of a failed background Response, which has no status and a fixed set of codes. */
  readonly responseCode: ResponseError['code'];
}

const RATE_LIMITED: StatusClass = { type: 'rate_limit_error', responseCode: 'rate_limit_exceeded' };
const SERVER_FAULT: StatusClass = { type: 'server_error', responseCode: 'server_error' };
const CLIENT_MISTAKE: StatusClass = { type: 'invalid_request_error', responseCode: 'invalid_prompt' };

/**
 * The one status → error mapping, for the errors that are not what their code declares: a
 * simulated error with the knob's status, a request Node's parser refused with 431, and a
 * background response that failed (its error becomes the Response's `error.code`).
 */
export function statusClassOf(status: number): StatusClass {
  if (status === 429) return RATE_LIMITED;
  return status >= 500 ? SERVER_FAULT : CLIENT_MISTAKE;
}

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

  /** The OpenAI `type`: the declared one, or for an overridden status the one that status implies. */
  get type(): ApiErrorType {
    if (this.status === API_ERRORS[this.code].status) return API_ERRORS[this.code].type;
    return statusClassOf(this.status).type;
  }

  toEnvelope(): ErrorEnvelope {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }

  /** This error as a failed background Response carries it: the status's code, with ours in the message. */
  toResponseError(): ResponseError {
    return { code: statusClassOf(this.status).responseCode, message: `${this.code}: ${this.message}` };
  }
}
