/**
 * A bench's settings from the environment: an absent or empty variable gives the default, and
 * a value that is not a positive number (an integer, where `integer` says so) stops the bench
 * with a message naming the variable, rather than running with something else.
 */
export function positiveNumberFromEnv(name: string, fallback: number, integer = false): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isSafeInteger(value))) {
    throw new Error(`${name} must be a positive ${integer ? 'integer' : 'number'}, got "${raw}"`);
  }
  return value;
}
