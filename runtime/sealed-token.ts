import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from './canonical-json.ts';

/**
 * The one sealing primitive of the emulator: what the server hands a client and must know again
 * unchanged (a program's fingerprint, a compaction item's content, a call's id) is sealed with
 * HMAC-SHA256 under the server's keys, readable but tamper-evident, compared in constant time,
 * and accepted under any key still configured (key rotation).
 *
 * Two forms: a token, `<version>.<base64url payload>.<base64url seal>`, whose seal covers the
 * version and the payload (fingerprints, compactions); and a MAC over a canonical list whose
 * first entries name what is sealed (a call's identity), for ids that carry only the seal.
 */

/** The seal of a token's payload under one key: the version is part of what is sealed. */
function tokenSeal(key: Buffer, version: string, payload: string): Buffer {
  return createHmac('sha256', key).update(`${version}.${payload}`).digest();
}

/** Whether two seals are the same bytes, in constant time. */
export function sameSeal(given: Buffer, expected: Buffer): boolean {
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** `<version>.<base64url of text>.<base64url seal>`, sealed with `key`. */
export function sealToken(version: string, text: string, key: Buffer): string {
  const payload = Buffer.from(text, 'utf8').toString('base64url');
  return `${version}.${payload}.${tokenSeal(key, version, payload).toString('base64url')}`;
}

/** Why a token was not opened: not a token, another version's (`found` names it), or a seal none of the keys made. */
export type TokenRefusal = { readonly reason: 'malformed' } | { readonly reason: 'version'; readonly found: string } | { readonly reason: 'seal' };

/**
 * The text a token of `version` carries, when one of `keys` sealed it; otherwise why not.
 * `versionPattern` says what another version of the same kind of token looks like, so that one
 * is told apart from something that is no token at all.
 */
export function openToken(token: string, version: string, keys: readonly Buffer[], versionPattern?: RegExp): { readonly text: string } | TokenRefusal {
  const parts = token.split('.');
  if (parts.length !== 3) return { reason: 'malformed' };
  const [found = '', payload = '', seal = ''] = parts;
  if (found !== version) return versionPattern?.test(found) ? { reason: 'version', found } : { reason: 'malformed' };
  const given = Buffer.from(seal, 'base64url');
  if (!keys.some((key) => sameSeal(given, tokenSeal(key, version, payload)))) return { reason: 'seal' };
  return { text: Buffer.from(payload, 'base64url').toString('utf8') };
}

/** The MAC of a canonical list (its first entries naming what is sealed, and for which version), under one key. */
export function listSeal(key: Buffer, parts: readonly unknown[]): Buffer {
  return createHmac('sha256', key).update(canonicalJson(parts)).digest();
}
