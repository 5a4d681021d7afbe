import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { ProgramLimits } from './limits.ts';

const VERSION = 'ptcfp1';

/** What a program's fingerprint binds: enough to re-run it identically and to detect edits. */
export interface FingerprintClaims {
  readonly programCallId: string;
  readonly codeSha256: string;
  readonly seed: number;
  readonly clock: number;
  readonly limits: ProgramLimits;
}

export class FingerprintError extends Error {}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** JSON with object keys sorted at every depth, so equal claims always seal to equal bytes. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${canonicalJson(inner)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function mac(key: Buffer, payload: string): Buffer {
  return createHmac('sha256', key).update(`${VERSION}.${payload}`).digest();
}

/** `ptcfp1.<base64url canonical claims>.<base64url HMAC-SHA256>`: opaque to clients, tamper-evident. */
export function sealFingerprint(claims: FingerprintClaims, key: Buffer): string {
  const payload = Buffer.from(canonicalJson(claims), 'utf8').toString('base64url');
  return `${VERSION}.${payload}.${mac(key, payload).toString('base64url')}`;
}

/**
 * Verifies a fingerprint against the current key and any older keys still accepted, and
 * returns its claims. Throws FingerprintError on anything malformed, forged or altered.
 */
export function openFingerprint(fingerprint: string, keys: readonly Buffer[]): FingerprintClaims {
  const parts = fingerprint.split('.');
  if (parts.length !== 3 || parts[0] !== VERSION) throw new FingerprintError('not a ptc-emulator fingerprint of a known version');
  const [, payload = '', signature = ''] = parts;
  const given = Buffer.from(signature, 'base64url');
  const sealedByUs = keys.some((key) => {
    const expected = mac(key, payload);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!sealedByUs) throw new FingerprintError('its seal does not verify: it was altered, forged or sealed by another server');
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw new FingerprintError('its payload is not JSON');
  }
  return claims as FingerprintClaims;
}
