/**
 * The autopilot's final message: what the program or the calls returned, stated in a sentence
 * ("get_inventory returned sku sku_123 and available_units 42; get_demand returned …"), as a
 * model answers once its tools have. Values are flattened to `path value` pairs, a few per
 * tool, long strings cut; the work is bounded by the result's size, which the output limit bounds.
 */

const MAX_PAIRS_PER_TOOL = 12;
const MAX_VALUE_CHARS = 120;
const MAX_MESSAGE_CHARS = 4_000;

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function shown(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS)}…` : text;
}

/**
 * Leaf values as `path value`, an object's plain values before what it nests (so that a `total`
 * beside a long list is stated), at most `limit`; `more` counts the leaves left out.
 */
function pairs(value: unknown, path: string, out: string[], limit: number, more: { count: number }): void {
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value) ? value.map((item, index) => [String(index), item] as const) : Object.entries(value);
    if (entries.length === 0) return leaf(`${path || 'value'} ${Array.isArray(value) ? '[]' : '{}'}`, out, limit, more);
    const nests = ([, inner]: readonly [string, unknown]): boolean => inner !== null && typeof inner === 'object';
    for (const [key, inner] of [...entries.filter((entry) => !nests(entry)), ...entries.filter(nests)])
      pairs(inner, path ? `${path}.${key}` : key, out, limit, more);
    return;
  }
  leaf(path ? `${path} ${shown(value)}` : shown(value), out, limit, more);
}

function leaf(text: string, out: string[], limit: number, more: { count: number }): void {
  if (out.length < limit) out.push(text);
  else more.count += 1;
}

/** The pairs of a value, with a last "N more" when some were left out. */
function stated(value: unknown): string[] {
  const out: string[] = [];
  const more = { count: 0 };
  pairs(value, '', out, MAX_PAIRS_PER_TOOL, more);
  return more.count > 0 ? [...out, `${more.count} more value${more.count === 1 ? '' : 's'}`] : out;
}

function listed(parts: readonly string[]): string {
  if (parts.length <= 1) return parts[0] ?? '';
  return `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`;
}

/** One tool's clause: "get_demand returned requested_units 31", or "get_demand failed: …". */
function clause(tool: string, value: unknown): string {
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && 'error' in value && Object.keys(value).length === 1) {
    return `${tool} failed: ${shown((value as { error: unknown }).error)}`;
  }
  return `${tool} returned ${listed(stated(value))}`;
}

function capped(text: string): string {
  return text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS)}… (${text.length - MAX_MESSAGE_CHARS} more characters)` : text;
}

/** The sentence for results keyed by tool (the autopilot's programs text such an object), or any other value. */
export function resultSentence(result: unknown): string {
  if (result !== null && typeof result === 'object' && !Array.isArray(result) && Object.keys(result).length > 0) {
    return capped(
      `${Object.entries(result)
        .map(([tool, value]) => clause(tool, value))
        .join('; ')}.`,
    );
  }
  return capped(`The result is ${listed(stated(result))}.`);
}

/** The final message after a program: its result, or why it stopped. */
export function programSentence(program: { readonly status: 'completed' | 'incomplete'; readonly result: string }): string {
  const value = parsed(program.result.slice(0, 4 * 2 ** 20));
  if (program.status === 'incomplete') {
    const error = (value as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    return error && typeof error === 'object'
      ? capped(`The program stopped before it finished (${String(error.code)}): ${String(error.message)}.`)
      : capped(`The program stopped before it finished: ${shown(value)}.`);
  }
  if (program.result === '') return 'The program finished without output.';
  return resultSentence(value);
}

/** The final message after direct calls: each tool's output. */
export function callsSentence(calls: readonly { readonly name: string; readonly output: string }[]): string {
  if (calls.length === 0) return 'Nothing was returned.';
  return capped(`${calls.map((call) => clause(call.name, parsed(call.output.slice(0, 2 ** 20)))).join('; ')}.`);
}
