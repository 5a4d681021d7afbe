import { z } from 'zod';
import { askedWaitMs } from '../../server/platform/retry-after.ts';
import { oneLine } from './settled.ts';
import { EmulatorError } from '../../runtime/index.ts';

/**
 * The evaluation's client: `POST /responses` and nothing else, retried as the openai SDK retries
 * (429, 5xx and lost connections, with backoff, honouring `retry-after`), so that every retry is
 * counted. Hand-written rather than the SDK because the count is the point and the package does
 * not ship the SDK.
 */

/** Retries of one request before its failure is the run's. */
const MAX_RETRIES = 3;
const FIRST_BACKOFF_MS = 250;
/** A `retry-after` longer than this is not waited out: the run fails instead. */
const MAX_RETRY_AFTER_MS = 10_000;
/** One attempt that takes longer than this has failed (and is tried again, as the SDK does). */
const REQUEST_TIMEOUT_MS = 60_000;

const Count = z.number().finite().nonnegative();
/** What eval reads of a response; anything else answering 200 is not a Responses API. */
const Body = z.looseObject({
  id: z.string().min(1),
  output: z.array(z.looseObject({ type: z.string() })),
  usage: z.looseObject({ input_tokens: Count, output_tokens: Count, total_tokens: Count }).nullish(),
});

export interface ResponseItem {
  readonly type: string;
  readonly [field: string]: unknown;
}

export interface ResponseBody {
  readonly id: string;
  readonly output: readonly ResponseItem[];
  readonly usage?: { readonly input_tokens: number; readonly output_tokens: number; readonly total_tokens: number } | null;
}

export class EvalRequestError extends EmulatorError {
  override readonly name = 'EvalRequestError';
  readonly code = 'PTC_ERR_EVAL_REQUEST';
}

export class ResponsesClient {
  readonly #url: string;
  readonly #apiKey: string;
  /** Requests sent again after a 429, a 5xx or a lost connection. */
  retries = 0;

  constructor(baseURL: string, apiKey: string) {
    this.#url = `${baseURL.replace(/\/+$/, '')}/responses`;
    this.#apiKey = apiKey;
  }

  /** A base URL fetch can use: http(s), absolute. */
  static check(baseURL: string): string | undefined {
    let url: URL;
    try {
      url = new URL(baseURL);
    } catch {
      return `--base-url ${baseURL} is not a URL: give the API's base, such as http://127.0.0.1:8787/v1`;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return `--base-url ${baseURL} is not http(s)`;
    return undefined;
  }

  async create(body: Readonly<Record<string, unknown>>): Promise<ResponseBody> {
    for (let attempt = 0; ; attempt++) {
      let status: number;
      let text: string;
      let retryAfterMs: number | undefined;
      try {
        const reply = await fetch(this.#url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${this.#apiKey}` },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        status = reply.status;
        text = await reply.text();
        retryAfterMs = askedWaitMs(reply.headers);
      } catch (error) {
        // fetch says "fetch failed"; the reason (ECONNREFUSED, a timeout) is its cause.
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        const why = cause?.code ?? cause?.message ?? (error as Error).message;
        if (attempt >= MAX_RETRIES) throw new EvalRequestError(`POST ${this.#url} failed ${attempt + 1} times: ${why}`);
        this.retries += 1;
        await sleep(FIRST_BACKOFF_MS * 2 ** attempt);
        continue;
      }
      if (status === 200) return responseOf(text, this.#url);
      const retryable = status === 429 || status >= 500;
      if (retryable && (retryAfterMs ?? 0) > MAX_RETRY_AFTER_MS) {
        throw new EvalRequestError(
          `POST ${this.#url} answered ${status} asking to retry after ${Math.round(retryAfterMs! / 1000)} s, longer than the ${MAX_RETRY_AFTER_MS / 1000} s eval waits: ${errorMessage(text)}`,
        );
      }
      if (!retryable || attempt >= MAX_RETRIES) {
        const hint = status === 404 && !/\/v1\/responses$/.test(this.#url) ? ' (does the base URL end in /v1?)' : '';
        throw new EvalRequestError(`POST ${this.#url} answered ${status}${hint}: ${errorMessage(text)}`);
      }
      this.retries += 1;
      await sleep(retryAfterMs ?? FIRST_BACKOFF_MS * 2 ** attempt);
    }
  }
}

/** The body of a 200, read as a response; one that is not is the run's failure, named. */
function responseOf(text: string, url: string): ResponseBody {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new EvalRequestError(`POST ${url} answered 200 with a body that is not JSON: ${oneLine(text)}`);
  }
  const parsed = Body.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new EvalRequestError(`POST ${url} answered 200 with something that is not a response: ${issue.path.join('.') || '(body)'}: ${issue.message}`);
  }
  return parsed.data as ResponseBody;
}

/** The OpenAI error envelope's message and param, or the body's start. */
function errorMessage(text: string): string {
  try {
    const { error } = JSON.parse(text) as { error?: { message?: string; param?: string | null } };
    if (error?.message) return error.param ? `${error.message} (${error.param})` : error.message;
  } catch {
    // Not JSON: said as it is, below.
  }
  return oneLine(text);
}

function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}
