import { createHmac, randomBytes } from 'node:crypto';

/** Bytes of key in a signing secret the emulator makes (`whsec_` and their base64). */
const SECRET_BYTES = 32;

/** A new signing secret, `whsec_<base64 of 32 random bytes>`, as the hosted endpoints get. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/** The masked hint of a secret an endpoint shows after it was created: its start and its last four characters. */
export function signingSecretHint(secret: string): string {
  return `${secret.slice(0, secret.startsWith('whsec_') ? 6 : 0)}…${secret.slice(-4)}`;
}

/**
 * The key a secret stands for, as `client.webhooks.unwrap()` reads it: the base64 after
 * `whsec_`, or else the secret's own UTF-8 bytes (a secret set by hand may be any string).
 */
function keyOf(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice('whsec_'.length), 'base64') : Buffer.from(secret, 'utf8');
}

/** The headers that make `payload` verifiable (Standard Webhooks, as the SDK's `unwrap()` checks them). */
export interface SignedHeaders {
  readonly 'webhook-id': string;
  readonly 'webhook-timestamp': string;
  readonly 'webhook-signature': string;
}

/**
 * Signs one delivery: HMAC-SHA256 over `<webhook-id>.<timestamp>.<payload>`, base64, as `v1,<sig>`;
 * one signature per secret, space-separated (during a rotation that keeps the old secret, a
 * receiver holding either verifies).
 */
export function signDelivery(webhookId: string, payload: string, secrets: readonly string[], nowMs = Date.now()): SignedHeaders {
  const timestamp = String(Math.floor(nowMs / 1000));
  const signatures = secrets.map((secret) => `v1,${createHmac('sha256', keyOf(secret)).update(`${webhookId}.${timestamp}.${payload}`).digest('base64')}`);
  return { 'webhook-id': webhookId, 'webhook-timestamp': timestamp, 'webhook-signature': signatures.join(' ') };
}
