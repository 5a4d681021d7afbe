/**
 * Imported first by the package's library entry points (server/index.ts, runtime/index.ts): on a
 * Node.js too old for the package, importing it throws one line saying which Node it needs,
 * before a module that cannot load there is evaluated.
 */
import { unsupportedNode } from './node-version.ts';

const unsupported = unsupportedNode();
if (unsupported !== undefined) throw new Error(`ptc-emulator: ${unsupported}`);
