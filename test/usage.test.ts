import fc from 'fast-check';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import type { ResponseUsage } from 'openai/resources/responses/responses';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { ConversationItem, OutputItem } from '../schemas/items.ts';
import { Usage } from '../schemas/usage.ts';
import { countTokens, countUsage, IMAGE_TOKENS, ITEM_OVERHEAD_TOKENS, LONG_RUN, REMEMBERED_MAX_TEXTS, tokenChunks } from '../server/engine/usage.ts';

/** A lone surrogate anywhere: the string is not well-formed UTF-16. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const usageOf = (input: Partial<Parameters<typeof countUsage>[0]>) => countUsage({ instructions: null, tools: [], context: [], output: [], ...input });

describe('the tokenizer is o200k_base', () => {
  // Known answers published independently of gpt-tokenizer: 'hello world' → [24912, 2375] is the
  // o200k_base known answer of tiktoken ports (cl100k_base gives [15339, 1917]); the OpenAI
  // cookbook "How to count tokens with tiktoken" encodes 'tiktoken is great!' for gpt-4o-mini as
  // [83, 8251, 2488, 382, 2212, 0]; 'Hello world!' for gpt-4o is [13225, 2375, 0].
  it.each([
    ['hello world', [24912, 2375]],
    ['tiktoken is great!', [83, 8251, 2488, 382, 2212, 0]],
    ['Hello world!', [13225, 2375, 0]],
    ['The quick brown fox jumps over the lazy dog.', [976, 4853, 19705, 68347, 65613, 1072, 290, 29082, 6446, 13]],
  ])('%j is %j', (text, ids) => {
    expect(encode(text)).toEqual(ids);
    expect(countTokens(text)).toBe(ids.length);
  });

  it('counts nothing for an empty string', () => {
    expect(countTokens('')).toBe(0);
    expect(tokenChunks('')).toEqual([]);
  });

  it('reads special-token strings as plain text instead of throwing', () => {
    expect(() => encode('<|endoftext|>')).toThrow(/special token/);
    expect(countTokens('a <|endoftext|> b')).toBeGreaterThan(3);
    expect(tokenChunks('a <|endoftext|> b').join('')).toBe('a <|endoftext|> b');
  });

  it('stays exact, and fast, on long runs of one character (sliced at LONG_RUN)', () => {
    const started = performance.now();
    for (const [text, exact] of [
      ['a'.repeat(100_000), 12_500],
      [' '.repeat(3_000), 24],
      ['中'.repeat(3_000), 3_000],
    ] as const) {
      expect(countTokens(text)).toBe(exact);
      expect(tokenChunks(text).join('')).toBe(text);
    }
    expect(countTokens('😀'.repeat(50_000))).toBe(50_000);
    expect(performance.now() - started).toBeLessThan(5_000); // unsliced: about 17 s
  });

  it('counts texts it remembers as it counted them, long or short, with more texts than it keeps', () => {
    // Prose (no long run), so that gpt-tokenizer itself is the reference: a few long texts, and
    // more short ones than are kept.
    const prose = (index: number, words: number): string => Array.from({ length: words }, (_, word) => `w${(index * 7 + word) % 97}`).join(' ');
    const texts = [
      ...Array.from({ length: 20 }, (_, index) => prose(index, 600)),
      ...Array.from({ length: REMEMBERED_MAX_TEXTS + 100 }, (_, index) => `${prose(index, 4)} n${index}`),
    ];
    const exact = texts.map((text) => encode(text).length);
    for (let round = 0; round < 3; round++) {
      texts.forEach((text, index) => expect(countTokens(text)).toBe(exact[index]));
      // The same texts as new strings, as a resent conversation parses them.
      texts.forEach((text, index) => expect(countTokens(JSON.parse(JSON.stringify(text)) as string)).toBe(exact[index]));
    }
  });
});

describe('tokenChunks', () => {
  it.each([
    ['ASCII', 'hello world', ['hello', ' world']],
    ['accented', 'héllo wörld, ça va ?', undefined],
    ['CJK', 'お誕生日おめでとう 你好，世界！', undefined],
    ['emoji', '😀 👨‍👩‍👧 🇫🇷 👍🏽', undefined],
    ['mixed', 'Total: 42 € — naïve café 😀\n\tdone.', undefined],
    ['a run longer than LONG_RUN', `x${'😀'.repeat(LONG_RUN)}y${'é'.repeat(LONG_RUN * 2)}`, undefined],
  ])('%s: consecutive, well-formed, exact', (_, text, expected) => {
    const chunks = tokenChunks(text);
    if (expected) expect(chunks).toEqual(expected);
    expect(chunks.join('')).toBe(text);
    for (const chunk of chunks) {
      expect(chunk.length).toBeGreaterThan(0);
      expect(chunk).not.toMatch(LONE_SURROGATE);
    }
    expect(chunks.length).toBeLessThanOrEqual(countTokens(text));
  });

  it('gives one chunk per token for ASCII', () => {
    const text = 'function add(a, b) { return a + b; } // 123456789';
    expect(tokenChunks(text)).toHaveLength(countTokens(text));
  });

  it('merges the tokens of a character split across tokens', () => {
    // 誕 is two tokens of o200k (bytes E8 AA | 95), so it is one chunk for two tokens.
    expect(encode('誕')).toHaveLength(2);
    expect(tokenChunks('誕')).toEqual(['誕']);
  });

  it('keeps a lone surrogate (invalid input) exact too', () => {
    expect(tokenChunks('x\ud800y').join('')).toBe('x\ud800y');
  });

  it.each(['grapheme', 'binary'] as const)('concatenates to the input for arbitrary %s strings', (unit) => {
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 200 }), (text) => {
        const chunks = tokenChunks(text);
        expect(chunks.join('')).toBe(text);
        for (const chunk of chunks) expect(chunk).not.toMatch(LONE_SURROGATE);
        expect(chunks.length).toBeLessThanOrEqual(countTokens(text));
        expect(countTokens(text) > 0).toBe(text.length > 0);
      }),
      { numRuns: 300 },
    );
  });

  it('concatenates to the input around long runs', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', maxLength: 20 }),
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }),
        fc.integer({ min: LONG_RUN - 2, max: LONG_RUN * 3 }),
        fc.string({ unit: 'grapheme', maxLength: 20 }),
        (before, unit, times, after) => {
          const text = before + unit.repeat(times) + after;
          const chunks = tokenChunks(text);
          expect(chunks.join('')).toBe(text);
          for (const chunk of chunks) expect(chunk).not.toMatch(LONE_SURROGATE);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('countUsage', () => {
  const o = ITEM_OVERHEAD_TOKENS;
  const t = countTokens;
  const reference = { type: 'item_reference', id: 'msg_1' } as const;
  const rows: [string, ConversationItem, number][] = [
    ['message, string content', { type: 'message', id: 'm1', role: 'user', content: 'hello world' }, 2 + o],
    [
      'message, text parts',
      {
        type: 'message',
        id: 'm2',
        role: 'user',
        content: [
          { type: 'input_text', text: 'hello world' },
          { type: 'input_text', text: 'tiktoken is great!' },
        ],
      },
      2 + 6 + o,
    ],
    [
      'message, output_text and refusal',
      {
        type: 'message',
        id: 'm3',
        role: 'assistant',
        content: [
          { type: 'output_text', text: 'hello world' },
          { type: 'refusal', refusal: 'Hello world!' },
        ],
      },
      2 + 3 + o,
    ],
    [
      'message, image part',
      { type: 'message', id: 'm4', role: 'user', content: [{ type: 'input_image', image_url: `data:image/png;base64,${'A'.repeat(10_000)}`, detail: 'auto' }] },
      IMAGE_TOKENS + o,
    ],
    [
      'message, file part (its JSON)',
      { type: 'message', id: 'm5', role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] },
      t(JSON.stringify({ type: 'input_file', file_id: 'file_1' })) + o,
    ],
    [
      'function_call: name + arguments',
      { type: 'function_call', id: 'fc1', call_id: 'call_1', name: 'lookup', arguments: '{"q":"hello world"}' },
      t('lookup') + t('{"q":"hello world"}') + o,
    ],
    ['function_call_output, string', { type: 'function_call_output', id: 'fo1', call_id: 'call_1', output: 'hello world' }, 2 + o],
    [
      'function_call_output, parts',
      { type: 'function_call_output', id: 'fo2', call_id: 'call_1', output: [{ type: 'input_text', text: 'tiktoken is great!' }] },
      6 + o,
    ],
    [
      'custom_tool_call: name + input',
      { type: 'custom_tool_call', id: 'ct1', call_id: 'call_2', name: 'shell', input: 'ls -la' },
      t('shell') + t('ls -la') + o,
    ],
    ['custom_tool_call_output', { type: 'custom_tool_call_output', id: 'co1', call_id: 'call_2', output: 'hello world' }, 2 + o],
    ['program: code', { type: 'program', id: 'prog_1', call_id: 'call_3', code: 'text("hi")', fingerprint: 'f'.repeat(300) }, t('text("hi")') + o],
    ['program_output: result', { type: 'program_output', id: 'po1', call_id: 'call_3', result: 'hello world', status: 'completed' }, 2 + o],
    [
      'reasoning: summary and content texts',
      {
        type: 'reasoning',
        id: 'rs_1',
        summary: [{ type: 'summary_text', text: 'hello world' }],
        content: [{ type: 'reasoning_text', text: 'Hello world!' }],
        encrypted_content: 'e'.repeat(100),
      },
      2 + 3 + o,
    ],
    ['another item type: its JSON', reference, t(JSON.stringify(reference)) + o],
  ];

  it.each(rows)('input: %s', (_, item, expected) => {
    const usage = usageOf({ context: [item] });
    expect(usage.input_tokens).toBe(expected);
    expect(usage.output_tokens).toBe(0);
    expect(usage.total_tokens).toBe(expected);
  });

  it('counts instructions as a message and the tools as their JSON', () => {
    const tools = [{ type: 'function', name: 'lookup', parameters: { type: 'object' }, strict: false }];
    expect(usageOf({ instructions: 'hello world' }).input_tokens).toBe(2 + o);
    expect(usageOf({ instructions: '' }).input_tokens).toBe(0);
    expect(usageOf({ tools }).input_tokens).toBe(t(JSON.stringify(tools)));
    const context = rows.map(([, item]) => item);
    const sum = rows.reduce((total, [, , expected]) => total + expected, 0);
    expect(usageOf({ instructions: 'hello world', tools, context }).input_tokens).toBe(2 + o + t(JSON.stringify(tools)) + sum);
  });

  const output: OutputItem[] = [
    { type: 'reasoning', id: 'rs_2', summary: [{ type: 'summary_text', text: 'tiktoken is great!' }] },
    { type: 'program', id: 'prog_2', call_id: 'call_4', code: 'text("hi")', fingerprint: 'fp' },
    {
      type: 'function_call',
      id: 'fc2',
      call_id: 'call_5',
      name: 'lookup',
      arguments: '{}',
      status: 'completed',
      caller: { type: 'program', caller_id: 'call_4' },
    },
    { type: 'program_output', id: 'po2', call_id: 'call_4', result: 'hello world', status: 'completed' },
    { type: 'reasoning', id: 'rs_3', summary: [{ type: 'summary_text', text: 'hello world' }] },
    {
      type: 'message',
      id: 'msg_2',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'Hello world!', annotations: [], logprobs: [] }],
    },
  ];

  it('counts output items by the same rule, reasoning apart, total = input + output', () => {
    const context = rows.map(([, item]) => item);
    const usage = usageOf({ instructions: 'be brief', context, output });
    // The program's call (caller: program) is the runtime's, not the model's: it counts nothing.
    const expectedOutput = 6 + o + (t('text("hi")') + o) + (2 + o) + (2 + o) + (3 + o);
    expect(usage.output_tokens).toBe(expectedOutput);
    expect(usage.output_tokens_details.reasoning_tokens).toBe(6 + o + (2 + o));
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
    expect(usage.input_tokens_details).toEqual({ cache_write_tokens: 0, cached_tokens: 0 });
    expect(Usage.parse(usage)).toEqual(usage);
  });

  it("counts none of a program's own calls, their outputs or their approvals, in the context or the output", () => {
    const programCaller = { type: 'program', caller_id: 'call_p' } as const;
    const direct: ConversationItem[] = [
      { type: 'function_call', id: 'fc_d', call_id: 'call_d', name: 'lookup', arguments: '{"sku":"a"}', status: 'completed' },
      { type: 'function_call_output', call_id: 'call_d', output: 'a long tool output that the model reads' },
    ] as ConversationItem[];
    const ownedByProgram: ConversationItem[] = [
      { type: 'function_call', id: 'fc_p', call_id: 'call_q', name: 'lookup', arguments: '{"sku":"a"}', status: 'completed', caller: programCaller },
      { type: 'function_call_output', call_id: 'call_q', output: 'a long tool output that only the program reads' },
      { type: 'mcp_approval_request', id: 'mcpr_1', server_label: 'crm', name: 'delete', arguments: '{}', caller: programCaller },
      { type: 'mcp_approval_response', approval_request_id: 'mcpr_1', approve: true },
    ] as ConversationItem[];
    const base = usageOf({ context: direct }).input_tokens;
    expect(base).toBe(t('lookup') + t('{"sku":"a"}') + o + t('a long tool output that the model reads') + o);
    expect(usageOf({ context: [...direct, ...ownedByProgram] }).input_tokens).toBe(base);
    // A program's call in a response's output is not the model's output either.
    expect(usageOf({ output: ownedByProgram.slice(0, 1) as OutputItem[] }).output_tokens).toBe(0);
    // An output whose call is not in the context is read as the model's: it names no program.
    expect(usageOf({ context: ownedByProgram.slice(1, 2) }).input_tokens).toBe(t('a long tool output that only the program reads') + o);
  });

  it('counts nothing for an empty context and no output', () => {
    expect(usageOf({})).toEqual({
      input_tokens: 0,
      input_tokens_details: { cache_write_tokens: 0, cached_tokens: 0 },
      output_tokens: 0,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 0,
    });
    const onlyOutput = usageOf({ output });
    expect(onlyOutput.input_tokens).toBe(0);
    expect(onlyOutput.total_tokens).toBe(onlyOutput.output_tokens);
  });

  it('is deterministic', () => {
    const input = { instructions: 'be brief', tools: [{ type: 'programmatic_tool_calling' }], context: rows.map(([, item]) => item), output };
    const first = countUsage(input);
    expect(countUsage(input)).toEqual(first);
    expect(countUsage(structuredClone(input))).toEqual(first);
  });

  it('counts a 2000-item context quickly', () => {
    const words = ['alpha', 'beta', 'gamma', 'delta', 'naïve', 'café', '東京', '😀', 'result', 'value', '42', '{"k":'];
    let seed = 7;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31);
    const sentence = (n: number) => Array.from({ length: n }, () => words[next() % words.length]).join(' ');
    const context: ConversationItem[] = [];
    for (let i = 0; i < 500; i++) {
      context.push({ type: 'message', id: `m${i}`, role: 'user', content: sentence(40) });
      context.push({ type: 'function_call', id: `fc${i}`, call_id: `c${i}`, name: 'lookup', arguments: JSON.stringify({ q: sentence(8), n: i }) });
      context.push({
        type: 'function_call_output',
        id: `fo${i}`,
        call_id: `c${i}`,
        output: JSON.stringify({ rows: Array.from({ length: 10 }, () => sentence(10)) }),
      });
      context.push({
        type: 'program',
        id: `p${i}`,
        call_id: `pc${i}`,
        code: `const r = await tools.lookup({ q: ${JSON.stringify(sentence(6))} });\ntext(r);`,
        fingerprint: 'x',
      });
    }
    const chars = JSON.stringify(context).length;
    const started = performance.now();
    const usage = usageOf({ context });
    const cold = performance.now() - started;
    const again = performance.now();
    usageOf({ context });
    const warm = performance.now() - again;
    console.info(`2000-item context (${chars} chars, ${usage.input_tokens} tokens): ${cold.toFixed(0)} ms cold, ${warm.toFixed(0)} ms warm`);
    expect(usage.input_tokens).toBeGreaterThan(2_000 * o);
    expect(cold).toBeLessThan(5_000);
  });
});

describe('Usage', () => {
  it('is the SDK type ResponseUsage', () => {
    expectTypeOf<Usage>().toEqualTypeOf<ResponseUsage>();
  });

  it('rejects negative, fractional and unknown fields', () => {
    const valid = usageOf({ instructions: 'hello world' });
    expect(Usage.safeParse(valid).success).toBe(true);
    expect(Usage.safeParse({ ...valid, input_tokens: -1 }).success).toBe(false);
    expect(Usage.safeParse({ ...valid, total_tokens: 1.5 }).success).toBe(false);
    expect(Usage.safeParse({ ...valid, extra: 0 }).success).toBe(false);
    expect(Usage.safeParse({ ...valid, output_tokens_details: {} }).success).toBe(false);
  });
});
