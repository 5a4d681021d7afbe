import OpenAI, { type APIError } from 'openai';
import { expect } from 'vitest';
import { API_ERRORS, type ApiErrorCode } from '../../schemas/error-codes.ts';

/** What an HTTP error must look like: its code, and what its message and `param` name. */
export interface ExpectedApiError {
  readonly code: ApiErrorCode;
  /**
   * The `param` the error must name; `null` when it must name none. Absent: the test does not
   * pin it (the field must still be present, as a string or null).
   */
  readonly param?: string | null;
  /** Substrings the message must contain: what was wrong and where. */
  readonly mentions?: readonly string[];
  /** The whole message, when the contract fixes it. */
  readonly message?: string;
}

export const REQUEST_ID = /^req_[0-9a-f]+$/;

/** The rejection of a promise that must reject (a fulfilled promise fails the test). */
export async function rejectionOf(promise: PromiseLike<unknown>): Promise<unknown> {
  let value: unknown;
  try {
    value = await promise;
  } catch (error) {
    return error;
  }
  throw new Error(`expected the request to fail, but it succeeded with ${JSON.stringify(value)?.slice(0, 500)}`);
}

function expectMessage(message: string, expected: ExpectedApiError): void {
  expect(message.length).toBeGreaterThan(0);
  if (expected.message !== undefined) expect(message).toBe(expected.message);
  for (const fragment of expected.mentions ?? []) expect(message).toContain(fragment);
}

/**
 * A raw HTTP answer carries OpenAI's envelope, exactly `{error: {message, type, param, code}}`,
 * the code's declared status and type, and an `x-request-id`.
 */
export async function expectErrorResponse(response: Response, expected: ExpectedApiError): Promise<void> {
  const definition = API_ERRORS[expected.code];
  const text = await response.text();
  expect(response.status, text).toBe(definition.status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(response.headers.get('x-request-id')).toMatch(REQUEST_ID);
  const body = JSON.parse(text) as { error: { message: string; type: string; param: string | null; code: string | null } };
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(body.error.code).toBe(expected.code);
  expect(body.error.type).toBe(definition.type);
  if (expected.param !== undefined) expect(body.error.param).toBe(expected.param);
  else expect(body.error.param === null || typeof body.error.param === 'string').toBe(true);
  expectMessage(body.error.message, expected);
}

type ApiErrorClass = new (...args: never[]) => APIError;

/** The SDK error class a user catches for each status the emulator answers with. */
export function sdkErrorClass(status: number): ApiErrorClass {
  switch (status) {
    case 400:
      return OpenAI.BadRequestError;
    case 401:
      return OpenAI.AuthenticationError;
    case 404:
      return OpenAI.NotFoundError;
    case 409:
      return OpenAI.ConflictError;
    case 422:
      return OpenAI.UnprocessableEntityError;
    case 429:
      return OpenAI.RateLimitError;
    case 413:
    case 415:
      // The SDK has no class of its own for these: its base APIError.
      return OpenAI.APIError;
    default:
      return OpenAI.InternalServerError;
  }
}

/** What the SDK threw is the class the status maps to, with the envelope's code, param and type. */
export function expectSdkError(error: unknown, expected: ExpectedApiError): asserts error is APIError {
  const definition = API_ERRORS[expected.code];
  expect(error).toBeInstanceOf(sdkErrorClass(definition.status));
  const apiError = error as APIError;
  expect(apiError.status).toBe(definition.status);
  expect(apiError.code).toBe(expected.code);
  expect(apiError.type).toBe(definition.type);
  if (expected.param !== undefined) expect(apiError.param).toBe(expected.param);
  expect(apiError.requestID).toMatch(REQUEST_ID);
  const body = apiError.error as { message?: unknown } | undefined;
  expect(typeof body?.message).toBe('string');
  expectMessage(String(body?.message), expected);
}

/** The `error` of the OpenAI error envelope, as a raw answer's body carries it. */
export interface EnvelopeError {
  readonly code: string;
  readonly message: string;
  readonly type: string;
  readonly param: string | null;
}

/** The `error` of a raw answer's JSON envelope. */
export function envelopeErrorOf(body: string): EnvelopeError {
  return (JSON.parse(body) as { error: EnvelopeError }).error;
}
