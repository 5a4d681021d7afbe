import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { apiErrorTable, configurationTable, fixedLimitsTable, programErrorTable, steerErrorTable } from '../scripts/doc-tables.ts';

const read = (path: string): string => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');

// Each table is generated from its declaration (`npm run docs:tables`); the docs must carry it verbatim.
it.each([
  ['README.md', 'the configuration table', configurationTable],
  ['README.md', 'the table of fixed limits', fixedLimitsTable],
  ['docs/ERRORS.md', 'the HTTP error table', apiErrorTable],
  ['docs/ERRORS.md', 'the program failure table', programErrorTable],
  ['docs/ERRORS.md', 'the steering failure table', steerErrorTable],
])('%s carries %s as declared in the code', (path, _, table) => {
  expect(read(path)).toContain(table());
});
