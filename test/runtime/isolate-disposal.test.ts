import ivm from 'isolated-vm';
import { describe, expect, it } from 'vitest';
import { disposeSoon } from '../../runtime/isolate-disposal.ts';
import { prepareIsolate, prepareIsolateBeside } from '../../runtime/prepared-isolate.ts';

const MEMORY_MB = 16;

describe('disposing the isolates of ended programs', () => {
  it('disposes an ended isolate on the next turn of the event loop, not before its caller goes on', async () => {
    const ended = [new ivm.Isolate({ memoryLimit: MEMORY_MB }), new ivm.Isolate({ memoryLimit: MEMORY_MB })];
    try {
      for (const isolate of ended) disposeSoon(isolate);
      expect(ended.map((isolate) => isolate.isDisposed)).toEqual([false, false]);
      await new Promise((resolve) => setImmediate(resolve));
      expect(ended.map((isolate) => isolate.isDisposed)).toEqual([true, true]);
    } finally {
      for (const isolate of ended) if (!isolate.isDisposed) isolate.dispose();
    }
  });

  // That they are disposed before `new Isolate` rather than after it is not seen here: isolated-vm's
  // exports are read-only, so its constructor cannot be watched. The page faults it saves are
  // measured in the README ("Making an isolate under load").
  it('disposes the ended isolates still held when it makes a new one, on either path', async () => {
    const made: ivm.Isolate[] = [];
    try {
      const first = new ivm.Isolate({ memoryLimit: MEMORY_MB });
      disposeSoon(first);
      made.push(prepareIsolate(MEMORY_MB).isolate);
      // Synchronously, within the call that made the new isolate: its memory was free for it.
      expect(first.isDisposed).toBe(true);

      const second = new ivm.Isolate({ memoryLimit: MEMORY_MB });
      disposeSoon(second);
      const beside = prepareIsolateBeside(MEMORY_MB);
      expect(second.isDisposed).toBe(true);
      made.push((await beside).isolate);

      // Nothing is disposed twice, and the new isolates are alive and usable.
      await new Promise((resolve) => setImmediate(resolve));
      for (const isolate of made) {
        expect(isolate.isDisposed).toBe(false);
        expect(isolate.compileScriptSync('6 * 7').runSync(isolate.createContextSync())).toBe(42);
      }
    } finally {
      for (const isolate of made) isolate.dispose();
    }
  });
});
