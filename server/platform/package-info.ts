import { readFileSync } from 'node:fs';

/**
 * The emulator's own package.json, found by walking up from this file: one level from the
 * sources (server/), two from the build (dist/server/).
 */
function readPackageJson(): { name: string; version: string } {
  for (const relative of ['../package.json', '../../package.json']) {
    try {
      const parsed = JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as { name?: unknown; version?: unknown };
      if (parsed.name === 'ptc-emulator' && typeof parsed.version === 'string') return { name: parsed.name, version: parsed.version };
    } catch {
      // Not this level: try the next.
    }
  }
  return { name: 'ptc-emulator', version: '0.0.0' };
}

export const PACKAGE = readPackageJson();

/** Where a person who reached the server by hand finds out what it is. */
export const DOCS_URL = 'https://www.npmjs.com/package/ptc-emulator';
