/** The wait a 429 or 5xx asks for: `retry-after-ms`, or `retry-after` in seconds; undefined when it names none. */
export function askedWaitMs(headers: Headers): number | undefined {
  const ms = Number(headers.get('retry-after-ms') ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const seconds = Number(headers.get('retry-after') ?? Number.NaN);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  return undefined;
}
