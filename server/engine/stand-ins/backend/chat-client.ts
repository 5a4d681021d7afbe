import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from '../../../platform/api-error.ts';
import type { ChatCompletion, ChatRequest } from './chat-wire.ts';
import { askedWaitMs } from '../../../platform/retry-after.ts';

export interface BackendConnection {
  /** The backend's API base, e.g. `http://127.0.0.1:8080/v1`: requests go to `{url}/chat/completions`. */
  readonly url: string;
  /** Sent as `Authorization: Bearer`; never logged, stored or put in a message. */
  readonly apiKey?: string;
  /** How long one try may take, connecting included. */
  readonly timeoutMs: number;
  /** Tries after the first for a 429, a 5xx or a failed connection. */
  readonly retries: number;
}

/** The first wait before a retry, doubled each time, when the backend does not say (`retry-after`). */
const FIRST_BACKOFF_MS = 250;
/** The longest wait before a retry, whatever the backend's `retry-after` asks. */
const MAX_BACKOFF_MS = 10_000;
/** What of a backend's error body a message quotes. */
const MAX_QUOTED_CHARS = 500;

class Retryable extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly waitMs: number | undefined,
    readonly retryAfter: string | undefined,
  ) {
    super(message);
  }
}

/** The backend's own words for an error: `error.message` of an OpenAI envelope, else the body's start. */
function backendMessage(body: string, apiKey: string | undefined): string {
  let text = body;
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    const message = typeof parsed.error === 'string' ? parsed.error : (parsed.error?.message ?? parsed.message);
    if (typeof message === 'string') text = message;
  } catch {
    // Not JSON: quote it as it is.
  }
  // A backend may echo what it was sent; the key is never passed on.
  if (apiKey) text = text.replaceAll(apiKey, '[redacted]');
  text = text.trim();
  return text.length > MAX_QUOTED_CHARS ? `${text.slice(0, MAX_QUOTED_CHARS)}…` : text;
}

/**
 * POSTs one chat completion: a 429, a 5xx or a failed connection is tried again up to
 * `retries` times (waiting as the backend asks, or 250 ms doubling, at most 10 s); a try that
 * outlasts `timeoutMs` ends the request. Failures are ApiErrors a client can act on
 * (model_backend_error, model_backend_timeout, model_backend_rate_limited).
 */
export async function createChatCompletion(connection: BackendConnection, request: ChatRequest): Promise<ChatCompletion> {
  const endpoint = `${connection.url.replace(/\/+$/, '')}/chat/completions`;
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (connection.apiKey) headers.authorization = `Bearer ${connection.apiKey}`;
  const body = JSON.stringify(request);
  let last: Retryable | undefined;
  for (let attempt = 0; attempt <= connection.retries; attempt++) {
    if (last) await sleep(Math.min(MAX_BACKOFF_MS, last.waitMs ?? FIRST_BACKOFF_MS * 2 ** (attempt - 1)));
    try {
      return await tryOnce(endpoint, headers, body, connection);
    } catch (error) {
      if (!(error instanceof Retryable)) throw error;
      last = error;
    }
  }
  const tries = `${connection.retries + 1} ${connection.retries === 0 ? 'try' : 'tries'}`;
  if (last!.status === 429) {
    throw new ApiError(
      'model_backend_rate_limited',
      `The model backend is rate limiting (429 to ${tries}): ${last!.message}`,
      null,
      last!.retryAfter ? { 'retry-after': last!.retryAfter } : {},
    );
  }
  throw new ApiError('model_backend_error', `The model backend failed ${tries}: ${last!.message}`);
}

async function tryOnce(endpoint: string, headers: Record<string, string>, body: string, connection: BackendConnection): Promise<ChatCompletion> {
  const signal = AbortSignal.timeout(connection.timeoutMs);
  let text: string;
  let response: Response;
  try {
    response = await fetch(endpoint, { method: 'POST', headers, body, signal });
    text = await response.text();
  } catch (error) {
    if (signal.aborted)
      throw new ApiError('model_backend_timeout', `The model backend did not answer within ${connection.timeoutMs} ms (PTC_MODEL_BACKEND_TIMEOUT_MS).`);
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new Retryable(`cannot reach ${endpoint} (${cause?.code ?? cause?.message ?? (error as Error).message})`, undefined, undefined, undefined);
  }
  if (response.status === 429 || response.status >= 500) {
    const retryAfter = response.headers.get('retry-after') ?? undefined;
    throw new Retryable(`${response.status} ${backendMessage(text, connection.apiKey)}`.trim(), response.status, askedWaitMs(response.headers), retryAfter);
  }
  if (!response.ok) throw new ApiError('model_backend_error', `The model backend answered ${response.status}: ${backendMessage(text, connection.apiKey)}`);
  let completion: ChatCompletion;
  try {
    completion = JSON.parse(text) as ChatCompletion;
  } catch {
    throw new ApiError('model_backend_error', `The model backend's answer is not JSON: ${backendMessage(text, connection.apiKey)}`);
  }
  if (typeof completion !== 'object' || completion === null || !Array.isArray(completion.choices) || completion.choices.length === 0) {
    throw new ApiError('model_backend_error', "The model backend's answer is not a chat completion: it has no choices.");
  }
  return completion;
}
