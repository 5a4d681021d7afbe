import { defineConfig } from 'vitest/config';
import { SUITE_MARK } from './test/support/no-process-left.ts';

/**
 * Tests that start the command, the examples and the test helper as users do: each spawns
 * several Node processes (the CLI, its re-executed child, workers, a test runner), so they run
 * as a group of their own after the rest rather than load the machine under the timing-bound
 * containment and supervisor tests.
 */
const AS_USERS_RUN_IT = ['test/cli.test.ts', 'test/examples.test.ts', 'test/testing-helper.test.ts'];

/**
 * The suites that drive the server through real clients (the openai SDK, its Python package, the
 * Agents SDK, the Vercel AI SDK, the Agents API), run a second time on the worker pool `serve` runs (`workers: 1`) rather than
 * isolates in the test's process: what a client sees must not depend on the engine
 * (test/support/server.ts reads PTC_TEST_ENGINE_WORKERS; test/engine-contract.test.ts is the
 * short contract both engines are held to in every run).
 */
const SDK_SUITES = [
  'test/seed-loop.test.ts',
  'test/agents-sdk.test.ts',
  'test/agents-sdk-run.test.ts',
  'test/agents-api.test.ts',
  'test/vercel-ai-sdk.test.ts',
  'test/python-sdk.test.ts',
  'test/item-reference.test.ts',
  'test/wire-shapes.test.ts',
  'test/streaming.test.ts',
  'test/tools/*.test.ts',
];

// isolated-vm needs --no-node-snapshot (runtime/node-flags.ts), and the flag must reach
// the process that loads it: tests run in forked children started with it.
// This run's id in every test worker's environment: the redis-servers they spawn are noted
// under it, and the global teardown reaps those and no other (no-process-left.ts).
const shared = {
  pool: 'forks' as const,
  execArgv: ['--no-node-snapshot'],
  testTimeout: 30_000,
  hookTimeout: 30_000,
  env: { [SUITE_MARK]: String(process.pid) },
};

export default defineConfig({
  test: {
    // After the run, no process a test started may be left (test/support/no-process-left.ts).
    globalSetup: ['test/support/no-process-left.ts'],
    projects: [
      { test: { ...shared, name: 'suite', include: ['test/**/*.test.ts'], exclude: [...AS_USERS_RUN_IT], sequence: { groupOrder: 0 } } },
      {
        test: {
          ...shared,
          name: 'SDK suites on the worker pool',
          include: SDK_SUITES,
          env: { ...shared.env, PTC_TEST_ENGINE_WORKERS: '1' },
          sequence: { groupOrder: 0 },
        },
      },
      { test: { ...shared, name: 'as users run it', include: AS_USERS_RUN_IT, sequence: { groupOrder: 1 } } },
    ],
  },
});
