import { z } from 'zod';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from '../schemas/json-depth.ts';
import { LIMIT_DEFINITIONS, type LimitName, type ProgramLimits } from './limits.ts';
import { canonicalJson, sha256Hex } from './canonical-json.ts';
import { SealedTool } from './program-tool.ts';
import { FingerprintError, FingerprintTooLargeError } from './errors.ts';
import { listSeal, openToken, sameSeal, sealToken } from './sealed-token.ts';

export { canonicalJson, sha256Hex };

// ptcfp2: the ids of items the emulator answers seal their answers (and an approval request's, its batch).
// ptcfp3: a sealed tool says what its calls take (`input`) and carries its embedder's `tag`, not a server `kind`.
const VERSION = 'ptcfp3';
/**
 * The longest fingerprint sealed or opened. Claims grow with the program's tools (~200
 * characters each), so this admits several thousand; sealing refuses what opening would, so
 * that no program is started that could never be resumed.
 */
export const MAX_FINGERPRINT_LENGTH = 1024 * 1024;

/** What a program's fingerprint binds: enough to re-run it identically and to detect edits. */
export interface FingerprintClaims {
  readonly programCallId: string;
  readonly codeSha256: string;
  readonly seed: number;
  readonly clock: number;
  readonly limits: ProgramLimits;
  /** The tools the program started with: a replay runs with these (their schemas by hash). */
  readonly tools: readonly SealedTool[];
}

const Claims = z.strictObject({
  programCallId: z.string(),
  codeSha256: z.string(),
  seed: z.number().int(),
  clock: z.number(),
  limits: z.strictObject(
    Object.fromEntries(Object.keys(LIMIT_DEFINITIONS).map((name) => [name, z.number().int().positive()])) as Record<LimitName, z.ZodNumber>,
  ),
  tools: z.array(SealedTool),
});

/** The keys a server seals with (the first) and accepts (all of them, for rotation). */
export type SealingKeys = readonly [Buffer, ...Buffer[]];

/** `ptcfp3.<base64url canonical claims>.<base64url HMAC-SHA256>` (a sealed token, sealed-token.ts): opaque to clients, tamper-evident. */
export function sealFingerprint(claims: FingerprintClaims, key: Buffer): string {
  const fingerprint = sealToken(VERSION, canonicalJson(claims), key);
  if (fingerprint.length > MAX_FINGERPRINT_LENGTH) {
    throw new FingerprintTooLargeError(
      `the fingerprint of a program with ${claims.tools.length} tools would be ${fingerprint.length} characters, over the ${MAX_FINGERPRINT_LENGTH} a server opens`,
    );
  }
  return fingerprint;
}

/**
 * Verifies a fingerprint against the current key and any older keys still accepted, and
 * returns its claims. Throws FingerprintError on anything malformed, forged or altered.
 */
export function openFingerprint(fingerprint: string, keys: readonly Buffer[]): FingerprintClaims {
  if (fingerprint.length > MAX_FINGERPRINT_LENGTH) throw new FingerprintError('it is longer than any fingerprint this server seals');
  const opened = openToken(fingerprint, VERSION, keys, /^ptcfp\d{1,3}$/);
  if ('reason' in opened) {
    switch (opened.reason) {
      case 'version':
        throw new FingerprintError(
          `it is a fingerprint of ${opened.found}, not of the known version ${VERSION}: a program paused by another version of the emulator cannot be resumed`,
        );
      case 'malformed':
        throw new FingerprintError('not a ptc-emulator fingerprint of a known version');
      case 'seal':
        throw new FingerprintError('its seal does not verify: it was altered, forged or sealed by another server');
    }
  }
  let claims: unknown;
  try {
    claims = JSON.parse(opened.text);
  } catch {
    throw new FingerprintError('its payload is not JSON');
  }
  const parsed = Claims.safeParse(claims);
  if (!parsed.success) throw new FingerprintError('its claims are not those of this version');
  return parsed.data;
}

/** One call a program made: what its call_id seals. */
export interface CallIdentity {
  readonly programCallId: string;
  readonly seq: number;
  readonly tool: string;
  /** A function call's arguments (JSON), or, when `text` is set, a custom tool call's input. */
  readonly argumentsJson: string;
  readonly text?: boolean;
  /**
   * The seq of the last call of the batch this call was made in, for the ids that must say
   * which batch they belong to (an MCP approval request: was its batch answered already?).
   */
  readonly batchEnd?: number;
  /**
   * A digest of the answer the program got, for the ids of items that carry their own answer
   * (an mcp_call, a code_interpreter_call, a hosted shell's output): a changed answer no longer
   * matches its id.
   */
  readonly answer?: string;
}

/** The MAC of what identifies the call itself: its program, position, tool and canonical input (undefined: input no program can have made). */
function identityMac(key: Buffer, call: CallIdentity): Buffer | undefined {
  if (call.text === true) {
    return listSeal(key, [VERSION, 'text-call', call.programCallId, call.seq, call.tool, call.argumentsJson]);
  }
  let args: string;
  try {
    const parsed: unknown = JSON.parse(call.argumentsJson);
    // Arguments a program cannot have made (nested too deep to canonicalise without recursing that far) match nothing.
    if (jsonDepthExceeds(parsed, MAX_JSON_DEPTH)) return undefined;
    args = canonicalJson(parsed);
  } catch {
    return undefined;
  }
  return listSeal(key, [VERSION, 'call', call.programCallId, call.seq, call.tool, args]);
}

/**
 * The sealed part of a call's id: the identity's MAC, bound (by a second, cheap MAC over it) to
 * the batch end or answer when the id carries them, so checking many of those for one call
 * canonicalises its arguments once.
 */
function sealedMac(key: Buffer, identity: Buffer, extra: Pick<CallIdentity, 'batchEnd' | 'answer'>): Buffer {
  if (extra.batchEnd === undefined && extra.answer === undefined) return identity.subarray(0, 12);
  const tail = [...(extra.batchEnd === undefined ? [] : [{ batchEnd: extra.batchEnd }]), ...(extra.answer === undefined ? [] : [{ answer: extra.answer }])];
  return listSeal(key, [VERSION, 'sealed', identity.toString('hex'), ...tail]).subarray(0, 12);
}

function callMac(key: Buffer, call: CallIdentity): Buffer | undefined {
  const identity = identityMac(key, call);
  return identity && sealedMac(key, identity, call);
}

/**
 * The id of a program's call: a prefix (the caller's: `call_` for a call_id, another for the id
 * of an item the emulator answers itself) and a MAC over the program, the call's position,
 * its tool and canonical arguments (a custom tool's input as it is). The same call always gets
 * the same id, live or replayed, and a resent call whose name, arguments or position changed
 * no longer matches its id.
 */
export function sealCallId(key: Buffer, call: CallIdentity, prefix: string): string {
  const digest = callMac(key, call);
  if (!digest) throw new TypeError('call arguments must be JSON');
  return `${prefix}_${digest.toString('hex')}`;
}

/**
 * The batch end (one of `ends`) with which one of `keys` seals `callId` for this call, if any:
 * the call's identity is computed once per key, whatever the number of ends tried.
 */
export function sealedBatchEnd(callId: string, call: CallIdentity, keys: readonly Buffer[], prefix: string, ends: readonly number[]): number | undefined {
  if (!callId.startsWith(`${prefix}_`)) return undefined;
  const given = Buffer.from(callId.slice(prefix.length + 1), 'hex');
  for (const key of keys) {
    const identity = identityMac(key, call);
    if (!identity) return undefined;
    const end = ends.find((candidate) => sameSeal(given, sealedMac(key, identity, { batchEnd: candidate })));
    if (end !== undefined) return end;
  }
  return undefined;
}

/** True when `callId` is what one of `keys` seals for this call, with this prefix. */
export function callIdMatches(callId: string, call: CallIdentity, keys: readonly Buffer[], prefix: string): boolean {
  if (!callId.startsWith(`${prefix}_`)) return false;
  const given = Buffer.from(callId.slice(prefix.length + 1), 'hex');
  return keys.some((key) => {
    const expected = callMac(key, call);
    return expected !== undefined && sameSeal(given, expected);
  });
}
