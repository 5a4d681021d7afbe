import { z } from 'zod';

/**
 * Client-loop testing knobs: the paths the PTC guide warns about, on demand. The same fields
 * come from a scenario rule's `knobs` and from request headers (`x-ptc-` + the name with `-`
 * for `_`: `x-ptc-final-message: next`); a header wins over the rule. docs/KNOBS.md.
 */
export const Knobs = z.strictObject({
  /** `next`: a program's final message comes in the response after its `program_output`. */
  final_message: z.enum(['same', 'next']).optional(),
  /** The response ends `incomplete` (`max_output_tokens`), its message cut. */
  incomplete: z.literal('max_output_tokens').optional(),
  /** Answer with this HTTP status and OpenAI's error envelope instead of running the turn. */
  error_status: z.number().int().min(400).max(599).optional(),
  /** Only the first N attempts fail (the SDK's `x-stainless-retry-count` says which attempt this is). */
  error_times: z.number().int().min(1).optional(),
  /** `retry-after-ms` and `retry-after` on the simulated error. */
  error_retry_after_ms: z.number().int().min(0).max(600_000).optional(),
  /** `x-should-retry` on the simulated error. */
  error_should_retry: z.boolean().optional(),
  /** Streams end abruptly after this many events, without a terminal event. */
  stream_cut_after: z.number().int().min(0).optional(),
  /** Pause before each streamed event. */
  event_latency_ms: z.number().int().min(0).max(60_000).optional(),
  /** Up to this much more, drawn from `seed`, before each streamed event. */
  latency_jitter_ms: z.number().int().min(0).max(60_000).optional(),
  /** Seed of every random draw the knobs make, and of the autopilot's choices. */
  seed: z.number().int().optional(),
  /** Explore mode for this request's conversation: its program is drawn from the explorer's shapes (docs/EXPLORE.md). */
  explore: z.boolean().optional(),
  /** Wait this long before running the turn (a background response stays queued meanwhile). */
  delay_ms: z.number().int().min(0).max(600_000).optional(),
});
export type Knobs = z.infer<typeof Knobs>;

export const KNOB_HEADER_PREFIX = 'x-ptc-';
