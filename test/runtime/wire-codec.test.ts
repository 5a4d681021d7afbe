import { describe, expect, it } from 'vitest';
import type { ProgramEvent, RecordedCall } from '../../runtime/program-events.ts';
import { WireEvent } from '../../runtime/worker/protocol.ts';
import { answersFromWire, answersToWire, eventFromWire, eventToWire } from '../../runtime/worker/wire-codec.ts';

const stats = { cpuTimeMs: 1.5, steps: 2, calls: 3 };

describe('a step as it crosses the worker channel', () => {
  it('carries a paused batch, a result and a failure back as they were', () => {
    const events: ProgramEvent[] = [
      {
        type: 'paused',
        calls: [
          { seq: 1, tool: 'a', argumentsJson: '{"n":1}' },
          { seq: 2, tool: 'b', argumentsJson: '{}' },
        ],
        stats,
      },
      { type: 'completed', result: 'done', stats },
      { type: 'incomplete', error: { code: 'program_threw', message: 'Error: x' }, stats },
    ];
    for (const event of events) expect(eventFromWire(WireEvent.parse(eventToWire(event)))).toEqual(event);
  });

  it("sends a host-side fault's cause as text", () => {
    const wire = eventToWire({ type: 'incomplete', error: { code: 'runtime_error', message: 'm', cause: new Error('inner') }, stats });
    expect(WireEvent.parse(wire)).toMatchObject({ error: { cause: expect.stringContaining('Error: inner') } });
  });

  it('refuses a paused batch whose parts differ in length', () => {
    expect(WireEvent.safeParse({ type: 'paused', seqs: [0, 1], tools: ['a'], argumentsJson: ['{}', '{}'], stats }).success).toBe(false);
  });

  it("delivers the last batch's answers to their calls, a failed one as its error", () => {
    const recorded: RecordedCall[] = [
      { tool: 'a', argumentsJson: '{}', output: 'first' },
      { tool: 'a', argumentsJson: '{}', output: 'second' },
      { tool: 'b', argumentsJson: '{}', output: '', error: 'denied' },
    ];
    const { answers, failed } = answersToWire(recorded, 1);
    expect(answersFromWire(recorded.length, answers, failed)).toEqual([
      { seq: 1, output: 'second' },
      { seq: 2, output: '', error: 'denied' },
    ]);
  });
});
