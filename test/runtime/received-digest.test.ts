import { describe, expect, it } from 'vitest';
import { answersDigest } from '../../runtime/program-events.ts';
import { ReceivedDigest } from '../../runtime/received-digest.ts';

type Answer = { output: string; error?: string };

describe('the digest of the answers a program received', () => {
  const batches: Answer[][] = [
    [{ output: '{"a":1}' }, { output: '', error: 'denied' }],
    [{ output: 'x'.repeat(70_000) }],
    [{ output: '\ud83d' }, { output: '\ude00 half a pair each' }, { output: '😀'.repeat(40_000) }],
    [],
    [{ output: 'é' }],
  ];

  it('is answersDigest of every answer so far, whatever the batches and their sizes', () => {
    const received = new ReceivedDigest();
    const all: Answer[] = [];
    expect(received.digest()).toBe(answersDigest([]));
    for (const batch of batches) {
      received.add(batch);
      all.push(...batch);
      expect(received.digest()).toBe(answersDigest(all));
    }
  });

  it('is the same asked once at the end as asked after every batch', () => {
    const received = new ReceivedDigest();
    for (const batch of batches) received.add(batch);
    expect(received.digest()).toBe(answersDigest(batches.flat()));
  });
});
