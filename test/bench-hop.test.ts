import { describe, expect, it } from 'vitest';
import { ChannelFloor, recordingReplies } from '../bench/channel-floor.ts';
import { engineIteration, measureEngineHop } from '../bench/worker-hop.ts';
import { ProgramRuntime } from '../runtime/program-runtime.ts';

const PHASES = ['start + resume', 'start', 'resume', '1,000 calls, 20 warm resumes', '50 sequential calls, 50 warm resumes'];

/**
 * bench:hop's floor is in-process plus the bare channel: a channel that answered without the
 * runtime's replies, or skipped a phase, would put the floor under nothing. Every phase's result
 * is checked on every target, the bare channel's included.
 */
describe("bench:hop's bare channel", () => {
  it('times every phase on the runtime, the worker and the bare channel, each checked', async () => {
    const targets = await measureEngineHop({ warmup: 1, iterations: 2 }, () => {});
    expect(targets.map((target) => target.label)).toEqual(['ProgramRuntime (in-process)', 'WorkerPool, 1 worker (IPC hop)', 'the bare channel (no worker)']);
    for (const target of targets) {
      expect([...target.phases.keys()]).toEqual(PHASES);
      for (const samples of target.phases.values()) {
        expect(samples).toHaveLength(2);
        for (const ms of samples) expect(ms).toBeGreaterThan(0);
      }
    }
    // The worker ran every program it was given and resumed every one warm.
    expect(targets[1]!.notes.join()).toMatch(/replay 0, paused left 0; worker deaths 0/);
  }, 120_000);

  it('fails the bench when it answers other than the runtime did', async () => {
    const runtime = new ProgramRuntime({ pausedTtlMs: 60_000, maxPausedPrograms: 100, maxPausedHeapBytes: 256 * 2 ** 20 });
    const recording = recordingReplies(runtime);
    await engineIteration('recording', recording.engine, 'script');
    await runtime.close();
    // One reply short at the start: every step gets the answer meant for the one after it.
    const channel = await ChannelFloor.open(recording.replies.slice(1));
    try {
      await expect(engineIteration('shifted', channel, 'shifted')).rejects.toThrow(/shifted: expected the seed program paused/);
    } finally {
      channel.close();
    }
  }, 120_000);
});
