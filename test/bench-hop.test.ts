import { describe, expect, it } from 'vitest';
import { ChannelFloor, recordingSteps, type ScriptedStep } from '../bench/channel-floor.ts';
import { DEFAULT_CACHE } from '../bench/resume-program.ts';
import { SEED_SPEC, engineIteration, measureEngineHop } from '../bench/worker-hop.ts';
import type { ProgramEvent } from '../runtime/program-events.ts';
import { ProgramRuntime } from '../runtime/program-runtime.ts';

const PHASES = ['start + resume', 'start', 'resume', '1,000 calls, 20 warm resumes', '50 sequential calls, 50 warm resumes'];

/** One iteration's script, as bench:hop records it. */
async function script(): Promise<ScriptedStep[]> {
  const runtime = new ProgramRuntime(DEFAULT_CACHE);
  try {
    const recording = recordingSteps(runtime);
    await engineIteration('recording', recording.engine, 'script');
    return recording.steps;
  } finally {
    await runtime.close();
  }
}

/**
 * bench:hop's floor is in process plus the bare channel: a channel that answered without the
 * runtime's replies, skipped a phase, or carried other messages than a pool's would put the floor
 * under nothing. Every phase's result is checked on every target, the bare channel's included,
 * and the channel's far end checks that each message is the request its reply answers.
 */
describe("bench:hop's bare channel", () => {
  it('times every phase on the runtime, the worker and the bare channel, each checked', async () => {
    const targets = await measureEngineHop({ warmup: 1, iterations: 2 }, () => {});
    expect(targets.map((target) => [target.label, target.part === true])).toEqual([
      ['ProgramRuntime (in-process)', false],
      ['WorkerPool, 1 worker (IPC hop)', false],
      ['the bare channel (no worker)', true],
    ]);
    for (const target of targets) {
      expect([...target.phases.keys()]).toEqual(PHASES);
      for (const samples of target.phases.values()) {
        expect(samples).toHaveLength(2);
        for (const ms of samples) expect(ms).toBeGreaterThan(0);
      }
    }
    // No worker died under the steps (the pool's own count, not a heartbeat's).
    expect(targets[1]!.notes.join()).toMatch(/worker deaths 0$/);
  }, 120_000);

  it('fails the bench when it answers other than the runtime did', async () => {
    const steps = await script();
    // The seed's resume answered with W2's outcome: the requests are the script's, a reply is not.
    const wrong = steps.map((step, index) => (index === 1 ? { ...step, reply: steps.at(-1)!.reply } : step));
    const channel = await ChannelFloor.open(wrong);
    try {
      await expect(engineIteration('wrong', channel, 'wrong')).rejects.toThrow(/wrong: expected completed with/);
    } finally {
      channel.close();
    }
  }, 120_000);

  it('fails the bench when its script is out of step with the requests', async () => {
    const steps = await script();
    const channel = await ChannelFloor.open(steps.slice(1));
    try {
      await expect(engineIteration('shifted', channel, 'shifted')).rejects.toThrow(/echo exited \(code 2\)/);
    } finally {
      channel.close();
    }
  }, 120_000);

  it('fails the bench when a message is not the request its reply answers', async () => {
    const steps = await script();
    const channel = await ChannelFloor.open(steps);
    try {
      const paused: ProgramEvent = await channel.start('p', SEED_SPEC);
      if (paused.type !== 'paused') throw new Error('expected the seed program paused');
      // One call more than the program made: a `continue` of 3 calls where the script's step has 2.
      const recorded = [...paused.calls, paused.calls[0]!].map((call) => ({ tool: call.tool, argumentsJson: call.argumentsJson, output: '{}' }));
      await expect(channel.resume('p', SEED_SPEC, recorded)).rejects.toThrow(/echo exited \(code 2\)/);
    } finally {
      channel.close();
    }
  }, 120_000);
});
