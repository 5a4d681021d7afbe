import type { z } from 'zod';
import { ApiError } from './api-error.ts';
import { formatParam } from '../../schemas/param-path.ts';
import { valueAt } from './value-at.ts';

export { formatParam };

function describeJsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return !Number.isFinite(value) ? 'a number out of range' : Number.isInteger(value) ? 'an integer' : 'a number';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

/** Follows a union's failed branches to the issue that the value's own `type` selects. */
function deepestIssue(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code === 'invalid_union' && 'errors' in issue && issue.errors.length > 0) {
    const candidates = issue.errors.map((branch) => branch[0]).filter((inner): inner is z.core.$ZodIssue => inner !== undefined);
    const best = candidates.sort((a, b) => b.path.length - a.path.length)[0];
    if (best) return deepestIssue({ ...best, path: [...issue.path, ...best.path] });
  }
  return issue;
}

/** True when a union failed because the value's JSON type fits none of its branches. */
function everyBranchInvalidType(issue: z.core.$ZodIssue): boolean {
  return (
    issue.code === 'invalid_union' &&
    issue.errors.length > 0 &&
    issue.errors.every((branch) => branch.length === 1 && branch[0]?.code === 'invalid_type' && branch[0].path.length === 0)
  );
}

/** `a string` or `one of string, array`, for a type issue or a union of them. */
function expectedTypes(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') return issue.expected;
  if (issue.code !== 'invalid_union') return 'another type';
  const types = [...new Set(issue.errors.map((branch) => (branch[0]?.code === 'invalid_type' ? branch[0].expected : '')).filter(Boolean))];
  return types.length === 1 ? types[0]! : `one of ${types.join(', ')}`;
}

/** Turns the first zod issue into the 400 an OpenAI client expects, naming the parameter. */
export function toApiError(error: z.ZodError, body: unknown): ApiError {
  const first = error.issues[0];
  if (!first) return new ApiError('invalid_value', 'Invalid request');
  const issue = deepestIssue(first);
  const path = issue.path;
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    const param = formatParam([...path, key]);
    return new ApiError('unknown_parameter', `Unknown parameter: '${param}'.`, param);
  }
  const param = formatParam(path);
  const value = valueAt(body, path);
  if (path.length === 0) return new ApiError('invalid_json', 'The request body must be a JSON object.');
  if (issue.code === 'invalid_type' || (first.code === 'invalid_union' && everyBranchInvalidType(first))) {
    if (value === undefined) return new ApiError('missing_required_parameter', `Missing required parameter: '${param}'.`, param);
    // The types expected where the value is: the deepest issue's when it lies below a union
    // whose branches failed (`input[0].content` inside `input`), else the union's own.
    const expected = issue.path.length > first.path.length ? expectedTypes(issue) : expectedTypes(first);
    return new ApiError('invalid_type', `Invalid type for '${param}': expected ${expected}, but got ${describeJsonType(value)} instead.`, param);
  }
  if (value === undefined && (issue.code === 'invalid_value' || issue.code === 'invalid_union')) {
    return new ApiError('missing_required_parameter', `Missing required parameter: '${param}'.`, param);
  }
  if (issue.code === 'invalid_value' || (issue.code === 'invalid_union' && path[path.length - 1] === 'type')) {
    const allowed = 'values' in issue ? ` Supported values are: ${issue.values.map((v) => `'${String(v)}'`).join(', ')}.` : '';
    return new ApiError('invalid_value', `Invalid value for '${param}': ${JSON.stringify(value)}.${allowed}`, param);
  }
  return new ApiError('invalid_value', `Invalid value for '${param}': ${issue.message}.`, param);
}

export function parseOrThrow<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw toApiError(parsed.error, body);
  return parsed.data;
}
