import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type OpenAI from 'openai';
import { toResponseInputItems } from 'openai/lib/responses/ResponseInputItems';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { afterAll, describe, expect, it } from 'vitest';
import { FingerprintError } from '../runtime/errors.ts';
import { canonicalJson, MAX_FINGERPRINT_LENGTH, openFingerprint, sealFingerprint, type FingerprintClaims } from '../runtime/fingerprint.ts';
import { DEFAULT_LIMITS } from '../runtime/limits.ts';
import type { ApiErrorCode } from '../schemas/error-codes.ts';
import { loadSealingKeys } from '../server/platform/sealing-keys.ts';
import { expectSdkError, rejectionOf } from './support/api-errors.ts';
import { functionCallsOf, inlineProgram, programOutputOf, programTools } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

const TOOLS = programTools('get');
const CODE = 'const a = await tools.get({step: 1}); if (a === "left") await tools.get({go: "left"}); else await tools.get({go: "right"}); text("done " + a)';

/** A program paused on its first call, and the store: false input that answers it. */
async function paused(server: RunningServer, output = 'left'): Promise<{ program: OpenAI.Responses.ResponseOutputItem.Program; input: ResponseInputItem[] }> {
  const user: ResponseInputItem = { role: 'user', content: inlineProgram(CODE) };
  const first = await server.client.responses.create({ model: 'm', store: false, input: [user], tools: TOOLS });
  const [call] = functionCallsOf(first);
  const program = first.output[0] as OpenAI.Responses.ResponseOutputItem.Program;
  return {
    program,
    input: [user, ...toResponseInputItems(first.output), { type: 'function_call_output', call_id: call!.call_id, output, caller: call!.caller ?? null }],
  };
}

function withFingerprint(input: ResponseInputItem[], fingerprint: string): ResponseInputItem[] {
  return input.map((item) => (item.type === 'program' ? { ...item, fingerprint } : item));
}

const temporary: string[] = [];
afterAll(() => {
  for (const directory of temporary) rmSync(directory, { recursive: true, force: true });
});
function temporaryDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), 'ptc-keys-'));
  temporary.push(directory);
  return directory;
}

describe('sealing keys', () => {
  it('generates a key file in the data directory on first start, private to its owner, and reuses it', () => {
    const dataDir = join(temporaryDirectory(), 'nested');
    const [first] = loadSealingKeys({ secret: undefined, oldSecrets: [], dataDir, persist: true });
    const [again] = loadSealingKeys({ secret: undefined, oldSecrets: [], dataDir, persist: true });
    expect(again.equals(first)).toBe(true);
    expect(readFileSync(join(dataDir, 'fingerprint.key'), 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);
    expect(statSync(join(dataDir, 'fingerprint.key')).mode & 0o777).toBe(0o600);
  });

  it('uses a configured secret instead of the file, and accepts old secrets after rotation', () => {
    const [current, ...old] = loadSealingKeys({ secret: 'new secret', oldSecrets: ['old secret'], dataDir: temporaryDirectory(), persist: true });
    const claims = { programCallId: 'call_x', codeSha256: 'h', seed: 1, clock: 2, limits: DEFAULT_LIMITS, tools: [] };
    const sealedWithOld = sealFingerprint(claims, old[0]!);
    expect(openFingerprint(sealedWithOld, [current, ...old])).toEqual(claims);
    expect(() => openFingerprint(sealedWithOld, [current])).toThrow(FingerprintError);
  });

  it('lets a server resume programs sealed before a key rotation', async () => {
    const before = await startServer({ config: { fingerprintKey: 'k1' } });
    const { input } = await paused(before);
    await before.close();
    const after = await startServer({ config: { fingerprintKey: 'k2', fingerprintOldKeys: ['k1'] } });
    try {
      const resumed = await after.client.responses.create({ model: 'm', store: false, input, tools: TOOLS });
      expect(functionCallsOf(resumed)[0]?.arguments).toBe('{"go":"left"}');
    } finally {
      await after.close();
    }
  });
});

describe('a tampered fingerprint is a 400 with its own code', () => {
  let server: RunningServer;
  it.each<[string, (fingerprint: string) => string, ApiErrorCode, string]>([
    ['truncated', (fingerprint: string) => fingerprint.slice(0, -10), 'fingerprint_invalid', 'its seal does not verify'],
    [
      'with an altered payload',
      (fingerprint: string) => fingerprint.replace(/\.(.)/, (_, c: string) => `.${c === 'A' ? 'B' : 'A'}`),
      'fingerprint_invalid',
      'its seal does not verify',
    ],
    [
      'forged with a made-up seal',
      (fingerprint: string) => `${fingerprint.split('.').slice(0, 2).join('.')}.${Buffer.alloc(32, 7).toString('base64url')}`,
      'fingerprint_invalid',
      'its seal does not verify',
    ],
    ['of an unknown version', (fingerprint: string) => fingerprint.replace(/^ptcfp3/, 'ptcfp9'), 'fingerprint_invalid', 'known version'],
    ['absurdly long', (fingerprint: string) => fingerprint + 'x'.repeat(MAX_FINGERPRINT_LENGTH), 'fingerprint_invalid', 'longer than any fingerprint'],
  ])('%s', async (_, tamper, code, mention) => {
    server ??= await startServer();
    const { program, input } = await paused(server);
    const error = await rejectionOf(
      server.client.responses.create({ model: 'm', store: false, input: withFingerprint(input, tamper(program.fingerprint)), tools: TOOLS }),
    );
    expectSdkError(error, { code, param: 'input[1].fingerprint', mentions: [program.call_id, mention] });
  });
  afterAll(() => server?.close());
});

/** The claims as the previous version, ptcfp2, sealed them (a tool's server `kind` in place of its `input` and `tag`), and sealed so. */
function sealedAsPtcfp2(claims: FingerprintClaims, key: Buffer): string {
  const tools = claims.tools.map(({ input: _input, tag, ...tool }) => (tag === undefined ? tool : { ...tool, kind: tag }));
  const payload = Buffer.from(canonicalJson({ ...claims, tools }), 'utf8').toString('base64url');
  return `ptcfp2.${payload}.${createHmac('sha256', key).update(`ptcfp2.${payload}`).digest('base64url')}`;
}

describe('a fingerprint of the previous version', () => {
  const claims: FingerprintClaims = {
    programCallId: 'call_x',
    codeSha256: 'h',
    seed: 1,
    clock: 2,
    limits: DEFAULT_LIMITS,
    tools: [{ name: 'note', input: 'text', tag: 'custom', parseOutputAsJson: false }],
  };
  const [key] = loadSealingKeys({ secret: 'a secret', oldSecrets: [], dataDir: '', persist: false });

  it('is refused by name, even sealed with the current key', () => {
    expect(() => openFingerprint(sealedAsPtcfp2(claims, key), [key])).toThrow(
      new FingerprintError(
        'it is a fingerprint of ptcfp2, not of the known version ptcfp3: a program paused by another version of the emulator cannot be resumed',
      ),
    );
    expect(openFingerprint(sealFingerprint(claims, key), [key])).toEqual(claims);
  });

  it('is a 400 fingerprint_invalid over HTTP that names both versions', async () => {
    const server = await startServer({ config: { fingerprintKey: 'k1' } });
    try {
      const [serverKey] = loadSealingKeys({ secret: 'k1', oldSecrets: [], dataDir: '', persist: false });
      const { program, input } = await paused(server);
      const old = sealedAsPtcfp2(openFingerprint(program.fingerprint, [serverKey]), serverKey);
      const error = await rejectionOf(server.client.responses.create({ model: 'm', store: false, input: withFingerprint(input, old), tools: TOOLS }));
      expectSdkError(error, {
        code: 'fingerprint_invalid',
        param: 'input[1].fingerprint',
        mentions: [program.call_id, 'ptcfp2', 'ptcfp3', 'cannot be resumed'],
      });
    } finally {
      await server.close();
    }
  });
});

describe("a sealed tool's tag is the server's tool kind", () => {
  it.each<[string, { tag?: string; input?: 'text' | 'json' }, string]>([
    ['a tag of no kind', { tag: 'telepathy' }, 'the tag "telepathy" and json input'],
    ['a kind with the wrong input', { tag: 'custom', input: 'json' }, 'the tag "custom" and json input'],
    ['text input with no tag', { input: 'text' }, 'no tag and text input'],
  ])('a fingerprint sealing %s is fingerprint_invalid', async (_, change, mention) => {
    const server = await startServer({ config: { fingerprintKey: 'k1' } });
    try {
      const [serverKey] = loadSealingKeys({ secret: 'k1', oldSecrets: [], dataDir: '', persist: false });
      const { program, input } = await paused(server);
      const claims = openFingerprint(program.fingerprint, [serverKey]);
      expect(claims.tools).toEqual([{ name: 'get', parseOutputAsJson: false }]);
      const resealed = sealFingerprint({ ...claims, tools: claims.tools.map((tool) => ({ ...tool, ...change })) }, serverKey);
      const error = await rejectionOf(server.client.responses.create({ model: 'm', store: false, input: withFingerprint(input, resealed), tools: TOOLS }));
      expectSdkError(error, { code: 'fingerprint_invalid', param: 'input[1].fingerprint', mentions: [program.call_id, 'tools.get', mention] });
    } finally {
      await server.close();
    }
  });
});

describe('divergence over HTTP', () => {
  it('ends the program incomplete with replay_diverged when an earlier output changes the path it took', async () => {
    const server = await startServer();
    try {
      const { input } = await paused(server, 'left');
      const second = await server.client.responses.create({ model: 'm', store: false, input, tools: TOOLS });
      const [call] = functionCallsOf(second);
      expect(call?.arguments).toBe('{"go":"left"}');
      // The client resends the history with the first output changed: the program would now go right.
      const rewritten = input.map((item) => (item.type === 'function_call_output' ? { ...item, output: 'right' } : item));
      const diverged = await server.client.responses.create({
        model: 'm',
        store: false,
        input: [
          ...rewritten,
          ...toResponseInputItems(second.output),
          { type: 'function_call_output', call_id: call!.call_id, output: 'x', caller: call!.caller ?? null },
        ],
        tools: TOOLS,
      });
      const output = programOutputOf(diverged);
      expect(output?.status).toBe('incomplete');
      expect(JSON.parse(output!.result)).toEqual({
        error: {
          code: 'replay_diverged',
          message:
            'The replay diverged at call 1, tools.get({"go":"right"}), where the recorded run made tools.get({"go":"left"}). Did an earlier tool output change since the program first received it?',
        },
      });
    } finally {
      await server.close();
    }
  });
});
