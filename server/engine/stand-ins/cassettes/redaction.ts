/**
 * What a cassette never keeps: strings that look like credentials. Every string written to a
 * cassette (the key's messages, code, arguments, results, messages) goes through `redact`, and
 * so does the key a replayed request is matched with, so that a redacted message still matches.
 */

export const REDACTED = '[REDACTED]';

/** Built-in rules: what API keys, bearer tokens and JWTs commonly look like (docs/CASSETTES.md). */
const BUILT_IN_RULES: readonly RegExp[] = [
  // OpenAI-style keys (sk-..., sk-proj-...), and other providers' prefixed keys.
  /\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}/g,
  // A bearer token wherever it appears in text.
  /\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/gi,
  // JSON Web Tokens.
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
  // GitHub, Slack and AWS access keys.
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g,
  /\bxox[abposr]-[A-Za-z0-9-]{10,}/g,
  /\bAKIA[0-9A-Z]{16}\b/g,
];

export class Redactor {
  readonly #rules: readonly RegExp[];
  readonly #literals: readonly string[];

  /** `pattern`: PTC_CASSETTE_REDACT; `literals`: values known to be secret (the upstream key). */
  constructor(pattern: string | undefined, literals: readonly (string | undefined)[] = []) {
    this.#rules = pattern === undefined ? BUILT_IN_RULES : [...BUILT_IN_RULES, new RegExp(pattern, 'g')];
    this.#literals = literals.filter((literal): literal is string => literal !== undefined && literal.length >= 4);
  }

  redact(text: string): string {
    let result = text;
    for (const literal of this.#literals) result = result.replaceAll(literal, REDACTED);
    for (const rule of this.#rules) {
      result = result.replace(rule, REDACTED);
    }
    return result;
  }

  /** Every string of a JSON value redacted, object keys included. */
  redactValue<T>(value: T): T {
    if (typeof value === 'string') return this.redact(value) as T;
    if (Array.isArray(value)) return value.map((element: unknown) => this.redactValue(element)) as T;
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([name, element]) => [this.redact(name), this.redactValue(element)])) as T;
    }
    return value;
  }
}
