import { z } from 'zod';

const TokenCount = z.number().int().nonnegative();

/**
 * `Response.usage`: the shape of the SDK's `ResponseUsage` (openai 6.49.0), field for field.
 * The counts come from server/usage.ts.
 */
export const Usage = z.strictObject({
  input_tokens: TokenCount,
  input_tokens_details: z.strictObject({
    cache_write_tokens: TokenCount,
    cached_tokens: TokenCount,
  }),
  output_tokens: TokenCount,
  output_tokens_details: z.strictObject({
    reasoning_tokens: TokenCount,
  }),
  total_tokens: TokenCount,
});
export type Usage = z.infer<typeof Usage>;
