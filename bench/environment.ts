import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';

/** Read from the installed package, not package.json's range: the number that actually ran. */
function isolatedVmVersion(): string {
  const require = createRequire(import.meta.url);
  const manifest = JSON.parse(readFileSync(require.resolve('isolated-vm/package.json'), 'utf8')) as { version?: unknown };
  return String(manifest.version);
}

/** The lines that make numbers from two machines (or two runs) comparable, or not. */
export function describeEnvironment(): string[] {
  const cpus = os.cpus();
  const models = [...new Set(cpus.map((cpu) => cpu.model.trim()))].join(' / ') || 'unknown';
  return [
    `Node ${process.version} (${process.platform}/${process.arch}), V8 ${process.versions.v8}, flags: ${process.execArgv.join(' ') || '(none)'}`,
    `isolated-vm ${isolatedVmVersion()}`,
    `CPU: ${models} x ${cpus.length} (available parallelism ${os.availableParallelism()})`,
  ];
}
