/**
 * The markdown tables the docs carry, generated from the single declarations of settings,
 * limits and error codes. `npm run docs:tables` prints them; `npm run docs:tables -- --write`
 * puts each in place of its copy in README.md and docs/ERRORS.md. test/docs.test.ts fails when
 * a doc's copy differs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { API_ERRORS, PROGRAM_ERRORS, STEER_ERRORS } from '../schemas/error-codes.ts';
import { FIXED_LIMITS } from '../schemas/fixed-limits.ts';
import { settingFlag, settingRows } from '../server/platform/config.ts';

export function configurationTable(): string {
  const rows = settingRows().map(
    (row) => `| \`${row.env}\` | \`${settingFlag(row.env)}\` | ${row.default === '' ? '(none)' : `\`${row.default}\``} | ${row.description} |`,
  );
  return ['| variable | flag of `serve` | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

export function fixedLimitsTable(): string {
  const rows = Object.entries(FIXED_LIMITS).map(([name, limit]) => `| \`${name}\` | ${limit.value.toLocaleString('en-US')} | ${limit.description} |`);
  return ['| fixed limit | value | what it bounds |', '|---|---|---|', ...rows].join('\n');
}

export function apiErrorTable(): string {
  const rows = Object.entries(API_ERRORS).map(([code, error]) => `| \`${code}\` | ${error.status} | \`${error.type}\` | ${error.description} |`);
  return ['| code | status | type | when |', '|---|---|---|---|', ...rows].join('\n');
}

export function programErrorTable(): string {
  const rows = Object.entries(PROGRAM_ERRORS).map(([code, error]) => `| \`${code}\` | ${error.description} |`);
  return ['| code | when |', '|---|---|', ...rows].join('\n');
}

export function steerErrorTable(): string {
  const rows = Object.entries(STEER_ERRORS).map(([code, error]) => `| \`${code}\` | ${error.description} |`);
  return ['| steering code | when |', '|---|---|', ...rows].join('\n');
}

/** Replaces the table in `path` that starts with the same header line as `table`. */
function writeInto(path: string, table: string): void {
  const url = new URL(`../${path}`, import.meta.url);
  const lines = readFileSync(url, 'utf8').split('\n');
  const start = lines.indexOf(table.split('\n')[0]!);
  if (start < 0) throw new Error(`${path} has no table headed ${table.split('\n')[0]}`);
  let end = start;
  while (end < lines.length && lines[end]!.startsWith('|')) end++;
  lines.splice(start, end - start, ...table.split('\n'));
  writeFileSync(url, lines.join('\n'));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--write')) {
    writeInto('README.md', configurationTable());
    writeInto('README.md', fixedLimitsTable());
    writeInto('docs/ERRORS.md', apiErrorTable());
    writeInto('docs/ERRORS.md', programErrorTable());
    writeInto('docs/ERRORS.md', steerErrorTable());
  } else {
    process.stdout.write(`${configurationTable()}\n\n${fixedLimitsTable()}\n\n${apiErrorTable()}\n\n${programErrorTable()}\n\n${steerErrorTable()}\n`);
  }
}
