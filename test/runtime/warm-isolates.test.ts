import { describe, expect, it } from 'vitest';
import { isolatesReady } from '../../runtime/index.ts';
import { IsolateProgram, type ProgramSpec } from '../../runtime/isolate-program.ts';
import { DEFAULT_LIMITS } from '../../runtime/limits.ts';
import type { PreparedIsolate } from '../../runtime/prepared-isolate.ts';
import { ProgramRuntime } from '../../runtime/program-runtime.ts';
import { runProgram } from '../../runtime/run-program.ts';
import { sharedWarmIsolates, WarmIsolates } from '../../runtime/warm-isolates.ts';

const MEMORY_MB = DEFAULT_LIMITS.memoryMb;
const MIB = 1024 * 1024;

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

describe('isolates made ahead on request (isolatesReady, whenFull)', () => {
  it('isolatesReady resolves once the shared isolates are made, and the next runProgram takes one of them', async () => {
    await isolatesReady();
    const before = sharedWarmIsolates().stats();
    expect(before.ready).toBeGreaterThan(0);
    const run = await runProgram('text("ok")');
    expect(run.result).toBe('ok');
    const after = sharedWarmIsolates().stats();
    expect(after.taken).toBe(before.taken + 1);
    // Asked again between programs, it makes up the one taken.
    await isolatesReady();
    expect(sharedWarmIsolates().stats().made).toBeGreaterThan(after.made);
  });

  it('whenFull makes them at once for the memory limit told, before any program asked, and resolves at once when full', async () => {
    const warm = new WarmIsolates(2, undefined, { memoryMb: 16 });
    try {
      await warm.whenFull();
      expect(warm.stats()).toEqual({ ready: 2, made: 2, taken: 0 });
      await warm.whenFull();
      expect(warm.stats().made).toBe(2);
      expect(warm.take(16)).toBeDefined();
      warm.take(16)?.isolate.dispose();
    } finally {
      warm.close();
    }
  });

  it("keeps no more than the memory this process may take holds at the programs' limit, and never waits for more", async () => {
    const none = new WarmIsolates(2, undefined, { memoryMb: 64, availableBytes: () => 32 * MIB });
    const one = new WarmIsolates(2, undefined, { memoryMb: 64, availableBytes: () => 100 * MIB });
    try {
      await Promise.all([none.whenFull(), one.whenFull()]);
      expect(none.stats()).toEqual({ ready: 0, made: 0, taken: 0 });
      expect(one.stats()).toEqual({ ready: 1, made: 1, taken: 0 });
    } finally {
      none.close();
      one.close();
    }
  });

  it('whenFull resolves at once when the pool keeps none, or is closed', async () => {
    const off = new WarmIsolates(0);
    const closed = new WarmIsolates(2);
    closed.close();
    await Promise.all([off.whenFull(), closed.whenFull()]);
    expect(off.ready + closed.ready).toBe(0);
  });

  it('a pool closed while a caller waits lets it go', async () => {
    const warm = new WarmIsolates(2);
    const waiting = warm.whenFull();
    warm.close();
    await waiting;
    expect(warm.ready).toBe(0);
  });

  it("ProgramRuntime.isolatesReady resolves once the runtime's own are made", async () => {
    const runtime = new ProgramRuntime({ pausedTtlMs: 60_000, maxPausedPrograms: 10, maxPausedHeapBytes: 1e9, warmIsolates: 1, warmMemoryMb: 16 });
    try {
      await runtime.isolatesReady();
      const event = await runtime.start('p', { ...spec('text("ok")'), limits: { ...DEFAULT_LIMITS, memoryMb: 16 } });
      expect(event.type).toBe('completed');
    } finally {
      await runtime.close();
    }
  });

  it("disposes an ended program's isolate once its outcome is handed back: never handed out again", async () => {
    /** Sees the isolate it hands out. */
    class Watched extends WarmIsolates {
      handed: PreparedIsolate | undefined;
      override take(memoryMb: number): PreparedIsolate | undefined {
        this.handed = super.take(memoryMb);
        return this.handed;
      }
    }
    const warm = new Watched(1);
    try {
      await warm.whenFull();
      const event = await new IsolateProgram(spec('text("done")'), warm).start();
      expect(event.type).toBe('completed');
      const isolate = warm.handed?.isolate;
      expect(isolate).toBeDefined();
      await new Promise((resolve) => setImmediate(resolve));
      expect(isolate?.isDisposed).toBe(true);
    } finally {
      warm.close();
    }
  });
});
