import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SealingKeys } from '../../runtime/index.ts';
import { ConfigError } from './config.ts';

/** The generated key's file name inside the data directory. */
export const KEY_FILE = 'fingerprint.key';

/** A configured secret of any length becomes a 32-byte HMAC key. */
function keyFromSecret(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/**
 * The key a server seals fingerprints and call ids with, from `PTC_FINGERPRINT_KEY`; without
 * one, from a key file in the data directory, generated on first start and reused after, so an
 * embedded server keeps resuming its programs across restarts. A server whose state is all in
 * memory (`persist: false`) writes nothing: its key is made for this process alone, and what it
 * sealed dies with it, as its stored responses do. Older secrets stay accepted.
 */
export function loadSealingKeys(options: { secret: string | undefined; oldSecrets: readonly string[]; dataDir: string; persist: boolean }): SealingKeys {
  const current =
    options.secret !== undefined
      ? keyFromSecret(options.secret)
      : options.persist
        ? keyFromFile(options.dataDir)
        : keyFromSecret(randomBytes(32).toString('hex'));
  return [current, ...options.oldSecrets.map(keyFromSecret)];
}

/** The secret a key file holds; an empty one would seal with a key anyone can compute. */
function secretIn(path: string): string {
  const secret = readFileSync(path, 'utf8').trim();
  if (secret === '') throw new ConfigError(`the key file ${path} is empty: delete it to have a new key generated, or set PTC_FINGERPRINT_KEY`);
  return secret;
}

function keyFromFile(dataDir: string): Buffer {
  const path = join(dataDir, KEY_FILE);
  try {
    return keyFromSecret(secretIn(path));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString('hex');
  try {
    // `wx`: if another process created the file first, use its key rather than overwrite it.
    writeFileSync(path, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    return keyFromSecret(secret);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return keyFromSecret(secretIn(path));
  }
}
