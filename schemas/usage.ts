import { z } from 'zod';

const TokenCount = z.number().int().nonnegative();

/**
 * `Response.usage`: the shape of the SDK's `ResponseUsage` (openai 7.60.0), field for field.
 * The counts come from server/engine/usage.ts.
 */
export const Usage = z.strictObject({
  input_tokens: TokenCount,
  input_tokens_details: z.strictObject({
    cache_write_tokens: TokenCount,
    cached_tokens: TokenCount,
    // Which retention the written tokens got (openai 7.x); the emulator caches nothing, so it
    // sends none, but a model backend's counts may carry it.
    cache_write_tokens_details: z.strictObject({ ttl_12h_tokens: TokenCount, ttl_30m_tokens: TokenCount }).optional(),
  }),
  output_tokens: TokenCount,
  output_tokens_details: z.strictObject({
    reasoning_tokens: TokenCount,
  }),
  total_tokens: TokenCount,
});
export type Usage = z.infer<typeof Usage>;
