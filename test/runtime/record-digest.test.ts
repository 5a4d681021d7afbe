import { describe, expect, it } from 'vitest';
import { answersDigest, type RecordedCall } from '../../runtime/program-events.ts';
import { RecordDigest } from '../../runtime/record-digest.ts';

const call = (output: string, error?: string): RecordedCall => ({ tool: 't', argumentsJson: '{}', output, ...(error === undefined ? {} : { error }) });

describe("the digest of a record's answered calls, kept from one warm resume to the next", () => {
  it('is answersDigest of the answered part, as the record grows', () => {
    const digest = new RecordDigest();
    const record: RecordedCall[] = [call('a'), call('b')];
    expect(digest.of(record, 1)).toBe(answersDigest(record.slice(0, 1)));
    record.push(call('', 'failed'), call('d'));
    expect(digest.of(record, 3)).toBe(answersDigest(record.slice(0, 3)));
    expect(digest.of(record, 3)).toBe(answersDigest(record.slice(0, 3)));
    expect(digest.of(record, 4)).toBe(answersDigest(record));
  });

  it('hashes a record given as another array from its start, and one that got shorter', () => {
    const digest = new RecordDigest();
    const first = [call('a'), call('b'), call('c')];
    digest.of(first, 2);
    // A request that rebuilt the record from its items, with an earlier answer changed.
    const rebuilt = [call('x'), call('b'), call('c')];
    expect(digest.of(rebuilt, 3)).toBe(answersDigest(rebuilt));
    expect(digest.of(rebuilt, 1)).toBe(answersDigest(rebuilt.slice(0, 1)));
  });
});
