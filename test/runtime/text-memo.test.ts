import { describe, expect, it } from 'vitest';
import { TextMemo } from '../../runtime/index.ts';

describe('TextMemo', () => {
  it('keeps at most its entries, the least recently used going first', () => {
    const memo = new TextMemo<number>(2, 1_000);
    memo.set('a', 1);
    memo.set('b', 2);
    expect(memo.get('a')).toBe(1); // a is now the most recent
    memo.set('c', 3);
    expect(memo.peek('b')).toBeUndefined();
    expect(memo.peek('a')).toBe(1);
    expect(memo.peek('c')).toBe(3);
  });

  it('keeps at most its characters, and never a text longer than all of them', () => {
    const memo = new TextMemo<string>(100, 10);
    memo.set('12345', 'x');
    memo.set('6789', 'y');
    memo.set('ab', 'z'); // 11 characters: the oldest goes
    expect(memo.peek('12345')).toBeUndefined();
    expect(memo.peek('6789')).toBe('y');
    expect(memo.set('k'.repeat(11), 'w')).toBe('w');
    expect(memo.peek('k'.repeat(11))).toBeUndefined();
    expect(memo.peek('ab')).toBe('z');
  });

  it('finds a text by its characters, whatever string holds them', () => {
    const memo = new TextMemo<number>(10, 1_000);
    memo.set(JSON.stringify({ tool: 'lookup' }), 7);
    expect(memo.get(JSON.parse(JSON.stringify(JSON.stringify({ tool: 'lookup' }))) as string)).toBe(7);
  });

  it('peek does not make a text recent', () => {
    const memo = new TextMemo<number>(2, 1_000);
    memo.set('a', 1);
    memo.set('b', 2);
    memo.peek('a');
    memo.set('c', 3);
    expect(memo.peek('a')).toBeUndefined();
  });
});
