import { METADATA_LIMITS } from './request.ts';

/**
 * Bounds a request body is held to as soon as it is parsed, before anything validates or copies
 * it: checking costs a handful of steps whatever the body holds, where validating what is past a
 * bound costs in proportion to it (a `metadata` of 1,000,000 keys held the server's loop for
 * seconds). For a large body this runs in the thread that parsed it (server/api/http/
 * json-body-thread.ts), so that what is refused never reaches the loop at all. The refusal is the
 * one validation would have given.
 */

/** Where a body of any route may carry `metadata` (the Responses, Conversations and Agents APIs). */
const METADATA_PATHS: readonly (readonly string[])[] = [['metadata'], ['agent', 'metadata'], ['target', 'metadata'], ['target', 'agent', 'metadata']];

/** What is past a bound: the parameter and the message of the 400 `invalid_value`. */
export interface BodyBoundViolation {
  readonly param: string;
  readonly message: string;
}

/** The first bound `body` is past, if any. */
export function bodyBoundViolation(body: unknown): BodyBoundViolation | undefined {
  for (const path of METADATA_PATHS) {
    const value = valueAt(body, path);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) continue;
    let keys = 0;
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      keys += 1;
      if (keys > METADATA_LIMITS.keys) {
        const param = path.join('.');
        return { param, message: `Invalid value for '${param}': at most ${METADATA_LIMITS.keys} keys.` };
      }
    }
  }
  return undefined;
}

function valueAt(body: unknown, path: readonly string[]): unknown {
  let value = body;
  for (const key of path) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}
