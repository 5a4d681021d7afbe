import { Knobs, KNOB_HEADER_PREFIX } from '../../schemas/knobs.ts';
import { ApiError } from '../platform/api-error.ts';

/** Headers with the knob prefix that are not knobs. */
const OTHER_PTC_HEADERS = new Set(['x-ptc-client-checks']);

function headerName(knob: string): string {
  return KNOB_HEADER_PREFIX + knob.replaceAll('_', '-');
}

const KNOB_BY_HEADER = new Map(Object.keys(Knobs.shape).map((knob) => [headerName(knob), knob]));

/** Header text to the knob's JSON type: numbers and booleans arrive as strings. */
function headerValue(raw: string): unknown {
  if (raw === 'true' || raw === 'false') return raw === 'true';
  return /^-?\d+$/.test(raw) ? Number(raw) : raw;
}

/** The knobs a request's `x-ptc-*` headers set; an unknown or malformed one is a 400 naming it. */
export function knobsFromHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): Knobs {
  const knobs: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!name.startsWith(KNOB_HEADER_PREFIX) || OTHER_PTC_HEADERS.has(name) || value === undefined) continue;
    const knob = KNOB_BY_HEADER.get(name);
    if (!knob) {
      throw new ApiError('invalid_value', `Unknown header '${name}'. Knob headers are: ${[...KNOB_BY_HEADER.keys(), ...OTHER_PTC_HEADERS].join(', ')}.`, name);
    }
    knobs[knob] = headerValue(Array.isArray(value) ? value.join(',') : value);
  }
  const parsed = Knobs.safeParse(knobs);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = headerName(String(issue.path[0] ?? ''));
    throw new ApiError('invalid_value', `Invalid value for header '${name}': ${issue.message}.`, name);
  }
  return parsed.data;
}

/** A scenario's or model's knobs overlaid by the request's: the header wins. */
export function mergeKnobs(base: Knobs | undefined, override: Knobs): Knobs {
  return { ...base, ...override };
}

/**
 * The error a knob injects on this attempt, or undefined. Attempts are counted by the SDK's
 * `x-stainless-retry-count`, so "fail twice, then succeed" needs no state on the server.
 */
export function simulatedError(knobs: Knobs, retryCount: number): ApiError | undefined {
  if (knobs.error_status === undefined || retryCount >= (knobs.error_times ?? Number.POSITIVE_INFINITY)) return undefined;
  const headers: Record<string, string> = {};
  if (knobs.error_retry_after_ms !== undefined) {
    headers['retry-after-ms'] = String(knobs.error_retry_after_ms);
    headers['retry-after'] = String(Math.ceil(knobs.error_retry_after_ms / 1000));
  }
  if (knobs.error_should_retry !== undefined) headers['x-should-retry'] = String(knobs.error_should_retry);
  const attempt = retryCount + 1;
  const times = knobs.error_times === undefined ? 'every attempt' : `the first ${knobs.error_times} attempt(s)`;
  return new ApiError(
    'simulated_error',
    `Simulated error ${knobs.error_status} (knob error_status) on attempt ${attempt}; it fails ${times}.`,
    null,
    headers,
    knobs.error_status,
  );
}

export function retryCountOf(headers: Readonly<Record<string, string | string[] | undefined>>): number {
  const raw = headers['x-stainless-retry-count'];
  const count = Number(Array.isArray(raw) ? raw[0] : raw);
  return Number.isSafeInteger(count) && count >= 0 ? count : 0;
}

/** mulberry32: a small seeded PRNG, so jittered latencies repeat run after run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
