import { lowerThreadPriority } from '../../runtime/index.ts';
import { serveJobs } from '../platform/off-loop-thread.ts';
import { countTokens } from './usage.ts';

/**
 * The thread that counts the tokens of long texts (usage-off-loop.ts starts it through
 * OffLoopJobs): byte-pair encoding costs about 90 ns a character of prose, so the 10 MiB a
 * string of a body may hold would take the server's loop about a second. At a lower priority
 * (thread-priority.ts), so that on a busy machine the loop gets the cores first.
 */
lowerThreadPriority();
// One job per request: the long texts of its usage, counted in order.
serveJobs<readonly string[], number[]>((texts) => texts.map(countTokens));
