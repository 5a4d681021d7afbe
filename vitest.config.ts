import { defineConfig } from 'vitest/config';

// isolated-vm 5.0.4 on Node 20 crashes without --no-node-snapshot, and the flag must reach
// the process that loads it: tests run in forked children started with it.
export default defineConfig({
  test: {
    pool: 'forks',
    execArgv: ['--no-node-snapshot'],
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
