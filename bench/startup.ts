/**
 * `npm run bench:startup`: how long `serve` takes from spawn to its start line (listening, its
 * workers ready), run from the TypeScript sources through tsx (a clone's `npm start`) against
 * the built JavaScript the package ships, in the same run. The built command is timed with the
 * Node flag given (as the Docker image does) and without it (`npx ptc-emulator serve`, which
 * runs itself again with it). BENCH_STARTUP_RUNS (default 10) runs each, alternated.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { formatTable } from './table.ts';
import { positiveNumberFromEnv } from './settings.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const runs = positiveNumberFromEnv('BENCH_STARTUP_RUNS', 10, true);

const variants = [
  { name: 'sources via tsx (npm start)', args: ['--no-node-snapshot', '--import', 'tsx', 'cli/main.ts', 'serve'] },
  { name: 'built, flag given (Docker image)', args: ['--no-node-snapshot', 'dist/cli/main.js', 'serve'] },
  { name: 'built, no flag (npx ptc-emulator serve)', args: ['dist/cli/main.js', 'serve'] },
] as const;

function startOnce(args: readonly string[], workers: string): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: '0', PTC_STORE: 'memory', PTC_WORKERS: workers, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.includes(' · API at ')) {
        const elapsed = performance.now() - started;
        child.once('exit', () => resolve(elapsed));
        child.kill('SIGTERM');
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (!output.includes(' · API at ')) reject(new Error(`serve exited with ${code} before its start line:\n${output}`));
    });
  });
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

if (!existsSync(`${ROOT}dist/cli/main.js`)) throw new Error('dist/ is missing: run `npm run build` first');
const rows: string[][] = [];
for (const workers of ['0', '2']) {
  const samples = variants.map(() => [] as number[]);
  for (let run = 0; run < runs; run++) {
    for (const [index, variant] of variants.entries()) samples[index]!.push(await startOnce(variant.args, workers));
  }
  const baseline = median(samples[0]!);
  for (const [index, variant] of variants.entries()) {
    const values = samples[index]!;
    rows.push([
      variant.name,
      workers,
      Math.min(...values).toFixed(0),
      median(values).toFixed(0),
      Math.max(...values).toFixed(0),
      `${(median(values) / baseline).toFixed(2)}x`,
    ]);
  }
}
process.stdout.write(
  `serve: spawn to start line, ${runs} runs each, alternated (PTC_STORE=memory)\n\n${formatTable(
    [
      { header: 'command', align: 'left' },
      { header: 'PTC_WORKERS', align: 'right' },
      { header: 'min ms', align: 'right' },
      { header: 'median ms', align: 'right' },
      { header: 'max ms', align: 'right' },
      { header: 'vs sources', align: 'right' },
    ],
    rows,
  )}\n`,
);
