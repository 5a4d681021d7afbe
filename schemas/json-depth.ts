/**
 * The deepest nesting a request body, or a tool call's arguments, may have: far beyond any
 * real schema, item or argument, far below what overflows the stack of code that recurses.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * How deep a parsed JSON value nests, counted without recursion (a hostile body nested 100,000
 * levels deep must not overflow the stack that measures it); stops counting past `limit`.
 */
export function jsonDepthExceeds(value: unknown, limit: number): boolean {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 1 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(current) ? current : Object.values(current)) {
      if (child !== null && typeof child === 'object') stack.push({ value: child, depth: depth + 1 });
    }
  }
  return false;
}
