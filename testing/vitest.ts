import { afterAll, beforeAll, beforeEach } from 'vitest';
import { startEmulator, type RunningEmulator, type StartEmulatorOptions } from './start-emulator.ts';

export interface UsePtcEmulatorOptions extends StartEmulatorOptions {
  /**
   * Point the `openai` SDK's defaults at the emulator while the suite runs: `OPENAI_BASE_URL`
   * and `OPENAI_API_KEY` (restored afterwards). Default true. A client built before the suite
   * starts keeps the URL it was built with: build yours inside the tests or a `beforeAll`.
   */
  readonly setEnv?: boolean;
  /** Empty the journal before each test, so `journal()` holds that test's requests. Default true. */
  readonly resetEachTest?: boolean;
}

/**
 * One emulator for the test file that calls it: started before its tests, closed after them.
 * The returned handle is usable inside tests and hooks (it throws if read at module load).
 */
export function usePtcEmulator(options: UsePtcEmulatorOptions = {}): RunningEmulator {
  let running: RunningEmulator | undefined;
  const saved: Record<string, string | undefined> = {};
  beforeAll(async () => {
    running = await startEmulator(options);
    if (options.setEnv !== false) {
      for (const [name, value] of [
        ['OPENAI_BASE_URL', running.baseURL],
        ['OPENAI_API_KEY', options.config?.apiKey ?? 'ptc-emulator'],
      ] as const) {
        saved[name] = process.env[name];
        process.env[name] = value;
      }
    }
  });
  if (options.resetEachTest !== false) beforeEach(() => current().reset());
  afterAll(async () => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await running?.close();
  });
  const current = (): RunningEmulator => {
    if (!running) throw new Error('usePtcEmulator(): the emulator starts in beforeAll; use it inside a test or a hook');
    return running;
  };
  return {
    get baseURL() {
      return current().baseURL;
    },
    get url() {
      return current().url;
    },
    get port() {
      return current().port;
    },
    get app() {
      return current().app;
    },
    journal: (limit) => current().journal(limit),
    reset: () => current().reset(),
    close: () => current().close(),
  };
}
