/**
 * `work`'s value, or a throw saying that `what` did not settle within `timeoutMs`: the user's
 * code (a tool's `run`, a check, the module's top-level code) may hang, and a hang is not a run.
 */
export async function settled<T>(work: () => T | Promise<T>, what: string, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([Promise.resolve().then(work), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** What was thrown, as text, whatever was thrown (`throw null` included). */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Text on one line for a terminal: runs of whitespace and control characters as one space, cut at 160 characters. */
export function oneLine(text: string): string {
  const line = text.replace(/[\s\u0000-\u001f\u007f-\u009f]+/g, ' ').trim();
  return line.length > 160 ? `${line.slice(0, 159)}…` : line;
}
