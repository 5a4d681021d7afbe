import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as runtime from '../runtime/index.ts';

// The layering, checked on the sources: schemas/ (wire shapes) ← runtime/ (the isolate engine,
// no HTTP) ← server/ and cli/, which reach the runtime through runtime/index.ts only.

const ROOT = fileURLToPath(new URL('../', import.meta.url));

function sources(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(folder, file));
}

/** Every module a file imports (static, re-exported or dynamic), as a path from the root. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)].map((match) => match[1]!);
  return specifiers.map((specifier) => relative(ROOT, resolve(dirname(join(ROOT, file)), specifier)));
}

describe('the layers', () => {
  it.each(['server', 'cli'])('%s/ reaches the runtime through runtime/index.ts only', (folder) => {
    const past = sources(folder).flatMap((file) => importsOf(file).filter((target) => target.startsWith('runtime/') && target !== 'runtime/index.ts').map((target) => `${file} → ${target}`));
    expect(past).toEqual([]);
  });

  it('runtime/ imports nothing from server/ or cli/', () => {
    const upward = sources('runtime').flatMap((file) => importsOf(file).filter((target) => /^(server|cli)\//.test(target)).map((target) => `${file} → ${target}`));
    expect(upward).toEqual([]);
  });

  it('every error class the runtime exports is declared in runtime/errors.ts, and exported from runtime/index.ts', () => {
    // (A class used only inside its module, as control flow, may stay there.)
    const elsewhere = sources('runtime')
      .filter((file) => file !== join('runtime', 'errors.ts'))
      .flatMap((file) => [...readFileSync(join(ROOT, file), 'utf8').matchAll(/export class (\w+) extends \w*Error\b/g)].map((match) => `${file}: ${match[1]}`));
    expect(elsewhere).toEqual([]);
    const declared = [...readFileSync(join(ROOT, 'runtime', 'errors.ts'), 'utf8').matchAll(/export class (\w+)/g)].map((match) => match[1]!);
    expect(declared.length).toBeGreaterThan(5);
    for (const name of declared) expect(runtime[name as keyof typeof runtime], name).toBeTypeOf('function');
  });
});
