import fc from 'fast-check';
import { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ERRORS } from '../schemas/error-codes.ts';
import { CreateResponseRequest } from '../schemas/request.ts';
import { ErrorEnvelope, type ResponseObject } from '../schemas/response.ts';
import {
  cloneTree,
  expectAnswer,
  expectErrorEnvelope,
  expectHealthy,
  expectResponseObject,
  hasMarkers,
  isObject,
  judgeKnobHeaders,
  KNOB_RULES,
  mutate,
  nestMutation,
  postResponses,
  rawExchange,
  RawNumber,
  shallowMutation,
  text,
  toJsonText,
  validRequest,
  type HeaderList,
  type HttpAnswer,
  type RawExchange,
  type RawResponse,
  type Tree,
  type TreeObject,
} from './support/fuzz-http.ts';
import { REQUEST_ID } from './support/api-errors.ts';
import { answer as toolAnswer, generatedProgram, JSON_TOOL, STRING_TOOLS } from './support/program-generator.ts';
import { startServer, type RunningServer } from './support/server.ts';

/**
 * Property-based fuzzing of the HTTP surface: whatever a client sends, POST /v1/responses answers
 * 200 with a strict Response or a 4xx in OpenAI's exact envelope, never a 5xx, never hangs, and
 * the process keeps serving. Seeds are fixed so CI is reproducible; fast-check prints the seed,
 * the path and the shrunk counterexample of a failure (rerun one with `{ seed, path }`).
 */

const MODEL = 'ptc-emulator';
/** Generous: fast-check shrinks a failure by re-running requests, and that takes time. */
const PROPERTY_TIMEOUT = 180_000;
/**
 * A failure whose shrinking outlives the test (each attempt at a hang waits HANG_MS) is still
 * reported with the best counterexample so far, before vitest's timeout would swallow it.
 */
const BOUNDED = { interruptAfterTimeLimit: 150_000, markInterruptAsFailure: true } as const;

let server: RunningServer;
let root: string;
beforeAll(async () => {
  server = await startServer({ config: { apiKey: undefined } });
  root = server.baseURL.replace(/\/v1$/, '');
});
afterAll(() => server.close());

function headerNamesOf(headers: readonly (readonly [string, string])[]): Set<string> {
  return new Set(headers.map(([name]) => name.toLowerCase()));
}

// ---- 1. arbitrary JSON ------------------------------------------------------------------------------

const TOP_LEVEL_KEYS = Object.keys(CreateResponseRequest.shape);
const ITEM_KEYS = ['type', 'role', 'content', 'id', 'call_id', 'name', 'arguments', 'output', 'caller', 'code', 'fingerprint', 'result', 'status', 'summary'];
const TOOL_KEYS = ['type', 'name', 'parameters', 'allowed_callers', 'description', 'strict', 'output_schema', 'tools'];

const hugeNumber = fc
  .constantFrom('1e400', '-1e400', '123456789012345678901234567890', '9007199254740993', '-0', '1E-400', '0.1e1')
  .map((literal) => new RawNumber(literal));
const anyJson: fc.Arbitrary<Tree> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 5 }) as fc.Arbitrary<Tree> },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4, stringUnit: 'binary' }) as fc.Arbitrary<Tree> },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4, stringUnit: 'grapheme' }) as fc.Arbitrary<Tree> },
  { weight: 1, arbitrary: hugeNumber },
  { weight: 1, arbitrary: fc.constantFrom<Tree>(null, [], {}, '', 0, true) },
);
const jsonBody: fc.Arbitrary<Tree> = fc.oneof(
  anyJson,
  fc.jsonValue({ maxDepth: 10, depthSize: 'medium' }) as fc.Arbitrary<Tree>,
  // Nearly valid: a model and an input, and one more parameter with any value.
  fc
    .tuple(
      fc.string({ unit: 'grapheme', maxLength: 8 }),
      fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), anyJson),
      fc.constantFrom(...TOP_LEVEL_KEYS),
      anyJson,
    )
    .map(([model, input, key, value]): Tree => ({ model, input, [key]: value })),
  fc.dictionary(fc.oneof(fc.constantFrom(...TOP_LEVEL_KEYS), fc.string({ maxLength: 8 })), anyJson, { maxKeys: 6 }) as fc.Arbitrary<Tree>,
  fc.record(
    {
      model: fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), anyJson),
      input: fc.oneof(anyJson, fc.array(fc.dictionary(fc.constantFrom(...ITEM_KEYS), anyJson, { maxKeys: 5 }) as fc.Arbitrary<Tree>, { maxLength: 4 })),
      tools: fc.oneof(anyJson, fc.array(fc.dictionary(fc.constantFrom(...TOOL_KEYS), anyJson, { maxKeys: 4 }) as fc.Arbitrary<Tree>, { maxLength: 3 })),
      tool_choice: anyJson,
      metadata: anyJson,
      text: anyJson,
      reasoning: anyJson,
      previous_response_id: anyJson,
      store: anyJson,
      stream: anyJson,
      background: anyJson,
      max_output_tokens: anyJson,
      temperature: anyJson,
    },
    { requiredKeys: [] },
  ) as fc.Arbitrary<Tree>,
);

describe('1. arbitrary JSON bodies', () => {
  it(
    'every answer is a strict 200 or a 4xx in the exact envelope with an x-request-id; never a 5xx',
    async () => {
      await fc.assert(
        fc.asyncProperty(jsonBody, async (body) => {
          const sent = toJsonText(body);
          expectAnswer(await postResponses(server.baseURL, sent), { request: sent });
        }),
        { ...BOUNDED, seed: 0x1f00d, numRuns: 1000 },
      );
      await expectHealthy(root);
    },
    PROPERTY_TIMEOUT,
  );
});

// ---- 2. near-miss bodies --------------------------------------------------------------------------

/** Sends through the SDK (asResponse keeps the wire bytes) when the body has nothing only raw text can carry. */
async function sendViaSdk(body: Tree, headers: HeaderList): Promise<HttpAnswer> {
  try {
    const response = await server.client.responses.create(body as never, { headers: Object.fromEntries(headers) }).asResponse();
    const flat: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      flat[name] = value;
    });
    return { status: response.status, headers: flat, text: await response.text() };
  } catch (error) {
    if (!(error instanceof APIError) || error.status === undefined) throw error;
    // The SDK read the body as JSON; rebuild the wire answer from what it kept.
    const flat: Record<string, string> = {};
    error.headers?.forEach((value: string, name: string) => {
      flat[name] = value;
    });
    return { status: error.status, headers: flat, text: JSON.stringify({ error: error.error }) };
  }
}

describe('2. near-miss bodies: valid requests, then mutated', () => {
  it(
    'valid requests (every item and tool type, knob headers) get a strict 200, raw and through the SDK',
    async () => {
      await fc.assert(
        fc.asyncProperty(validRequest, fc.boolean(), async (request, viaSdk) => {
          const sent = toJsonText(request.body);
          const answer = viaSdk ? await sendViaSdk(request.body, request.headers) : await postResponses(server.baseURL, sent, request.headers);
          expectResponseObject(answer, `${JSON.stringify(request.headers)} ${sent}`);
        }),
        { ...BOUNDED, seed: 0x2a11d, numRuns: 300 },
      );
      await expectHealthy(root);
    },
    PROPERTY_TIMEOUT,
  );

  it(
    'mutated requests get a strict 200 or a 4xx in the envelope with a non-empty message; never a 5xx',
    async () => {
      await fc.assert(
        fc.asyncProperty(validRequest, fc.array(shallowMutation, { minLength: 1, maxLength: 4 }), fc.boolean(), async (request, mutations, viaSdk) => {
          const { body, headers } = mutate(request, mutations);
          const sent = toJsonText(body);
          const answer = viaSdk && !hasMarkers(body) ? await sendViaSdk(body, headers) : await postResponses(server.baseURL, sent, headers);
          expectAnswer(answer, { request: `${JSON.stringify(headers)} ${sent}` });
        }),
        { ...BOUNDED, seed: 0x2b0d1e5, numRuns: 1000 },
      );
      await expectHealthy(root);
    },
    PROPERTY_TIMEOUT,
  );

  it(
    "a 4xx's param names the request: a header it sent, a field that holds a value, or (missing field) an absent key of an object that is there",
    async () => {
      await fc.assert(
        fc.asyncProperty(validRequest, fc.array(shallowMutation, { minLength: 1, maxLength: 3 }), async (request, mutations) => {
          const { body, headers } = mutate(request, mutations);
          const sent = toJsonText(body);
          const answer = await postResponses(server.baseURL, sent, headers);
          // Status and envelope are the previous property's; this one judges where the error points.
          if (answer.status < 400 || answer.status >= 500) return;
          expectErrorEnvelope(answer, { body, headerNames: headerNamesOf(headers), request: `${JSON.stringify(headers)} ${sent}` });
        }),
        { ...BOUNDED, seed: 0x9a7a3, numRuns: 1000 },
      );
      await expectHealthy(root);
    },
    PROPERTY_TIMEOUT,
  );

  it(
    'absurd nesting (up to 100 000 levels, well under the body limit) anywhere in a request: a strict 200 or a 4xx, never a 5xx',
    async () => {
      await fc.assert(
        fc.asyncProperty(validRequest, nestMutation, fc.array(shallowMutation, { maxLength: 1 }), async (request, nest, more) => {
          const { body, headers } = mutate(request, [nest, ...more]);
          const sent = toJsonText(body);
          expectAnswer(await postResponses(server.baseURL, sent, headers), { request: `${JSON.stringify(headers)} ${sent}` });
        }),
        { ...BOUNDED, seed: 0xdee9, numRuns: 200 },
      );
      await expectHealthy(root);
    },
    PROPERTY_TIMEOUT,
  );
});

// ---- 3. item sequences for continuation -----------------------------------------------------------

const PROGRAMS = [
  "const [a, b] = await Promise.all([tools.alpha({k: 1}), tools.beta({k: 2})]);\nconst c = await tools.gamma({k: a + b});\ntext([a, b, c].join('|'));",
  "const s = [];\nfor (let i = 0; i < 3; i++) s.push(await tools.alpha({i}));\ntext(s.join(','));",
  'const r = await tools.delta({q: 1});\ntext(JSON.stringify(r));',
  "const a = await tools.alpha({});\nif (a.length > 3) throw new Error('long ' + a);\ntext(a);",
  "text('no calls at all');",
];

const PROGRAM_TOOLS: TreeObject[] = [
  ...STRING_TOOLS.map(
    (name): TreeObject => ({
      type: 'function',
      name,
      parameters: { type: 'object', properties: {}, additionalProperties: true },
      strict: false,
      allowed_callers: ['programmatic'],
    }),
  ),
  {
    type: 'function',
    name: JSON_TOOL,
    parameters: { type: 'object', properties: {}, additionalProperties: true },
    strict: false,
    allowed_callers: ['programmatic'],
    output_schema: { type: 'object' },
  },
  { type: 'programmatic_tool_calling' },
];

const inlineProgram = (code: string): string => `Run this:\n\`\`\`js\n${code}\n\`\`\``;

function isProgramCall(item: Tree): item is TreeObject {
  return isObject(item) && item['type'] === 'function_call' && isObject(item['caller']) && item['caller']['type'] === 'program';
}

/** What an honest client sends back for the calls a response made: each output with its caller copied. */
function honestOutputs(output: readonly Tree[]): TreeObject[] {
  return output.filter(isProgramCall).map((call) => ({
    type: 'function_call_output',
    call_id: call['call_id'] as string,
    output: toolAnswer(String(call['name']), String(call['arguments'])),
    caller: cloneTree(call['caller']!) as TreeObject,
  }));
}

/** Items of real programs from other conversations: a program only the server could have sealed, its calls and their outputs. */
interface ForeignPool {
  readonly responseIds: string[];
  readonly programs: TreeObject[];
  readonly calls: TreeObject[];
  readonly outputs: TreeObject[];
  readonly programOutputs: TreeObject[];
  readonly messages: TreeObject[];
}

type CallIdChoice = { readonly from: 'random'; readonly value: Tree } | { readonly from: 'real' | 'foreign'; readonly index: number };
type CallerChoice =
  | { readonly kind: 'absent' | 'direct' | 'null' | 'malformed' }
  | { readonly kind: 'program'; readonly of: 'real' | 'foreign' | 'random'; readonly index: number };
type FingerprintChoice =
  | { readonly kind: 'random'; readonly value: string }
  | { readonly kind: 'foreign' | 'truncate' | 'flip' | 'other-real'; readonly index: number }
  | { readonly kind: 'version' };

type Alteration =
  | { readonly kind: 'drop' | 'duplicate'; readonly at: number }
  | { readonly kind: 'swap'; readonly a: number; readonly b: number }
  | { readonly kind: 'move'; readonly from: number; readonly to: number }
  | { readonly kind: 'truncate'; readonly keep: number }
  | { readonly kind: 'reverse' }
  | { readonly kind: 'call-id'; readonly at: number; readonly choice: CallIdChoice }
  | { readonly kind: 'caller'; readonly at: number; readonly choice: CallerChoice }
  | { readonly kind: 'fingerprint'; readonly at: number; readonly choice: FingerprintChoice }
  | { readonly kind: 'code'; readonly at: number; readonly suffix: string }
  | { readonly kind: 'arguments'; readonly at: number; readonly value: string }
  | { readonly kind: 'name'; readonly at: number; readonly value: string }
  | { readonly kind: 'output'; readonly at: number; readonly value: Tree }
  | {
      readonly kind: 'program-output';
      readonly at: number;
      readonly target: 'real' | 'foreign' | 'random';
      readonly index: number;
      readonly result: string;
      readonly status: string;
    }
  | { readonly kind: 'foreign-item'; readonly at: number; readonly index: number }
  | { readonly kind: 'foreign-thread'; readonly at: number; readonly index: number }
  | { readonly kind: 'random-program'; readonly at: number; readonly code: string; readonly fingerprint: string; readonly callId: string }
  | { readonly kind: 'message'; readonly at: number; readonly role: string; readonly text: string }
  | {
      readonly kind: 'direct-pair';
      readonly at: number;
      readonly name: string;
      readonly parts: 'both' | 'call' | 'output' | 'mismatch';
      readonly caller: 'absent' | 'direct' | 'program';
    }
  | { readonly kind: 'strip-ids' }
  | { readonly kind: 'status'; readonly at: number; readonly value: Tree };

const at = fc.nat();
const callerChoice: fc.Arbitrary<CallerChoice> = fc.oneof(
  fc.constantFrom<CallerChoice>({ kind: 'absent' }, { kind: 'direct' }, { kind: 'null' }, { kind: 'malformed' }),
  fc.record({ kind: fc.constant('program' as const), of: fc.constantFrom('real' as const, 'foreign' as const, 'random' as const), index: fc.nat() }),
);
const alteration: fc.Arbitrary<Alteration> = fc.oneof(
  fc.record({ kind: fc.constantFrom('drop' as const, 'duplicate' as const), at }),
  fc.record({ kind: fc.constant('swap' as const), a: fc.nat(), b: fc.nat() }),
  fc.record({ kind: fc.constant('move' as const), from: fc.nat(), to: fc.nat() }),
  fc.record({ kind: fc.constant('truncate' as const), keep: fc.nat(6) }),
  fc.constant({ kind: 'reverse' as const }),
  fc.record({
    kind: fc.constant('call-id' as const),
    at,
    choice: fc.oneof(
      fc.record({
        from: fc.constant('random' as const),
        value: fc.constantFrom<Tree>('call_forged', '', 7, null, ['call_x'], { id: 'x' }, 'call_' + 'f'.repeat(3000), 'call_\uD800'),
      }),
      fc.record({ from: fc.constantFrom('real' as const, 'foreign' as const), index: fc.nat() }),
    ),
  }),
  fc.record({ kind: fc.constant('caller' as const), at, choice: callerChoice }),
  fc.record({
    kind: fc.constant('fingerprint' as const),
    at,
    choice: fc.oneof(
      fc.record({
        kind: fc.constant('random' as const),
        value: fc.constantFrom('', 'x', 'ptcfp1.e30.AAAA', 'ptcfp1..', 'ptcfp3.a.b', 'ptcfp1.' + 'A'.repeat(20_000) + '.x', '\uD800'),
      }),
      fc.record({ kind: fc.constantFrom('foreign' as const, 'truncate' as const, 'flip' as const, 'other-real' as const), index: fc.nat() }),
      fc.constant({ kind: 'version' as const }),
    ),
  }),
  fc.record({ kind: fc.constant('code' as const), at, suffix: fc.constantFrom(' ', '\n', '// edited', 'text(1)') }),
  fc.record({ kind: fc.constant('arguments' as const), at, value: fc.constantFrom('{}', '{"k":2}', 'not json', '') }),
  fc.record({ kind: fc.constant('name' as const), at, value: fc.constantFrom('alpha', 'beta', 'delta', 'nonexistent', '') }),
  fc.record({
    kind: fc.constant('output' as const),
    at,
    value: fc.oneof(
      text as fc.Arbitrary<Tree>,
      fc.constantFrom<Tree>(
        '{"v": 1}',
        'x'.repeat(100_000),
        [{ type: 'input_text', text: 'parts' }],
        [],
        [{ type: 'input_image', image_url: 'https://example.com/i.png' }],
      ),
    ),
  }),
  fc.record({
    kind: fc.constant('program-output' as const),
    at,
    target: fc.constantFrom('real' as const, 'foreign' as const, 'random' as const),
    index: fc.nat(),
    result: fc.constantFrom('', 'done', '{"error":{"code":"x"}}'),
    status: fc.constantFrom('completed', 'incomplete'),
  }),
  fc.record({ kind: fc.constant('foreign-item' as const), at, index: fc.nat() }),
  fc.record({ kind: fc.constant('foreign-thread' as const), at, index: fc.nat() }),
  fc.record({
    kind: fc.constant('random-program' as const),
    at,
    code: fc.constantFrom(PROGRAMS[0]!, 'text(1)', ''),
    fingerprint: fc.constantFrom('fp', 'ptcfp1.x.y', ''),
    callId: fc.constantFrom('call_random_prog', 'call_x'),
  }),
  fc.record({
    kind: fc.constant('message' as const),
    at,
    role: fc.constantFrom('user', 'assistant', 'developer'),
    text: fc.constantFrom(
      'hello',
      'and now?',
      inlineProgram("text('inline')"),
      inlineProgram("const x = await tools.alpha({}); text(x + '!');"),
      inlineProgram('syntax error ('),
    ),
  }),
  fc.record({
    kind: fc.constant('direct-pair' as const),
    at,
    name: fc.constantFrom('alpha', 'lookup'),
    parts: fc.constantFrom('both' as const, 'call' as const, 'output' as const, 'mismatch' as const),
    caller: fc.constantFrom('absent' as const, 'direct' as const, 'program' as const),
  }),
  fc.constant({ kind: 'strip-ids' as const }),
  fc.record({ kind: fc.constant('status' as const), at, value: fc.constantFrom<Tree>('in_progress', 'completed', 'incomplete', 'failed', null) }),
);

function nth<T>(list: readonly T[], index: number): T | undefined {
  return list.length === 0 ? undefined : list[index % list.length];
}

function withType(items: Tree[], ...types: string[]): TreeObject[] {
  return items.filter((item): item is TreeObject => isObject(item) && types.includes(String(item['type'])));
}

function callerFor(choice: CallerChoice, realPrograms: readonly string[], pool: ForeignPool): Tree | undefined {
  switch (choice.kind) {
    case 'absent':
      return undefined;
    case 'direct':
      return { type: 'direct' };
    case 'null':
      return null;
    case 'malformed':
      return { type: 'program' };
    case 'program': {
      const ids = choice.of === 'real' ? realPrograms : choice.of === 'foreign' ? pool.programs.map((program) => String(program['call_id'])) : ['call_nobody'];
      return { type: 'program', caller_id: nth(ids, choice.index) ?? 'call_nobody' };
    }
  }
}

/** Applies the alterations to a copy of the items; each one without a target does nothing. */
function alter(base: readonly Tree[], alterations: readonly Alteration[], pool: ForeignPool): Tree[] {
  const items = base.map(cloneTree);
  const realPrograms = withType(items, 'program').map((program) => String(program['call_id']));
  const realCallIds = withType(items, 'function_call').map((call) => String(call['call_id']));
  const realFingerprints = withType(items, 'program').map((program) => String(program['fingerprint']));
  const position = (index: number): number => index % (items.length + 1);
  for (const change of alterations) {
    switch (change.kind) {
      case 'drop':
        if (items.length > 0) items.splice(change.at % items.length, 1);
        break;
      case 'duplicate':
        if (items.length > 0) items.splice(change.at % items.length, 0, cloneTree(items[change.at % items.length]!));
        break;
      case 'swap':
        if (items.length >= 2) {
          const a = change.a % items.length;
          const b = change.b % items.length;
          [items[a], items[b]] = [items[b]!, items[a]!];
        }
        break;
      case 'move':
        if (items.length >= 2) {
          const [moved] = items.splice(change.from % items.length, 1);
          items.splice(change.to % (items.length + 1), 0, moved!);
        }
        break;
      case 'truncate':
        items.length = Math.min(items.length, change.keep);
        break;
      case 'reverse':
        items.reverse();
        break;
      case 'call-id': {
        const target = nth(withType(items, 'function_call', 'function_call_output', 'program', 'program_output'), change.at);
        if (!target) break;
        const { choice } = change;
        const foreignIds = pool.calls.map((call) => String(call['call_id']));
        target['call_id'] =
          choice.from === 'random' ? cloneTree(choice.value) : (nth(choice.from === 'real' ? realCallIds : foreignIds, choice.index) ?? 'call_none');
        break;
      }
      case 'caller': {
        const target = nth(withType(items, 'function_call', 'function_call_output'), change.at);
        if (!target) break;
        const caller = callerFor(change.choice, realPrograms, pool);
        if (caller === undefined) delete target['caller'];
        else target['caller'] = caller;
        break;
      }
      case 'fingerprint': {
        const target = nth(withType(items, 'program'), change.at);
        if (!target) break;
        const current = String(target['fingerprint']);
        const { choice } = change;
        if (choice.kind === 'random') target['fingerprint'] = choice.value;
        else if (choice.kind === 'foreign') target['fingerprint'] = String(nth(pool.programs, choice.index)?.['fingerprint'] ?? 'none');
        else if (choice.kind === 'other-real') target['fingerprint'] = nth(realFingerprints, choice.index) ?? current;
        else if (choice.kind === 'truncate') target['fingerprint'] = current.slice(0, choice.index % (current.length + 1));
        else if (choice.kind === 'flip') {
          const index = choice.index % Math.max(1, current.length);
          const flipped = current[index] === 'A' ? 'B' : 'A';
          target['fingerprint'] = `${current.slice(0, index)}${flipped}${current.slice(index + 1)}`;
        } else target['fingerprint'] = current.replace(/^ptcfp3/, 'ptcfp9');
        break;
      }
      case 'code': {
        const target = nth(withType(items, 'program'), change.at);
        if (target) target['code'] = `${String(target['code'])}${change.suffix}`;
        break;
      }
      case 'arguments': {
        const target = nth(withType(items, 'function_call'), change.at);
        if (target) target['arguments'] = change.value;
        break;
      }
      case 'name': {
        const target = nth(withType(items, 'function_call'), change.at);
        if (target) target['name'] = change.value;
        break;
      }
      case 'output': {
        const target = nth(withType(items, 'function_call_output'), change.at);
        if (target) target['output'] = cloneTree(change.value);
        break;
      }
      case 'program-output': {
        const callId =
          change.target === 'real'
            ? nth(realPrograms, change.index)
            : change.target === 'foreign'
              ? String(nth(pool.programs, change.index)?.['call_id'] ?? '')
              : 'call_random_prog';
        if (callId) items.splice(position(change.at), 0, { type: 'program_output', call_id: callId, result: change.result, status: change.status });
        break;
      }
      case 'foreign-item': {
        const candidates = [...pool.programs, ...pool.calls, ...pool.outputs, ...pool.programOutputs, ...pool.messages];
        const item = nth(candidates, change.index);
        if (item) items.splice(position(change.at), 0, cloneTree(item));
        break;
      }
      case 'foreign-thread': {
        // Another conversation's paused program with its calls answered: two programs resume in one turn.
        const program = nth(pool.programs, change.index);
        if (!program) break;
        const ofProgram = (item: TreeObject): boolean => isObject(item['caller']) && item['caller']['caller_id'] === program['call_id'];
        items.splice(position(change.at), 0, ...[program, ...pool.calls.filter(ofProgram), ...pool.outputs.filter(ofProgram)].map(cloneTree));
        break;
      }
      case 'random-program':
        items.splice(position(change.at), 0, {
          type: 'program',
          id: 'prog_random',
          call_id: change.callId,
          code: change.code,
          fingerprint: change.fingerprint,
        });
        break;
      case 'message':
        items.splice(position(change.at), 0, { type: 'message', role: change.role, content: change.text });
        break;
      case 'direct-pair': {
        const caller: Tree | undefined =
          change.caller === 'absent'
            ? undefined
            : change.caller === 'direct'
              ? { type: 'direct' }
              : { type: 'program', caller_id: realPrograms[0] ?? 'call_nobody' };
        const call: TreeObject = {
          type: 'function_call',
          call_id: 'call_direct_1',
          name: change.name,
          arguments: '{}',
          ...(caller === undefined ? {} : { caller }),
        };
        const output: TreeObject = {
          type: 'function_call_output',
          call_id: change.parts === 'mismatch' ? 'call_direct_2' : 'call_direct_1',
          output: 'ok',
          ...(caller === undefined ? {} : { caller: cloneTree(caller) }),
        };
        const pair = change.parts === 'call' ? [call] : change.parts === 'output' ? [output] : [call, output];
        items.splice(position(change.at), 0, ...pair);
        break;
      }
      case 'strip-ids':
        for (const item of items) if (isObject(item)) delete item['id'];
        break;
      case 'status': {
        const target = nth(withType(items, 'program_output', 'function_call', 'function_call_output', 'message'), change.at);
        if (target) target['status'] = cloneTree(change.value);
        break;
      }
    }
  }
  return items;
}

interface Step {
  readonly alterations: readonly Alteration[];
  /** With previous_response_id: the real previous response, another conversation's, or one that does not exist. */
  readonly previous: 'real' | 'foreign' | 'unknown';
  /** After a 4xx, resend the unaltered request: a rejected request must not have changed anything. */
  readonly retryHonest: boolean;
  /** Send the request twice at once (same program resumed concurrently). */
  readonly concurrent: boolean;
}

const step: fc.Arbitrary<Step> = fc.record({
  alterations: fc.oneof({ weight: 1, arbitrary: fc.constant([]) }, { weight: 4, arbitrary: fc.array(alteration, { minLength: 1, maxLength: 3 }) }),
  previous: fc.constantFrom('real' as const, 'real' as const, 'real' as const, 'foreign' as const, 'unknown' as const),
  retryHonest: fc.boolean(),
  concurrent: fc.boolean(),
});

const checksHeader = fc.constantFrom<HeaderList>([], [['x-ptc-client-checks', 'strict']], [['x-ptc-client-checks', 'lenient']]);

describe.each([
  { where: 'isolates in the server process', workers: 0, runs: 1 },
  { where: 'isolates in a worker process', workers: 1, runs: 0.5 },
])('3. item sequences for continuation ($where)', ({ workers, runs }) => {
  let loop: RunningServer;
  const pool: ForeignPool = { responseIds: [], programs: [], calls: [], outputs: [], programOutputs: [], messages: [] };

  beforeAll(async () => {
    // Few paused isolates: resumes keep switching between the warm isolate and a replay.
    loop = await startServer({ config: { apiKey: undefined, maxPausedPrograms: 8, workers } });
    for (const code of [...PROGRAMS.slice(0, 3), PROGRAMS[4]!]) {
      const created = await loop.client.responses.create({ model: MODEL, input: inlineProgram(code), tools: PROGRAM_TOOLS as never });
      const output = created.output as unknown as TreeObject[];
      pool.responseIds.push(created.id);
      pool.programs.push(...withType(output, 'program'));
      pool.calls.push(...withType(output, 'function_call'));
      pool.outputs.push(...honestOutputs(output));
      pool.programOutputs.push(...withType(output, 'program_output'));
      pool.messages.push(...withType(output, 'message'));
    }
    expect(pool.calls.length).toBeGreaterThan(0);
    expect(pool.programOutputs.length).toBeGreaterThan(0);
  });
  afterAll(() => loop.close());

  async function send(body: TreeObject, headers: HeaderList): Promise<HttpAnswer> {
    return postResponses(loop.baseURL, toJsonText(body), headers);
  }

  /** Every answer: a strict 200 or a 4xx in the envelope whose param names the request. */
  function judge(answer: HttpAnswer, body: TreeObject, headers: HeaderList): ResponseObject | undefined {
    const context = { body, headerNames: headerNamesOf(headers), request: `${JSON.stringify(headers)} ${toJsonText(body).slice(0, 4000)}` };
    const result = expectAnswer(answer, context);
    return answer.status === 200 ? (result as ResponseObject) : undefined;
  }

  it(
    "a real paused program's conversation, continued honestly or altered, with store: false or previous_response_id, strict or lenient, streamed or not",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(fc.constantFrom(...PROGRAMS), generatedProgram),
          fc.constantFrom('store_false' as const, 'previous' as const),
          checksHeader,
          fc.array(step, { minLength: 1, maxLength: 3 }),
          fc.boolean(),
          async (code, mode, headers, steps, stream) => {
            const user: TreeObject = { type: 'message', role: 'user', content: inlineProgram(code) };
            const first = await send({ model: MODEL, input: [user], tools: PROGRAM_TOOLS, store: mode === 'previous', stream }, headers);
            let last = expectResponseObject(first) as ResponseObject;
            let history: Tree[] = [user, ...(last.output as unknown as Tree[])];
            /** True while every request that got a 200 was honest: then an honest request must get a 200. */
            let clean = true;
            for (const { alterations, previous, retryHonest, concurrent } of steps) {
              const pending = honestOutputs(last.output as unknown as Tree[]);
              const honest: Tree[] = pending.length > 0 ? pending : [{ role: 'user', content: 'and now?' }];
              const request = (items: Tree[], which: Step['previous']): TreeObject =>
                mode === 'store_false'
                  ? { model: MODEL, input: [...history, ...items], tools: PROGRAM_TOOLS, store: false, stream }
                  : {
                      model: MODEL,
                      input: items,
                      tools: PROGRAM_TOOLS,
                      stream,
                      previous_response_id:
                        which === 'real' ? last.id : which === 'foreign' ? pool.responseIds[0]! : 'resp_0000000000000000000000000000000000000000000000ff',
                    };
              const honestBody = request(honest, 'real');
              const body =
                mode === 'store_false'
                  ? { ...honestBody, input: alter(honestBody['input'] as Tree[], alterations, pool) }
                  : request(alter(honest, alterations, pool), previous);
              const isHonest = alterations.length === 0 && (mode === 'store_false' || previous === 'real');

              let answers: HttpAnswer[];
              if (concurrent) answers = await Promise.all([send(body, headers), send(body, headers)]);
              else answers = [await send(body, headers)];
              let accepted: ResponseObject | undefined;
              for (const answer of answers) {
                if (answer.status === 409) {
                  // Two resumes of one program at once: the loser is told to retry.
                  expect(concurrent, `409 without a concurrent request: ${answer.text}`).toBe(true);
                  expect(expectErrorEnvelope(answer, { body, headerNames: headerNamesOf(headers) }).code).toBe('program_busy');
                  continue;
                }
                accepted = judge(answer, body, headers) ?? accepted;
              }
              if (clean && isHonest) expect(accepted, `an honest continuation was refused: ${answers.map((answer) => answer.text).join('\n')}`).toBeDefined();

              let sentInput = body['input'] as Tree[];
              if (!accepted && retryHonest) {
                const retried = await send(honestBody, headers);
                if (clean) expect(retried.status, `after a rejected request, the honest one was refused: ${retried.text}`).toBe(200);
                accepted = judge(retried, honestBody, headers);
                sentInput = honestBody['input'] as Tree[];
              } else if (accepted && !isHonest) {
                clean = false;
              }
              if (!accepted) continue;
              last = accepted;
              history = [...sentInput, ...(last.output as unknown as Tree[])];
            }
          },
        ),
        { ...BOUNDED, seed: 0x3c0de, numRuns: Math.round(250 * runs) },
      );
      await expectHealthy(loop.baseURL.replace(/\/v1$/, ''));
    },
    PROPERTY_TIMEOUT,
  );

  type PoolPick =
    | { readonly from: 'program' | 'call' | 'output' | 'program-output' | 'message'; readonly index: number }
    | { readonly from: 'user'; readonly text: string }
    | { readonly from: 'random-program'; readonly fingerprint: string };
  const poolPick: fc.Arbitrary<PoolPick> = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        from: fc.constantFrom('program' as const, 'call' as const, 'output' as const, 'program-output' as const, 'message' as const),
        index: fc.nat(),
      }),
    },
    fc.record({ from: fc.constant('user' as const), text: fc.constantFrom('hi', inlineProgram("text('x')")) }),
    fc.record({ from: fc.constant('random-program' as const), fingerprint: fc.constantFrom('', 'ptcfp1.a.b', 'x') }),
  );

  it(
    'random sequences of real and random items (programs, calls, outputs, program_outputs, messages), altered, in any order',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(poolPick, { minLength: 1, maxLength: 8 }),
          fc.array(alteration, { maxLength: 3 }),
          fc.constantFrom('none' as const, 'foreign' as const, 'store_false' as const),
          checksHeader,
          async (picks, alterations, previous, headers) => {
            const items: Tree[] = picks.map((choice): Tree => {
              switch (choice.from) {
                case 'program':
                  return cloneTree(nth(pool.programs, choice.index)!);
                case 'call':
                  return cloneTree(nth(pool.calls, choice.index)!);
                case 'output':
                  return cloneTree(nth(pool.outputs, choice.index)!);
                case 'program-output':
                  return cloneTree(nth(pool.programOutputs, choice.index)!);
                case 'message':
                  return cloneTree(nth(pool.messages, choice.index)!);
                case 'user':
                  return { role: 'user', content: choice.text };
                case 'random-program':
                  return { type: 'program', id: 'prog_r', call_id: 'call_r', code: 'text(1)', fingerprint: choice.fingerprint };
              }
            });
            const body: TreeObject = {
              model: MODEL,
              input: alter(items, alterations, pool),
              tools: PROGRAM_TOOLS,
              ...(previous === 'foreign' ? { previous_response_id: pool.responseIds[1]! } : {}),
              ...(previous === 'store_false' ? { store: false } : {}),
            };
            judge(await send(body, headers), body, headers);
          },
        ),
        { ...BOUNDED, seed: 0x5e9, numRuns: Math.round(400 * runs) },
      );
      await expectHealthy(loop.baseURL.replace(/\/v1$/, ''));
    },
    PROPERTY_TIMEOUT,
  );
});

// ---- 4. raw HTTP oddities -------------------------------------------------------------------------

const LIMIT = 4096;

describe('4. raw HTTP oddities (net, not fetch)', () => {
  let small: RunningServer;
  let port: number;
  beforeAll(async () => {
    small = await startServer({ config: { apiKey: undefined, bodyLimitBytes: LIMIT } });
    port = Number(new URL(small.baseURL).port);
  });
  afterAll(() => small.close());

  const VALID = JSON.stringify({ model: MODEL, input: 'hi' });
  const head = (lines: readonly string[], method = 'POST', path = '/v1/responses', version = 'HTTP/1.1'): string =>
    `${method} ${path} ${version}\r\nhost: 127.0.0.1\r\n${lines.map((line) => `${line}\r\n`).join('')}\r\n`;
  const post = (body: string, extra: readonly string[] = []): string =>
    head(['content-type: application/json', `content-length: ${Buffer.byteLength(body)}`, ...extra]) + body;

  /** A 4xx in the envelope, as a raw response: status, JSON content type, x-request-id, exact envelope. */
  function expectRawError(response: RawResponse, code?: keyof typeof API_ERRORS): void {
    const where = `${response.status} ${JSON.stringify(response.headers)} ${response.body.slice(0, 500)}`;
    expect(response.status, where).toBeGreaterThanOrEqual(400);
    expect(response.status, where).toBeLessThan(500);
    expect(response.headers['content-type'] ?? '(no content-type)', where).toMatch(/^application\/json/);
    expect(response.headers['x-request-id'] ?? '(no x-request-id)', where).toMatch(REQUEST_ID);
    let json: unknown;
    try {
      json = JSON.parse(response.body);
    } catch {
      throw new Error(`not JSON: ${where}`);
    }
    const parsed = ErrorEnvelope.safeParse(json);
    if (!parsed.success) throw new Error(`not OpenAI's error envelope (${parsed.error.issues[0]?.message}): ${where}`);
    expect(parsed.data.error.message.length, where).toBeGreaterThan(0);
    if (code !== undefined) {
      expect(parsed.data.error.code, where).toBe(code);
      expect(response.status, where).toBe(API_ERRORS[code].status);
    }
  }

  /** What a hostile exchange may end in: every response a 4xx in the envelope (or a 2xx), none a 5xx; the server closes or answers. */
  function expectNoServerFault(exchange: RawExchange): void {
    for (const response of exchange.responses) {
      expect(response.status, `${response.status} ${response.body}`).toBeLessThan(500);
      if (response.status >= 400) expectRawError(response);
    }
  }

  async function expectStillServing(): Promise<void> {
    const exchange = await rawExchange(port, { writes: [post(VALID)], end: false, expectResponses: 1 });
    expect(exchange.responses).toHaveLength(1);
    expectResponseObject({ status: exchange.responses[0]!.status, headers: exchange.responses[0]!.headers, text: exchange.responses[0]!.body });
  }

  it('a body over the limit gets 413 request_too_large in the envelope, by content-length or chunked', async () => {
    const big = JSON.stringify({ model: MODEL, input: 'x'.repeat(LIMIT * 2) });
    const byLength = await rawExchange(port, { writes: [post(big)], end: true });
    expect(byLength.responses).toHaveLength(1);
    expectRawError(byLength.responses[0]!, 'request_too_large');
    const chunked = await rawExchange(port, {
      writes: [
        head(['content-type: application/json', 'transfer-encoding: chunked']),
        ...[0, 1, 2].map(() => `${(LIMIT).toString(16)}\r\n${'x'.repeat(LIMIT)}\r\n`),
        '0\r\n\r\n',
      ],
      end: true,
    });
    expect(chunked.responses).toHaveLength(1);
    expectRawError(chunked.responses[0]!, 'request_too_large');
    await expectStillServing();
  });

  it.each<[string, string[], keyof typeof API_ERRORS]>([
    ['text/plain', ['content-type: text/plain'], 'unsupported_media_type'],
    ['form-encoded', ['content-type: application/x-www-form-urlencoded'], 'unsupported_media_type'],
    ['multipart', ['content-type: multipart/form-data; boundary=x'], 'unsupported_media_type'],
    ['application/xml', ['content-type: application/xml'], 'unsupported_media_type'],
    ['no content-type at all', [], 'unsupported_media_type'],
    ['JSON in UTF-16', ['content-type: application/json; charset=utf-16'], 'unsupported_media_type'],
    ['JSON in Latin-1, quoted', ['content-type: application/json; charset="ISO-8859-1"'], 'unsupported_media_type'],
  ])('a %s body gets 415 in the envelope', async (_, contentType, code) => {
    const exchange = await rawExchange(port, { writes: [head([...contentType, `content-length: ${VALID.length}`]) + VALID], end: true });
    expect(exchange.responses).toHaveLength(1);
    expectRawError(exchange.responses[0]!, code);
  });

  it.each([
    'application/json; charset=utf-8',
    'application/json;charset="UTF-8"',
    'application/json; charset=utf8',
    'application/json; charset=us-ascii',
    'application/json; x="a;charset=latin1"',
  ])('a body whose Content-Type is %s is read', async (contentType) => {
    const exchange = await rawExchange(port, {
      writes: [head([`content-type: ${contentType}`, `content-length: ${VALID.length}`]) + VALID],
      end: false,
      expectResponses: 1,
    });
    expect(exchange.responses).toHaveLength(1);
    expect(exchange.responses[0]!.status, exchange.responses[0]!.body).toBe(200);
  });

  it.each<[string, string]>([
    ['content-length: 0', head(['content-type: application/json', 'content-length: 0'])],
    ['no content-length and no body', head(['content-type: application/json'])],
    ['an empty chunked body', `${head(['content-type: application/json', 'transfer-encoding: chunked'])}0\r\n\r\n`],
  ])('an empty body (%s) gets 400 invalid_json in the envelope', async (_, request) => {
    const exchange = await rawExchange(port, { writes: [request], end: true });
    expect(exchange.responses).toHaveLength(1);
    expectRawError(exchange.responses[0]!, 'invalid_json');
  });

  it.each<[string, (string | number)[]]>([
    ['a body shorter than its content-length, then EOF', [head(['content-type: application/json', `content-length: ${VALID.length + 20}`]) + VALID]],
    ['a body longer than its content-length', [head(['content-type: application/json', `content-length: ${VALID.length - 4}`]) + VALID]],
    ['a non-numeric content-length', [head(['content-type: application/json', 'content-length: ten']) + VALID]],
    [
      'content-length and transfer-encoding together',
      [head(['content-type: application/json', `content-length: ${VALID.length}`, 'transfer-encoding: chunked']) + VALID],
    ],
    ['chunked garbage', [`${head(['content-type: application/json', 'transfer-encoding: chunked'])}zz\r\nnot hex\r\n0\r\n\r\n`]],
    [
      'a chunked body cut before its last chunk, then EOF',
      [`${head(['content-type: application/json', 'transfer-encoding: chunked'])}${VALID.length.toString(16)}\r\n${VALID}\r\n`],
    ],
    ['a request line of garbage', ['HELLO THERE\r\n\r\n']],
    ['a header with a control character', [head(['content-type: application/json', 'x-ptc-seed: 1\u0001', `content-length: ${VALID.length}`]) + VALID]],
    ['a header section over 16 KiB', [head(['content-type: application/json', `x-filler: ${'v'.repeat(20_000)}`, `content-length: ${VALID.length}`]) + VALID]],
    [
      '3000 headers',
      [head(['content-type: application/json', ...Array.from({ length: 3000 }, (_, index) => `x-h${index}: v`), `content-length: ${VALID.length}`]) + VALID],
    ],
  ])('%s: a 4xx in the envelope or a closed connection, never a 5xx; the server keeps serving', async (_, writes) => {
    const exchange = await rawExchange(port, { writes, end: true });
    expectNoServerFault(exchange);
    expect(exchange.responses.length > 0 || exchange.closed).toBe(true);
    await expectStillServing();
  });

  it('two requests pipelined in one write get two strict 200s, in order', async () => {
    const exchange = await rawExchange(port, {
      writes: [post(VALID) + post(JSON.stringify({ model: 'second', input: 'hi' }))],
      end: false,
      expectResponses: 2,
    });
    expect(exchange.responses).toHaveLength(2);
    const models = exchange.responses.map(
      (response) => expectResponseObject({ status: response.status, headers: response.headers, text: response.body }).model,
    );
    expect(models).toEqual([MODEL, 'second']);
  });

  it('a request written a byte at a time, with pauses, is served', async () => {
    const request = post(VALID);
    const writes: (string | number)[] = [];
    for (const character of request) writes.push(character, 1);
    const exchange = await rawExchange(port, { writes, end: false, expectResponses: 1 });
    expect(exchange.responses).toHaveLength(1);
    expectResponseObject({ status: exchange.responses[0]!.status, headers: exchange.responses[0]!.headers, text: exchange.responses[0]!.body });
  });

  it(
    'property: a valid request split anywhere into pieces, with pauses, gets exactly one strict 200',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.string({ unit: 'grapheme', maxLength: 40 }),
          fc.array(fc.nat(), { maxLength: 10 }),
          fc.array(fc.nat(3), { maxLength: 10 }),
          async (input, cuts, pauses) => {
            const request = Buffer.from(post(JSON.stringify({ model: MODEL, input })));
            const points = [...new Set(cuts.map((cut) => cut % request.length))].sort((a, b) => a - b);
            const writes: (Buffer | number)[] = [];
            let from = 0;
            points.forEach((point, index) => {
              writes.push(request.subarray(from, point), pauses[index] ?? 0);
              from = point;
            });
            writes.push(request.subarray(from));
            const exchange = await rawExchange(port, { writes, end: false, expectResponses: 1 });
            expect(exchange.responses).toHaveLength(1);
            expectResponseObject({ status: exchange.responses[0]!.status, headers: exchange.responses[0]!.headers, text: exchange.responses[0]!.body });
          },
        ),
        { ...BOUNDED, seed: 0x5911, numRuns: 60 },
      );
    },
    PROPERTY_TIMEOUT,
  );

  // Requests framed every which way: methods, targets, versions, content types, lengths, codings, bodies.
  const chunk = (body: string): string => `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
  interface Framing {
    readonly method: string;
    readonly path: string;
    readonly version: string;
    readonly contentType: string | undefined;
    readonly length: 'exact' | 'more' | 'less' | 'none' | 'negative' | 'garbage' | 'twice-same' | 'twice-different' | 'huge';
    readonly coding: 'none' | 'chunked' | 'chunked-garbage' | 'gzip' | 'chunked, gzip';
    readonly body: string;
    readonly extra: readonly string[];
  }
  /** Mostly the usual value, now and then an odd one: each fault gets to reach the server alone. */
  const usually = <T>(usual: T, ...odd: T[]): fc.Arbitrary<T> =>
    fc.oneof({ weight: 5, arbitrary: fc.constant(usual) }, { weight: 1, arbitrary: fc.constantFrom(...odd) });
  const framing: fc.Arbitrary<Framing> = fc.record({
    method: usually('POST', 'GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'FOO', 'post'),
    path: usually(
      '/v1/responses',
      '/v1/responses/resp_x',
      '/v1/responses/resp_x/cancel',
      '/v1/responses/resp_x/input_items?limit=0',
      '/v1/models',
      '/health',
      '/',
      '*',
      '/%ff',
      '/v1/../v1/responses',
      'http://127.0.0.1/v1/responses',
      `/v1/responses/${'a'.repeat(9000)}`,
    ),
    version: usually('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1x', 'HTTP/0.9'),
    contentType: usually<string | undefined>(
      'application/json',
      'application/json; charset=utf-16',
      'APPLICATION/JSON',
      'text/plain',
      'application/jsonx',
      'application/json, text/plain',
      undefined,
      '',
    ),
    length: usually<Framing['length']>('exact', 'more', 'less', 'none', 'negative', 'garbage', 'twice-same', 'twice-different', 'huge'),
    coding: usually<Framing['coding']>('none', 'chunked', 'chunked', 'chunked-garbage', 'gzip', 'chunked, gzip'),
    body: fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(VALID, JSON.stringify({ model: MODEL, input: [{ role: 'user', content: 'hé' }] })) },
      fc.constantFrom(
        '',
        '{',
        '{"model":',
        '[]',
        'null',
        '\u0000\u0000',
        '\ufeff' + VALID,
        `{"model":"${MODEL}","input":"\\ud800"}`,
        '{"__proto__":{"x":1},"model":"m"}',
        JSON.stringify({ model: MODEL, input: 'x'.repeat(LIMIT) }),
      ),
      fc.string({ unit: 'binary', maxLength: 60 }),
      fc.uint8Array({ maxLength: 60 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
    ),
    extra: fc
      .tuple(
        fc.subarray([
          'expect: 100-continue',
          'connection: close',
          'x-ptc-seed: 7',
          'x-ptc-nonsense: 1',
          'x-ptc-client-checks: sloppy',
          'host: second.example',
          'authorization: Bearer whatever',
        ]),
        usually<string[]>(
          [],
          ['connection: keep-alive, upgrade', 'upgrade: websocket'],
          ['x-folded: a\r\n  b'],
          ['no-colon-here'],
          ['bad header: x'],
          [`x-long: ${'l'.repeat(9000)}`],
          [`x-longer: ${'l'.repeat(20_000)}`],
        ),
      )
      .map(([benign, odd]) => [...benign, ...odd]),
  });

  function frame(choice: Framing): Buffer {
    const body = Buffer.from(choice.body, 'latin1');
    const lines: string[] = [];
    if (choice.contentType !== undefined) lines.push(`content-type: ${choice.contentType}`);
    const lengths: Record<Framing['length'], string[]> = {
      exact: [`content-length: ${body.length}`],
      more: [`content-length: ${body.length + 7}`],
      less: [`content-length: ${Math.max(0, body.length - 3)}`],
      none: [],
      negative: ['content-length: -1'],
      garbage: ['content-length: 1e3'],
      'twice-same': [`content-length: ${body.length}`, `content-length: ${body.length}`],
      'twice-different': [`content-length: ${body.length}`, `content-length: ${body.length + 1}`],
      huge: ['content-length: 99999999999999999999'],
    };
    if (choice.coding === 'none') lines.push(...lengths[choice.length]);
    else lines.push(`transfer-encoding: ${choice.coding === 'chunked-garbage' ? 'chunked' : choice.coding}`);
    lines.push(...choice.extra);
    const payload = choice.coding === 'chunked' ? chunk(choice.body) : choice.coding === 'chunked-garbage' ? `${choice.body}\r\n0\r\n` : choice.body;
    return Buffer.concat([Buffer.from(head(lines, choice.method, choice.path, choice.version), 'latin1'), Buffer.from(payload, 'latin1')]);
  }

  it(
    'property: whatever the framing, no 5xx, the server answers or closes, and it keeps serving',
    async () => {
      await fc.assert(
        fc.asyncProperty(framing, async (choice) => {
          const exchange = await rawExchange(port, { writes: [frame(choice)], end: true });
          for (const response of exchange.responses) expect(response.status, `${response.status} ${response.body.slice(0, 300)}`).toBeLessThan(500);
        }),
        { ...BOUNDED, seed: 0xf4a3e, numRuns: 300 },
      );
      await expectStillServing();
    },
    PROPERTY_TIMEOUT,
  );

  it(
    'property: whatever the framing, every 4xx carries the envelope and an x-request-id',
    async () => {
      await fc.assert(
        fc.asyncProperty(framing, async (choice) => {
          expectNoServerFault(await rawExchange(port, { writes: [frame(choice)], end: true }));
        }),
        { ...BOUNDED, seed: 0xe4e10, numRuns: 300 },
      );
      await expectStillServing();
    },
    PROPERTY_TIMEOUT,
  );
});

// ---- 6. the other routes ----------------------------------------------------------------------------

describe('6. the other routes with random ids and queries', () => {
  type Route = (id: string, query: string) => readonly [method: string, path: string];
  const ROUTES: readonly Route[] = [
    (id, query) => ['GET', `/v1/responses/${id}${query}`],
    (id) => ['DELETE', `/v1/responses/${id}`],
    (id) => ['POST', `/v1/responses/${id}/cancel`],
    (id, query) => ['GET', `/v1/responses/${id}/input_items${query}`],
    (id) => ['GET', `/v1/models/${id}`],
    (_, query) => ['GET', `/v1/models${query}`],
    (_, query) => ['GET', `/health${query}`],
  ];
  const id = fc.oneof(
    fc.constantFrom('resp_unknown', 'ptc-emulator'),
    fc.string({ unit: 'grapheme', maxLength: 20 }).map((value) => encodeURIComponent(value)),
    fc.constantFrom('%ff', '%', '%zz', '%00', '%2F', '%2e%2e', '%F0%9F%98', '%20', '%C0%AF', '~!*()'),
    fc.integer({ min: 60, max: 3000 }).map((length) => `resp_${'a'.repeat(length)}`),
  );
  const query = fc
    .array(
      fc.tuple(
        fc.constantFrom('limit', 'order', 'after', 'include', 'include[]', 'stream', 'starting_after', 'include_obfuscation', 'x', ''),
        fc.constantFrom('0', '1', '20', '100', '101', '-1', '1.5', 'asc', 'desc', 'true', 'false', '%ff', '', 'x'.repeat(300), '1e3'),
      ),
      { maxLength: 3 },
    )
    .map((pairs) => (pairs.length === 0 ? '' : `?${pairs.map(([key, value]) => `${key}=${value}`).join('&')}`));

  it(
    'every answer is a 2xx or a 4xx in the envelope with an x-request-id; never a 5xx',
    async () => {
      const real = await server.client.responses.create({ model: MODEL, input: 'a stored response' });
      await fc.assert(
        fc.asyncProperty(fc.nat(ROUTES.length - 1), fc.oneof(id, fc.constant(real.id)), query, async (route, chosenId, chosenQuery) => {
          const [method, path] = ROUTES[route]!(chosenId, chosenQuery);
          let response: Response;
          try {
            response = await fetch(`${root}${path}`, { method, signal: AbortSignal.timeout(20_000) });
          } catch (error) {
            throw new Error(`${method} ${path}: ${String(error)}`);
          }
          const text = await response.text();
          const headers: Record<string, string> = {};
          response.headers.forEach((value, name) => {
            headers[name] = value;
          });
          const answer = { status: response.status, headers, text };
          if (answer.status >= 200 && answer.status < 300) {
            expect(headers['x-request-id'] ?? '(no x-request-id)', `${method} ${path}`).toMatch(REQUEST_ID);
            return;
          }
          expectErrorEnvelope(answer, { request: `${method} ${path}` });
        }),
        { ...BOUNDED, seed: 0x60a7e5, numRuns: 600 },
      );
      await expectHealthy(root);
    },
    PROPERTY_TIMEOUT,
  );
});

// ---- 5. knob headers ---------------------------------------------------------------------------------

const KNOB_NAMES = Object.keys(KNOB_RULES);
const knobName = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...KNOB_NAMES) },
  { weight: 1, arbitrary: fc.constantFrom(...KNOB_NAMES).map((name) => name.toUpperCase()) },
  { weight: 2, arbitrary: fc.stringMatching(/^[a-z0-9-]{0,14}$/).map((rest) => `x-ptc-${rest}`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('x-ptc-final_message', 'x-ptc-errorstatus', 'x-ptc-seed-', 'x-ptc--seed', 'X-Ptc-Client-Checks', 'x-ptc-client-check'),
  },
);
const knobRawValue = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('same', 'next', 'max_output_tokens', 'strict', 'lenient', 'true', 'false', 'True', 'NEXT', 'next ', '') },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      '0',
      '1',
      '3',
      '20',
      '-1',
      '-0',
      '007',
      '399',
      '400',
      '404',
      '429',
      '499',
      '500',
      '503',
      '599',
      '600',
      '60000',
      '60001',
      '600000',
      '600001',
      '9007199254740991',
      '9007199254740993',
      '-9007199254740993',
    ),
  },
  { weight: 2, arbitrary: fc.constantFrom('1.5', '1e3', '0x10', '+5', ' 5', '5 ', '1,2', 'NaN', 'Infinity', 'null', '[]', '{}', 'é', 'ÿ\u00a0') },
  { weight: 2, arbitrary: fc.integer().map(String) },
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(...'abc019-_ ,;:=é'.split('')), maxLength: 12 }) },
);

/** A knob header with a value its rule takes (delays and latencies kept small: waiting is not what this tests). */
const validKnobPair: fc.Arbitrary<[string, string]> = fc.constantFrom(...KNOB_NAMES).chain((name) => {
  const rule = KNOB_RULES[name]!;
  const value =
    rule.kind === 'enum'
      ? fc.constantFrom(...rule.values)
      : rule.kind === 'bool'
        ? fc.constantFrom('true', 'false')
        : fc
            .integer({ min: Math.max(rule.min, -1_000_000), max: Math.min(rule.max, /delay|latency|jitter/.test(name) ? 5 : 1_000_000) })
            // A 407 (proxy authentication required) is one fetch cannot read: undici fails the request instead.
            .filter((value) => name !== 'x-ptc-error-status' || value !== 407)
            .map(String);
  return value.map((raw): [string, string] => [name, raw]);
});
const knobHeaders = fc.array(fc.oneof({ weight: 3, arbitrary: validKnobPair }, { weight: 1, arbitrary: fc.tuple(knobName, knobRawValue) }), {
  minLength: 1,
  maxLength: 3,
});

/** Valid knob headers that would make the request wait long: the server may wait, and that is not what this property tests. */
function waits(values: Readonly<Record<string, unknown>>, stream: boolean): boolean {
  if (values['x-ptc-error-status'] !== undefined) return false;
  const perEvent = Number(values['x-ptc-event-latency-ms'] ?? 0) + Number(values['x-ptc-latency-jitter-ms'] ?? 0);
  return Number(values['x-ptc-delay-ms'] ?? 0) > 20 || (stream && perEvent > 5);
}

describe('5. knob headers with random names and values', () => {
  it(
    'a 400 naming one of the headers that is unknown or out of range, else the knob does what docs/KNOBS.md says',
    async () => {
      await fc.assert(
        fc.asyncProperty(knobHeaders, fc.boolean(), async (headers, stream) => {
          const body: TreeObject = { model: MODEL, input: 'hi', ...(stream ? { stream: true } : {}) };
          const verdict = judgeKnobHeaders(headers);
          fc.pre(verdict.invalid.size > 0 || !waits(verdict.values, stream));
          const sent = toJsonText(body);
          const cut = verdict.values['x-ptc-stream-cut-after'];
          if (stream && verdict.invalid.size === 0 && verdict.values['x-ptc-error-status'] === undefined && cut !== undefined) {
            // A cut stream ends without its terminal event by design (the stream suites cover it).
            return;
          }
          const answer = await postResponses(server.baseURL, sent, headers);
          const request = `${JSON.stringify(headers)} ${sent}`;
          if (verdict.invalid.size > 0) {
            const error = expectErrorEnvelope(answer, { headerNames: headerNamesOf(headers), body, request });
            expect(answer.status, request).toBe(400);
            expect(error.code, request).toBe('invalid_value');
            expect([...verdict.invalid], `param ${error.param} is not one of the bad headers: ${request}`).toContain(error.param);
            return;
          }
          const status = verdict.values['x-ptc-error-status'];
          if (typeof status === 'number') {
            const error = expectErrorEnvelope(answer, { simulatedStatus: status, headerNames: headerNamesOf(headers), body, request });
            expect(error.code, request).toBe('simulated_error');
            expect(error.type, request).toBe(status === 429 ? 'rate_limit_error' : status >= 500 ? 'server_error' : 'invalid_request_error');
            const retryAfter = verdict.values['x-ptc-error-retry-after-ms'];
            if (typeof retryAfter === 'number') {
              expect(answer.headers['retry-after-ms'], request).toBe(String(retryAfter));
              expect(answer.headers['retry-after'], request).toBe(String(Math.ceil(retryAfter / 1000)));
            }
            const shouldRetry = verdict.values['x-ptc-error-should-retry'];
            if (typeof shouldRetry === 'boolean') expect(answer.headers['x-should-retry'], request).toBe(String(shouldRetry));
            return;
          }
          const response = expectResponseObject(answer, request);
          if (verdict.values['x-ptc-incomplete'] === 'max_output_tokens') expect(response.status, request).toBe('incomplete');
          else expect(response.status, request).toBe('completed');
        }),
        { ...BOUNDED, seed: 0x6b0b, numRuns: 400 },
      );
      await expectHealthy(root);
    },
    PROPERTY_TIMEOUT,
  );
});
