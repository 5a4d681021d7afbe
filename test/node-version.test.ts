import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { REQUIRED_NODE_MAJOR, unsupportedNode } from '../runtime/node-version.ts';
import { BUILT_CLI } from './support/cli.ts';

// On a Node.js older than the package needs, every entry point says so in one line: the CLI
// (`ptc-emulator`, and `npm start`'s `node --import tsx cli/main.ts`), and the library's two
// entry points, instead of a stack from a module that cannot load there (node:sqlite).

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** An older Node.js to try them with: PTC_TEST_OLD_NODE, else the system's node when it is older. */
function olderNode(): string | undefined {
  for (const candidate of [process.env.PTC_TEST_OLD_NODE, '/usr/bin/node', '/usr/local/bin/node']) {
    if (!candidate) continue;
    try {
      const version = execFileSync(candidate, ['--version'], { encoding: 'utf8' }).trim().replace(/^v/, '');
      if (Number(version.split('.')[0]) < REQUIRED_NODE_MAJOR) return candidate;
    } catch {
      // Not there: try the next.
    }
  }
  return undefined;
}

const OLD_NODE = olderNode();
if (!OLD_NODE) console.warn('test/node-version.test.ts: no Node.js older than the package needs; its run on one is skipped (set PTC_TEST_OLD_NODE).');

describe('the Node.js the package needs', () => {
  it("is package.json's engines, and the check says which is needed and which was found", () => {
    const { engines } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { engines: { node: string } };
    expect(engines.node).toBe(`>=${REQUIRED_NODE_MAJOR}`);
    expect(unsupportedNode(`${REQUIRED_NODE_MAJOR}.0.0`)).toBeUndefined();
    expect(unsupportedNode('26.1.0')).toBeUndefined();
    const line = unsupportedNode('20.20.2')!;
    expect(line).toContain(`Node.js ${REQUIRED_NODE_MAJOR} or newer`);
    expect(line).toContain('Node.js 20.20.2');
    expect(line).not.toContain('\n');
  });

  describe.skipIf(!OLD_NODE)('on an older Node.js', () => {
    const expectOneLine = (text: string) => {
      expect(text.trim().split('\n')).toHaveLength(1);
      expect(text).toMatch(new RegExp(`^ptc-emulator: this needs Node\\.js ${REQUIRED_NODE_MAJOR} or newer, and this is Node\\.js \\d+\\.`));
    };

    it('the CLI prints one line and exits 2', () => {
      for (const args of [
        [BUILT_CLI, 'serve'],
        ['--import', 'tsx', 'cli/main.ts', 'serve'],
        [BUILT_CLI, '--version'],
      ]) {
        const run = spawnSync(OLD_NODE!, args, { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
        expect(run.status, run.stderr).toBe(2);
        expect(run.stdout).toBe('');
        expectOneLine(run.stderr);
      }
    });

    it("importing the library's entry points throws that line, nothing else", () => {
      for (const entry of ['dist/server/index.js', 'dist/runtime/index.js']) {
        const script = `import(${JSON.stringify(new URL(`../${entry}`, import.meta.url).href)}).then(() => process.stdout.write('loaded'), (error) => process.stdout.write(error.message))`;
        const run = spawnSync(OLD_NODE!, ['-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
        expectOneLine(run.stdout);
      }
    });
  });
});
