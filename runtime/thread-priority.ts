import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/** The calling thread's Linux id (the kernel names it in /proc/thread-self); undefined elsewhere. */
export function currentThreadId(): number | undefined {
  try {
    return Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return undefined;
  }
}

/**
 * Lowers the CPU priority of the calling thread alone to nice 10, for a thread doing work a
 * request asked for beside the server's loop (compiling its schemas, parsing its body, counting
 * its tokens): on a busy machine it then yields the cores to the loop and the programs, so that
 * what costs one request does not delay every other. At nice 10 it still gets about a tenth of a
 * core beside busy processes (at 19, ~1%: honest work would wait seconds). Returns the thread's
 * id (undefined where not Linux; where not allowed, the thread keeps the process's priority).
 */
export function lowerThreadPriority(): number | undefined {
  const threadId = currentThreadId();
  if (threadId === undefined) return undefined;
  try {
    setPriority(threadId, 10);
  } catch {
    // Not allowed: the thread runs at the process's priority.
  }
  return threadId;
}
