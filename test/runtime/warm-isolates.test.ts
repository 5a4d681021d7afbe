import { describe, expect, it } from 'vitest';
import { IsolateProgram, type ProgramSpec } from '../../runtime/isolate-program.ts';
import { DEFAULT_LIMITS } from '../../runtime/limits.ts';
import { WarmIsolates } from '../../runtime/warm-isolates.ts';

const MEMORY_MB = DEFAULT_LIMITS.memoryMb;

function spec(code: string): ProgramSpec {
  return { code, tools: [{ name: 'lookup', parseOutputAsJson: false }], seed: 1, clock: 0, limits: DEFAULT_LIMITS };
}

/** Waits (without a time bound that a slow machine could miss) until `done` holds, checking every 10 ms. */
async function until(done: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !done(); waited += 10) {
    if (waited > 30_000) throw new Error(`still not ${what} after 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('isolates made ahead of demand', () => {
  it('hands each isolate to one program only, and makes up what was taken once no step runs', async () => {
    const warm = new WarmIsolates(2);
    try {
      // Nothing is made before a program has asked for a memory limit.
      expect(warm.take(MEMORY_MB)).toBeUndefined();
      warm.stepBegan();
      warm.stepEnded();
      await until(() => warm.ready === 2, 'refilled');
      const first = warm.take(MEMORY_MB);
      const second = warm.take(MEMORY_MB);
      expect(first?.isolate).toBeDefined();
      expect(second?.isolate).not.toBe(first?.isolate);
      expect(warm.take(MEMORY_MB)).toBeUndefined();
      first?.isolate.dispose();
      second?.isolate.dispose();
    } finally {
      warm.close();
    }
  });

  it('makes none while a program step runs', async () => {
    const warm = new WarmIsolates(2);
    try {
      warm.take(MEMORY_MB);
      warm.stepBegan();
      warm.stepBegan();
      warm.stepEnded();
      // Many turns of the event loop with one step still running: none is made.
      for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
      expect(warm.ready).toBe(0);
      warm.stepEnded();
      await until(() => warm.ready === 2, 'refilled');
    } finally {
      warm.close();
    }
  });

  it('disposes an isolate nobody took within its idle time', async () => {
    const warm = new WarmIsolates(1, 200);
    try {
      warm.take(MEMORY_MB);
      warm.stepEnded();
      await until(() => warm.ready === 1, 'made');
      await until(() => warm.ready === 0, 'disposed');
    } finally {
      warm.close();
    }
  });

  it('disposes what waits when the memory limit asked for changes', async () => {
    const warm = new WarmIsolates(1);
    try {
      warm.take(MEMORY_MB);
      warm.stepEnded();
      await until(() => warm.ready === 1, 'made');
      expect(warm.take(MEMORY_MB + 8)).toBeUndefined();
      expect(warm.ready).toBe(0);
    } finally {
      warm.close();
    }
  });

  it('gives every program a fresh global scope: nothing one program left is seen by the next', async () => {
    const warm = new WarmIsolates(2);
    try {
      const results: string[] = [];
      for (let run = 0; run < 6; run++) {
        const program = new IsolateProgram(
          spec('text(String(globalThis.left)); globalThis.left = "from an earlier program"; Object.prototype.polluted = 1; text(String({}.polluted))'),
          warm,
        );
        const event = await program.start();
        if (event.type !== 'completed') throw new Error(JSON.stringify(event));
        results.push(event.result);
        // Time for the pool to refill between programs, so later ones take isolates made ahead.
        await until(() => warm.ready === 2, 'refilled');
      }
      expect(results).toEqual(Array.from({ length: 6 }, () => 'undefined1'));
    } finally {
      warm.close();
    }
  });
});
