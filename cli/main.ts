#!/usr/bin/env node
/**
 * The `ptc-emulator` command's entry. It checks the Node.js version before any other module of
 * the package loads: on an older Node one would fail to load with a stack (node:sqlite, the
 * isolates' native module), where the user needs one line saying which Node to use. Then it runs
 * the command (cli/commands.ts).
 */
import { USAGE_EXIT_CODE } from './exit-codes.ts';
import { unsupportedNode } from '../runtime/node-version.ts';

const unsupported = unsupportedNode();
if (unsupported !== undefined) {
  process.stderr.write(`ptc-emulator: ${unsupported}\n`);
  process.exit(USAGE_EXIT_CODE);
}
await import('./commands.ts');
