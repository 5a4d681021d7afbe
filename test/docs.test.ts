import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LIMIT_DEFINITIONS } from '../runtime/limits.ts';
import { API_ERRORS, PROGRAM_ERRORS } from '../schemas/error-codes.ts';
import { SETTINGS } from '../server/config.ts';

const read = (path: string): string => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');
const errorsPage = read('docs/ERRORS.md');
const readme = read('README.md');

/** The cells of the markdown table row whose first cell is `code`. */
function row(page: string, code: string): string[] | undefined {
  const line = page.split('\n').find((candidate) => candidate.startsWith(`| \`${code}\` |`));
  return line?.split('|').slice(1, -1).map((cell) => cell.trim());
}

describe('docs/ERRORS.md documents every error code as declared', () => {
  it.each(Object.entries(API_ERRORS))('HTTP error %s', (code, definition) => {
    expect(row(errorsPage, code)?.slice(1, 3)).toEqual([String(definition.status), `\`${definition.type}\``]);
  });

  it.each(Object.keys(PROGRAM_ERRORS))('program failure %s', (code) => {
    expect(row(errorsPage, code)).toBeDefined();
  });

  it('documents no code that is not declared', () => {
    const declared = new Set([...Object.keys(API_ERRORS), ...Object.keys(PROGRAM_ERRORS)]);
    const documented = [...errorsPage.matchAll(/^\| `([a-z_]+)` \|/gm)].map((match) => match[1]);
    expect(documented.filter((code) => !declared.has(code!))).toEqual([]);
  });
});

describe("the README's configuration table matches the code", () => {
  it.each(Object.entries(SETTINGS))('%s with its default', (name, setting) => {
    expect(row(readme, name)?.[1]).toBe(setting.default === '' ? '(none)' : `\`${setting.default}\``);
  });

  it.each(Object.values(LIMIT_DEFINITIONS).map((limit) => [limit.env, limit] as const))('limit %s with its default and code', (env, limit) => {
    const cells = row(readme, env);
    expect(cells?.[1]).toBe(`\`${limit.default}\``);
    expect(cells?.[2]).toContain(`\`${limit.code}\``);
  });
});
