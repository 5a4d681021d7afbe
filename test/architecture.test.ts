import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as runtime from '../runtime/index.ts';
import { MCP_APPROVAL, TOOL_KINDS } from '../server/engine/conversation/tool-kinds.ts';

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
    const past = sources(folder).flatMap((file) =>
      importsOf(file)
        .filter((target) => target.startsWith('runtime/') && target !== 'runtime/index.ts')
        // The CLI's entry checks the Node.js version before the runtime (and its native module) loads.
        .filter((target) => !(file === 'cli/main.ts' && target === 'runtime/node-version.ts'))
        .map((target) => `${file} → ${target}`),
    );
    expect(past).toEqual([]);
  });

  // server/ in three layers: platform/ (stores, MCP client, config, ids, errors, sealing keys)
  // ← engine/ (conversations, client-loop checks, program steps, stand-ins) ← api/ (the front
  // doors, and what they share: http/, streaming/, journal/); app.ts composes them.
  const FRONT_DOORS = ['responses', 'agents', 'conversations', 'cassettes', 'inspector', 'explore', 'service', 'webhooks'].map((door) => `server/api/${door}/`);
  const violations = (from: string, forbidden: RegExp): string[] =>
    sources('server')
      .filter((file) => file.startsWith(from))
      .flatMap((file) =>
        importsOf(file)
          .filter((target) => forbidden.test(target))
          .map((target) => `${file} → ${target}`),
      );

  it('server/platform/ imports nothing from the engine, the front doors or the app', () => {
    expect(sources('server').filter((file) => file.startsWith('server/platform/')).length).toBeGreaterThan(20);
    expect(violations('server/platform/', /^server\/(engine\/|api\/|app\.ts|index\.ts)/)).toEqual([]);
  });

  it('server/engine/ imports nothing from the front doors or the app', () => {
    expect(sources('server').filter((file) => file.startsWith('server/engine/')).length).toBeGreaterThan(40);
    expect(violations('server/engine/', /^server\/(api\/|app\.ts|index\.ts)/)).toEqual([]);
  });

  it('no front door imports another (the Agents harness included: it runs turns on the engine)', () => {
    const across = sources('server').flatMap((file) => {
      const door = FRONT_DOORS.find((prefix) => file.startsWith(prefix));
      if (!door) return [];
      return importsOf(file)
        .filter((target) => FRONT_DOORS.some((other) => other !== door && target.startsWith(other)))
        .map((target) => `${file} → ${target}`);
    });
    expect(across).toEqual([]);
  });

  it('server/ holds the layers and the app, nothing loose', () => {
    const loose = readdirSync(join(ROOT, 'server')).filter((entry) => !['api', 'engine', 'platform', 'app.ts', 'index.ts'].includes(entry));
    expect(loose).toEqual([]);
  });

  it('runtime/ imports nothing from server/ or cli/', () => {
    const upward = sources('runtime').flatMap((file) =>
      importsOf(file)
        .filter((target) => /^(server|cli)\//.test(target))
        .map((target) => `${file} → ${target}`),
    );
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

/** The strongly connected groups of more than one node of a graph (Tarjan's algorithm): each is a cycle. */
function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (file: string): void => {
    order.set(file, next);
    low.set(file, next);
    next += 1;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file)!) {
      if (!order.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, order.get(target)!));
      }
    }
    if (low.get(file) !== order.get(file)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== file);
    if (group.length > 1) cycles.push(group.sort());
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return cycles;
}

/** The cycles of the import graph of `files`. */
function importCycles(files: readonly string[]): string[][] {
  const known = new Set(files);
  return cyclesOf(new Map(files.map((file) => [file, importsOf(file).filter((target) => known.has(target))])));
}

describe('imports', () => {
  it('the product has no import cycle (type-only imports count)', () => {
    const product = ['schemas', 'runtime', 'server', 'cli', 'testing'].flatMap(sources);
    expect(product.length).toBeGreaterThan(150);
    expect(importCycles(product)).toEqual([]);
  });

  it('finds a cycle when there is one (the check itself)', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a', 'd']],
      ['d', []],
      ['e', ['a']],
    ]);
    expect(cyclesOf(graph)).toEqual([['a', 'b', 'c']]);
    expect(
      cyclesOf(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
    ).toEqual([]);
  });
});

describe('tool kinds', () => {
  const TABLE = join('server', 'engine', 'conversation', 'tool-kinds.ts');
  const items = [
    ...Object.values(TOOL_KINDS).flatMap((kind) => ['output' in kind ? [kind.call, kind.output] : [kind.call]].flat()),
    ...Object.values(MCP_APPROVAL),
  ];
  // A prefix that is also a kind's name (`mcp`) is written as that name elsewhere; `call` is also
  // the domain tag of a call's MAC in runtime/fingerprint.ts.
  const literals = [...new Set([...items.flatMap((item) => [item.type, item.idPrefix]), ...Object.values(TOOL_KINDS).map((kind) => kind.sealedPrefix)])].filter(
    (literal) => !Object.hasOwn(TOOL_KINDS, literal) && literal !== 'call',
  );

  it("each kind's item types and id prefixes are written in server/engine/conversation/tool-kinds.ts only (schemas/ aside)", () => {
    const files = [
      ...sources('server'),
      ...sources('cli'),
      ...sources('runtime'),
      ...readdirSync(join(ROOT, 'runtime'), { recursive: true, encoding: 'utf8' })
        .filter((file) => file.endsWith('.js'))
        .map((file) => join('runtime', file)),
    ];
    const found = files
      .filter((file) => file !== TABLE)
      .flatMap((file) => {
        const text = readFileSync(join(ROOT, file), 'utf8');
        return literals.filter((literal) => text.includes(`'${literal}'`) || text.includes(`"${literal}"`)).map((literal) => `${file}: '${literal}'`);
      });
    expect(found).toEqual([]);
  });

  it('the runtime names no tool kind: a program tool carries its kind as a tag the runtime only seals', () => {
    // (`function` aside: the runtime writes it as a `typeof`.)
    const kinds = Object.keys(TOOL_KINDS).filter((kind) => kind !== 'function');
    const files = readdirSync(join(ROOT, 'runtime'), { recursive: true, encoding: 'utf8' })
      .filter((file) => /\.(ts|js)$/.test(file))
      .map((file) => join('runtime', file));
    const found = files.flatMap((file) => {
      const text = readFileSync(join(ROOT, file), 'utf8');
      return kinds.filter((kind) => text.includes(`'${kind}'`) || text.includes(`"${kind}"`)).map((kind) => `${file}: '${kind}'`);
    });
    expect(kinds.length).toBeGreaterThan(4);
    expect(found).toEqual([]);
  });

  it('docs/CONTRIBUTING.md names files that exist', () => {
    const text = readFileSync(join(ROOT, 'docs', 'CONTRIBUTING.md'), 'utf8');
    const named = [...text.matchAll(/`((?:server|runtime|schemas|test|cli)\/[\w./-]+\.ts)`/g)].map((match) => match[1]!);
    expect(named.length).toBeGreaterThan(5);
    expect(
      named.filter((file) => {
        try {
          readFileSync(join(ROOT, file));
          return false;
        } catch {
          return true;
        }
      }),
    ).toEqual([]);
  });
});
