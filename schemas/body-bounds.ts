import type { ApiErrorCode } from './error-codes.ts';
import { FIXED_LIMITS } from './fixed-limits.ts';
import { formatParam } from './param-path.ts';
import { METADATA_LIMITS } from './request.ts';

/**
 * Bounds a request body is held to as soon as it is parsed, before anything validates or copies
 * it: checking costs one walk of the value, where what is past a bound costs the server's loop
 * in proportion to it (a `metadata` of 1,000,000 keys held the loop for seconds, and merely
 * receiving a parsed value from the parsing thread costs the loop 100–200 ns per value). For a
 * large body this runs in the thread that parsed it (server/api/http/json-body-thread.ts), so
 * that what is refused never reaches the loop at all. Each refusal is the one validation would
 * have given, or the hosted API's where it has one (`string_above_max_length`).
 */

/** Where a body of any route may carry `metadata` (the Responses, Conversations and Agents APIs). */
const METADATA_PATHS: readonly (readonly string[])[] = [['metadata'], ['agent', 'metadata'], ['target', 'metadata'], ['target', 'agent', 'metadata']];

/** The bounds that depend on the route a body came to. */
export interface RouteBounds {
  /** Items the body's `input` may carry (`PTC_MAX_INPUT_ITEMS`), on the routes whose `input` is a Responses input. */
  readonly inputItems?: number;
}

/** The bounds of settings, and those of the route. */
export interface BodyBounds extends RouteBounds {
  /** JSON values the body may hold in all (`PTC_MAX_BODY_VALUES`). */
  readonly values: number;
}

/** What is past a bound: the error the request is answered with. */
export interface BodyBoundViolation {
  readonly code: Extract<ApiErrorCode, 'invalid_value' | 'too_many_input_items' | 'string_above_max_length' | 'too_many_values'>;
  readonly param: string;
  readonly message: string;
}

/** The first bound `body` is past, if any. */
export function bodyBoundViolation(body: unknown, bounds: BodyBounds): BodyBoundViolation | undefined {
  return (
    metadataViolation(body) ??
    (bounds.inputItems === undefined ? undefined : inputItemsViolation(body, bounds.inputItems)) ??
    valuesViolation(body, bounds.values)
  );
}

function metadataViolation(body: unknown): BodyBoundViolation | undefined {
  for (const path of METADATA_PATHS) {
    const value = valueAt(body, path);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) continue;
    let keys = 0;
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      keys += 1;
      if (keys > METADATA_LIMITS.keys) {
        const param = path.join('.');
        return { code: 'invalid_value', param, message: `Invalid value for '${param}': at most ${METADATA_LIMITS.keys} keys.` };
      }
    }
  }
  return undefined;
}

/** A Responses `input` of more than `max` items: each costs the server's loop (checks, history, usage). */
function inputItemsViolation(body: unknown, max: number): BodyBoundViolation | undefined {
  const input = valueAt(body, ['input']);
  if (!Array.isArray(input) || input.length <= max) return undefined;
  return {
    code: 'too_many_input_items',
    param: 'input',
    message: `input has ${input.length} items; a request may carry at most ${max} (PTC_MAX_INPUT_ITEMS). Continue a long conversation with previous_response_id.`,
  };
}

/** Counts the body's values and measures its strings, stopping at the first past a bound. */
function valuesViolation(body: unknown, maxValues: number): BodyBoundViolation | undefined {
  const path: (string | number)[] = [];
  let values = 0;
  const visit = (value: unknown): BodyBoundViolation | undefined => {
    values += 1;
    if (values > maxValues) {
      // Named by the member of the body that holds them: the one being walked when the count passed the bound.
      const param = String(path[0] ?? '');
      return {
        code: 'too_many_values',
        param,
        message: `The request body holds more than ${maxValues} JSON values (PTC_MAX_BODY_VALUES)${param ? `, past it within '${param}'` : ''}.`,
      };
    }
    if (typeof value === 'string') {
      if (value.length <= FIXED_LIMITS.stringChars.value) return undefined;
      const param = formatParam(path);
      return {
        code: 'string_above_max_length',
        param,
        message: `Invalid '${param}': string too long. Expected a string with maximum length ${FIXED_LIMITS.stringChars.value}, but got a string with length ${value.length} instead.`,
      };
    }
    if (value === null || typeof value !== 'object') return undefined;
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index += 1) {
        path.push(index);
        const past = visit(value[index]);
        path.pop();
        if (past) return past;
      }
      return undefined;
    }
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      path.push(key);
      const past = visit((value as Record<string, unknown>)[key]);
      path.pop();
      if (past) return past;
    }
    return undefined;
  };
  // The recursion is as deep as the body nests, which is bounded (MAX_JSON_DEPTH) before this runs.
  return visit(body);
}

function valueAt(body: unknown, path: readonly string[]): unknown {
  let value = body;
  for (const key of path) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}
