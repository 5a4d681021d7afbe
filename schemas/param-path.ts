/** A parameter's path as the API names it in errors: `input[0].content[1].text`. */
export function formatParam(path: readonly PropertyKey[]): string {
  let param = '';
  for (const segment of path) {
    if (typeof segment === 'number') param += `[${segment}]`;
    else param += param === '' ? String(segment) : `.${String(segment)}`;
  }
  return param;
}
