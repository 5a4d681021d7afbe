import { describe, expect, it } from 'vitest';
import { DEFAULT_SPIN_WAIT_MS, MAX_SPIN_WAIT_MS } from '../runtime/spin-wait.ts';
import { loadConfig } from '../server/platform/config.ts';

describe('PTC_SPIN_WAIT_MS', () => {
  it('defaults to the runtime default, takes 0 to its maximum, and names what it refuses', () => {
    expect(loadConfig({}).spinWaitMs).toBe(DEFAULT_SPIN_WAIT_MS);
    expect(loadConfig({ PTC_SPIN_WAIT_MS: '0' }).spinWaitMs).toBe(0);
    expect(loadConfig({ PTC_SPIN_WAIT_MS: String(MAX_SPIN_WAIT_MS) }).spinWaitMs).toBe(MAX_SPIN_WAIT_MS);
    for (const raw of [String(MAX_SPIN_WAIT_MS + 1), '-1', '0.5', 'on']) {
      expect(() => loadConfig({ PTC_SPIN_WAIT_MS: raw })).toThrow(`PTC_SPIN_WAIT_MS must be a whole number from 0 to ${MAX_SPIN_WAIT_MS}, got "${raw}"`);
    }
  });
});
