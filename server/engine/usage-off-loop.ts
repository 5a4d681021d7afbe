import { FIXED_LIMITS } from '../../schemas/fixed-limits.ts';
import type { Usage } from '../../schemas/usage.ts';
import { ApiError } from '../platform/api-error.ts';
import { OffLoopDeadlineError, OffLoopJobs, OffLoopQueueFullError } from '../platform/off-loop-jobs.ts';
import { countTokens, countUsage, rememberedTokenCount, rememberTokenCount, type TokenCounter, type UsageInput } from './usage.ts';

/**
 * Usage counted with the long texts tokenized in a thread of their own (token-count-thread.ts):
 * a request's texts are as long as its body allows, and counting them on the server's loop
 * would hold every other conversation for as long (a 10 MiB text of prose: about a second).
 * The counts are the ones countTokens gives: the thread runs it.
 */

/** Texts at least this long are counted in the thread (below it, about 3 ms of the loop at most). */
export const OFF_LOOP_TOKEN_CHARS = 32 * 1024;

const FROM_SOURCES = import.meta.url.endsWith('.ts');
const THREAD_ENTRY = new URL(FROM_SOURCES ? './token-count-thread.ts' : './token-count-thread.js', import.meta.url);

let thread: OffLoopJobs<readonly string[], number[]> | undefined;

/** Started when first needed; an idle thread does not keep the process alive (OffLoopJobs unrefs it). */
function tokenThread(): OffLoopJobs<readonly string[], number[]> {
  thread ??= new OffLoopJobs<readonly string[], number[]>({
    entry: THREAD_ENTRY,
    name: 'token counting',
    deadlineMs: FIXED_LIMITS.tokenCountMs.value,
    maxQueued: FIXED_LIMITS.tokenCountQueue.value,
  });
  return thread;
}

/**
 * A counter that knows the count of every long text `measure` asks for: `measure` runs once with
 * a counter that only notes those texts, they are counted in the thread, and the counter
 * returned answers them from there (and counts the short ones on the loop).
 */
export async function offLoopCounter(measure: (count: TokenCounter) => void): Promise<TokenCounter> {
  const long = new Set<string>();
  measure((text) => {
    if (text.length >= OFF_LOOP_TOKEN_CHARS && rememberedTokenCount(text) === undefined) long.add(text);
    return 0;
  });
  if (long.size === 0) return countTokens;
  const texts = [...long];
  // One job for all of them: the queue bounds the requests waiting, whatever each one holds.
  const counts = await countInThread(texts);
  const known = new Map<string, number>();
  texts.forEach((text, index) => {
    known.set(text, counts[index]!);
    // A conversation resent whole (store: false) brings the same texts back on its next turn.
    rememberTokenCount(text, counts[index]!);
  });
  return (text) => known.get(text) ?? countTokens(text);
}

/** The response's usage, by countUsage's rules, its long texts counted off the loop. */
export async function countUsageOffLoop(input: UsageInput): Promise<Usage> {
  return countUsage(input, await offLoopCounter((count) => countUsage(input, count)));
}

async function countInThread(texts: readonly string[]): Promise<number[]> {
  try {
    return await tokenThread().run(texts);
  } catch (error) {
    if (error instanceof OffLoopQueueFullError || error instanceof OffLoopDeadlineError) {
      throw new ApiError('server_busy', `The server is busy counting tokens: ${error.message}. Retry shortly.`, null, { 'retry-after': '1' });
    }
    throw error;
  }
}
