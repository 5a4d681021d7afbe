import { tokenChunks } from '../../engine/usage.ts';

/**
 * The deltas a text is streamed in. Up to TOKENIZED_CHARS characters, one per o200k token, as
 * the hosted API streams. A longer text (a program's big result carried by a message, say) is
 * cut into slices of SLICE_CHARS characters instead: tokenizing it costs the server's loop
 * time that grows with it (a 1 MiB text takes hundreds of milliseconds), and a delta per token
 * is ~75,000 events for 300,000 characters. Slices are cut between code points, so each is
 * valid UTF-16 and joined they are the text.
 */
export const TOKENIZED_CHARS = 16 * 1024;
export const SLICE_CHARS = 256;

export function deltaChunks(text: string): string[] {
  if (text.length <= TOKENIZED_CHARS) return tokenChunks(text);
  const slices: string[] = [];
  for (let start = 0; start < text.length; ) {
    let end = Math.min(start + SLICE_CHARS, text.length);
    // Not between the halves of a surrogate pair.
    const code = text.charCodeAt(end - 1);
    if (end < text.length && code >= 0xd800 && code <= 0xdbff) end += 1;
    slices.push(text.slice(start, end));
    start = end;
  }
  return slices;
}
