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
/** One request that takes longer than this has failed. */
const REQUEST_TIMEOUT_MS = 120_000;

export interface ResponseItem {
  readonly type: string;
  readonly [field: string]: unknown;
}

export interface ResponseBody {
  readonly id: string;
  readonly output: readonly ResponseItem[];
  readonly usage?: { readonly input_tokens: number; readonly output_tokens: number; readonly total_tokens: number };
}

export class EvalRequestError extends Error {}

export class ResponsesClient {
  readonly #url: string;
  readonly #apiKey: string;
  /** Requests sent again after a 429, a 5xx or a lost connection. */
  retries = 0;

  constructor(baseURL: string, apiKey: string) {
    this.#url = `${baseURL.replace(/\/+$/, '')}/responses`;
    this.#apiKey = apiKey;
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
        retryAfterMs = retryAfter(reply.headers);
      } catch (error) {
        if (attempt >= MAX_RETRIES) throw new EvalRequestError(`POST ${this.#url} failed: ${(error as Error).message}`);
        this.retries += 1;
        await sleep(FIRST_BACKOFF_MS * 2 ** attempt);
        continue;
      }
      if (status === 200) return JSON.parse(text) as ResponseBody;
      const retryable = status === 429 || status >= 500;
      if (!retryable || attempt >= MAX_RETRIES || (retryAfterMs ?? 0) > MAX_RETRY_AFTER_MS) {
        throw new EvalRequestError(`POST ${this.#url} answered ${status}: ${errorMessage(text)}`);
      }
      this.retries += 1;
      await sleep(retryAfterMs ?? FIRST_BACKOFF_MS * 2 ** attempt);
    }
  }
}

function retryAfter(headers: Headers): number | undefined {
  const ms = Number(headers.get('retry-after-ms'));
  if (Number.isFinite(ms) && ms > 0) return ms;
  const seconds = Number(headers.get('retry-after'));
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined;
}

/** The OpenAI error envelope's message and param, or the body's start. */
function errorMessage(text: string): string {
  try {
    const { error } = JSON.parse(text) as { error?: { message?: string; param?: string | null } };
    if (error?.message) return error.param ? `${error.message} (${error.param})` : error.message;
  } catch {
    // Not JSON: said as it is, below.
  }
  return text.slice(0, 300);
}

function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}
