/**
 * The markdown tables the docs carry, generated from the single declarations of settings,
 * limits and error codes. `npm run docs:tables` prints them to paste into README.md and
 * docs/ERRORS.md; test/docs.test.ts fails when a doc's copy differs.
 */
import { fileURLToPath } from 'node:url';
import { API_ERRORS, PROGRAM_ERRORS } from '../schemas/error-codes.ts';
import { settingFlag, settingRows } from '../server/config.ts';

export function configurationTable(): string {
  const rows = settingRows().map(
    (row) => `| \`${row.env}\` | \`${settingFlag(row.env)}\` | ${row.default === '' ? '(none)' : `\`${row.default}\``} | ${row.description} |`,
  );
  return ['| variable | flag of `serve` | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

export function apiErrorTable(): string {
  const rows = Object.entries(API_ERRORS).map(([code, error]) => `| \`${code}\` | ${error.status} | \`${error.type}\` | ${error.description} |`);
  return ['| code | status | type | when |', '|---|---|---|---|', ...rows].join('\n');
}

export function programErrorTable(): string {
  const rows = Object.entries(PROGRAM_ERRORS).map(([code, error]) => `| \`${code}\` | ${error.description} |`);
  return ['| code | when |', '|---|---|', ...rows].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(`${configurationTable()}\n\n${apiErrorTable()}\n\n${programErrorTable()}\n`);
}
