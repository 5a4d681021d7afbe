import { expect, it } from 'vitest';
import { deltaChunks, SLICE_CHARS, TOKENIZED_CHARS } from '../server/api/streaming/delta-chunks.ts';
import { tokenChunks } from '../server/engine/usage.ts';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

it('a text up to TOKENIZED_CHARS streams per token', () => {
  const text = 'Inventory for sku_123: 42 units. '.repeat(100);
  expect(deltaChunks(text)).toEqual(tokenChunks(text));
});

it('a longer text streams in slices that join to it and never split a surrogate pair', () => {
  // An emoji (two UTF-16 units) straddling every slice boundary: an odd-length prefix, then emoji only.
  const text = `a${'😀'.repeat(TOKENIZED_CHARS)}`;
  const slices = deltaChunks(text);
  expect(slices.join('')).toBe(text);
  for (const slice of slices) {
    expect(slice.length).toBeLessThanOrEqual(SLICE_CHARS + 1);
    expect(slice).not.toMatch(LONE_SURROGATE);
  }
});
