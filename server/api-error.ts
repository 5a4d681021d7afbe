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

  constructor(code: ApiErrorCode, message: string, param: string | null = null, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = API_ERRORS[code].status;
    this.param = param;
    this.headers = headers;
  }

  toEnvelope(): ErrorEnvelope {
    return { error: { message: this.message, type: API_ERRORS[this.code].type, param: this.param, code: this.code } };
  }
}
