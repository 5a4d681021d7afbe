/**
 * `usage` on every response, counted with o200k_base, the tokenizer of current OpenAI models
 * (gpt-4o, gpt-4.1, o-series, gpt-5), as implemented by the pure-JS `gpt-tokenizer` package.
 *
 * The emulator has no model, so "what a model would read and write" is a convention. It is
 * deterministic (same items, same counts) and follows this table:
 *
 * | What                                  | Tokens counted                                        |
 * |---------------------------------------|-------------------------------------------------------|
 * | `instructions` (non-empty)            | its text + ITEM_OVERHEAD_TOKENS (a developer message)  |
 * | `tools` (non-empty array)             | `JSON.stringify(tools)`                                |
 * | message                               | its text parts + ITEM_OVERHEAD_TOKENS                  |
 * |   · `input_text` / `output_text` part |   `text`                                               |
 * |   · `refusal` part                    |   `refusal`                                            |
 * |   · `input_image` part                |   IMAGE_TOKENS (fixed; the emulator never looks)       |
 * |   · any other part (`input_file`)     |   `JSON.stringify(part)`                               |
 * | function_call                         | `name` + `arguments` + ITEM_OVERHEAD_TOKENS            |
 * | function_call_output                  | `output` (text, or parts as for a message) + overhead  |
 * | custom_tool_call                      | `name` + `input` + ITEM_OVERHEAD_TOKENS                |
 * | custom_tool_call_output               | `output` (text, or parts as for a message) + overhead  |
 * | program                               | `code` + ITEM_OVERHEAD_TOKENS                          |
 * | program_output                        | `result` + ITEM_OVERHEAD_TOKENS                        |
 * | reasoning                             | summary texts + `reasoning_text` contents + overhead   |
 * | any other item type                   | `JSON.stringify(item)` + ITEM_OVERHEAD_TOKENS          |
 *
 *   input_tokens     = instructions + tools + every item of the context (stored history and
 *                      this request's input: everything the model reads) but a program's own
 *   output_tokens    = every output item of the response, by the same item rule, but a
 *                      program's own
 *   reasoning_tokens = the part of output_tokens that comes from reasoning output items
 *   cached_tokens = cache_write_tokens = 0 (the emulator has no prompt cache)
 *   total_tokens     = input_tokens + output_tokens
 *
 * "A program's own" are the calls a program made (`caller.type: "program"`), their outputs and
 * the answers to their approval requests: the runtime makes and reads them, the model does not
 * (the guide: PTC keeps intermediate tool outputs out of the model's context). The `program`
 * item (the model wrote it) and `program_output` (the model reads it) count.
 *
 * Each text field is tokenized on its own (two fields cost the sum of their counts), with
 * special-token strings such as `<|endoftext|>` read as plain text, as the API does for user
 * content. Text holding a run of LONG_RUN or more characters of one class (letters, symbols or
 * whitespace, e.g. 100 kB of one repeated character) is cut around that run and the run into
 * slices of LONG_RUN: byte-pair merging is quadratic in the length of one run, and 100 kB of a
 * single character would otherwise block the event loop for seconds. Such text counts within a
 * few tokens per slice of the exact o200k count; all other text counts exactly.
 */
import ranks from 'gpt-tokenizer/bpeRanks/o200k_base';
import { countTokens as countO200k, encode } from 'gpt-tokenizer/encoding/o200k_base';
import type { ContentPart, ConversationItem, EmittedMessage, OutputItem } from '../../schemas/items.ts';
import type { Usage } from '../../schemas/usage.ts';
import type { ModelUsage } from './stand-ins/model-decision.ts';
import { TOOL_KINDS } from './conversation/tool-kinds.ts';
import { TextMemo } from '../../runtime/index.ts';

/**
 * Per item: OpenAI's chat format wraps every message as `<|start|>{role}<|message|>{content}<|end|>`,
 * three special tokens plus one for the role (the cookbook's `tokens_per_message = 3` with the
 * role counted apart). The emulator charges the same 4 tokens for every item, whatever its type.
 */
export const ITEM_OVERHEAD_TOKENS = 4;

/** An `input_image` part: OpenAI's base cost of one image at `detail: "low"` for gpt-4o-class models. */
export const IMAGE_TOKENS = 85;

/** Runs of one character class at least this long are sliced before byte-pair encoding. */
export const LONG_RUN = 512;

/** Special-token strings (`<|endoftext|>`, `<|im_start|>`, ...) are ordinary text, never a throw. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/** Runs of one class, in the spirit of o200k's pre-tokenizer: letters and marks, symbols, whitespace. */
const RUN = /[\p{L}\p{M}]+|[^\s\p{L}\p{N}]+|\s+/gu;

/** The text as consecutive slices, each cheap to byte-pair encode (see LONG_RUN). */
function* slices(text: string): Generator<string> {
  if (text.length < LONG_RUN) {
    if (text.length > 0) yield text;
    return;
  }
  let from = 0;
  for (const match of text.matchAll(RUN)) {
    const run = match[0];
    if (run.length < LONG_RUN) continue;
    if (match.index > from) yield text.slice(from, match.index);
    for (let at = 0; at < run.length; ) {
      let end = Math.min(at + LONG_RUN, run.length);
      if (isLowSurrogate(run.charCodeAt(end)) && isHighSurrogate(run.charCodeAt(end - 1))) end += 1;
      yield run.slice(at, end);
      at = end;
    }
    from = match.index + run.length;
  }
  if (from < text.length) yield from === 0 ? text : text.slice(from);
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/**
 * Counts of texts, most recent last: the same text comes back on every turn of a conversation
 * resent whole (store: false), the same tool list and instructions with every request, and often
 * twice in one response (a program's result and the message that quotes it). Looking a text up
 * costs ~25 times less than counting it, short or long (bench/profile-http.ts: counting was 14 %
 * of the loop's time under load, the tool list's ~1,000 characters ~90 µs a request); tokenizing
 * 300,000 characters costs the loop ~8 ms.
 */
export const REMEMBERED_MAX_TEXTS = 4_096;
const countedTexts = new TextMemo<number>(REMEMBERED_MAX_TEXTS, 16 * 2 ** 20);
/** Texts at least this long are remembered; a word or two costs about as much to count as to keep. */
const REMEMBERED_MIN_CHARS = 16;

/**
 * Builds the tokenizer's tables now (about 45 ms, once per process) rather than on the first
 * response counted, where every other request on the server's loop would wait for it.
 */
export function warmTokenizer(): void {
  countSlices('ptc');
}

/** What counts a text's tokens: countTokens, or one that knows some texts' counts already (usage-off-loop.ts). */
export type TokenCounter = (text: string) => number;

/** o200k tokens in `text`. */
export function countTokens(text: string): number {
  if (text.length < REMEMBERED_MIN_CHARS) return countSlices(text);
  return countedTexts.get(text) ?? countedTexts.set(text, countSlices(text));
}

/** The count of a long text counted before, if it is still remembered. */
export function rememberedTokenCount(text: string): number | undefined {
  return text.length < REMEMBERED_MIN_CHARS ? undefined : countedTexts.peek(text);
}

/** Remembers a long text's count (counted here, or in the token thread), the oldest forgotten first. */
export function rememberTokenCount(text: string, count: number): void {
  if (text.length >= REMEMBERED_MIN_CHARS) countedTexts.set(text, count);
}

function countSlices(text: string): number {
  let count = 0;
  for (const slice of slices(text)) count += countO200k(slice, AS_TEXT);
  return count;
}

/** UTF-8 length of each token, filled on first use (ranks hold a string, or bytes that are not UTF-8). */
const tokenBytes = new Uint16Array(ranks.length);

function tokenByteLength(token: number): number {
  const known = tokenBytes[token];
  if (known) return known;
  const rank = ranks[token];
  if (rank === undefined) throw new Error(`o200k token ${token} has no bytes (a special token?)`);
  const length = typeof rank === 'string' ? Buffer.byteLength(rank, 'utf8') : rank.length;
  tokenBytes[token] = length;
  return length;
}

/** UTF-8 bytes of one code point; a lone surrogate is encoded as U+FFFD, 3 bytes, as the tokenizer does. */
function utf8Length(codePoint: number): number {
  if (codePoint < 0x80) return 1;
  if (codePoint < 0x800) return 2;
  if (codePoint < 0x10000) return 3;
  return 4;
}

/**
 * The text as consecutive token strings: one chunk per o200k token, except that a token ending
 * inside a character (part of a CJK character or an emoji's UTF-8 bytes) is merged with the
 * tokens that complete it. Chunks are slices of `text` cut between code points, so each is valid
 * UTF-16 (for valid input) and `chunks.join('') === text` always. For `output_text.delta` events.
 */
export function tokenChunks(text: string): string[] {
  const chunks: string[] = [];
  for (const slice of slices(text)) {
    let start = 0;
    let at = 0;
    let bytesRead = 0;
    let bytesWanted = 0;
    for (const token of encode(slice, AS_TEXT)) {
      bytesWanted += tokenByteLength(token);
      while (bytesRead < bytesWanted && at < slice.length) {
        const codePoint = slice.codePointAt(at) ?? 0;
        bytesRead += utf8Length(codePoint);
        at += codePoint > 0xffff ? 2 : 1;
      }
      if (bytesRead === bytesWanted && at > start) {
        chunks.push(slice.slice(start, at));
        start = at;
      }
    }
    if (start < slice.length) chunks.push(slice.slice(start)); // unreachable: the tokens cover the slice
  }
  return chunks;
}

type Part = ContentPart | EmittedMessage['content'][number];

function partTokens(part: Part, count: TokenCounter): number {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return count(part.text);
    case 'refusal':
      return count(part.refusal);
    case 'input_image':
      return IMAGE_TOKENS;
    default:
      return count(JSON.stringify(part));
  }
}

function contentTokens(content: string | readonly Part[], count: TokenCounter): number {
  if (typeof content === 'string') return count(content);
  let tokens = 0;
  for (const part of content) tokens += partTokens(part, count);
  return tokens;
}

/** Tokens of one item's payload, without the per-item overhead (the table above). */
function payloadTokens(item: ConversationItem | OutputItem, count: TokenCounter): number {
  switch (item.type) {
    case 'message':
      return contentTokens(item.content, count);
    case TOOL_KINDS.function.call.type:
      return count(item.name) + count(item.arguments);
    case TOOL_KINDS.function.output.type:
    case TOOL_KINDS.custom.output.type:
      return contentTokens(item.output, count);
    case TOOL_KINDS.custom.call.type:
      return count(item.name) + count(item.input);
    case 'program':
      return count(item.code);
    case 'program_output':
      return count(item.result);
    case 'reasoning': {
      let tokens = 0;
      for (const summary of item.summary) tokens += count(summary.text);
      if ('content' in item) for (const part of item.content ?? []) tokens += count(part.text);
      return tokens;
    }
    default:
      return count(JSON.stringify(item));
  }
}

/** Tokens one item costs in a context or an output: its payload plus ITEM_OVERHEAD_TOKENS. */
export function itemTokens(item: ConversationItem | OutputItem, count: TokenCounter = countTokens): number {
  return payloadTokens(item, count) + ITEM_OVERHEAD_TOKENS;
}

export interface UsageInput {
  readonly instructions: string | null;
  readonly tools: readonly unknown[];
  /** Everything the model reads: stored history followed by this request's input. */
  readonly context: readonly ConversationItem[];
  /** The response's output items. */
  readonly output: readonly OutputItem[];
}

type UsageItem = ConversationItem | OutputItem;

/**
 * Which items belong to a program's run: the calls it made (`caller.type: "program"`), their
 * outputs and the answers to their approval requests, matched by `call_id` or
 * `approval_request_id`. The runtime makes and reads them; the model neither writes nor reads
 * them (what PTC saves: a program's intermediate tool outputs stay out of the model's context).
 */
function programOwned(context: readonly UsageItem[], output: readonly UsageItem[]): (item: UsageItem) => boolean {
  const ids = new Set<string>();
  for (const items of [context, output]) {
    for (const item of items) {
      const fields = item as { caller?: { type?: unknown } | null; call_id?: unknown; id?: unknown };
      if (fields.caller?.type !== 'program') continue;
      if (typeof fields.call_id === 'string') ids.add(fields.call_id);
      if (typeof fields.id === 'string') ids.add(fields.id);
    }
  }
  return (item) => {
    const fields = item as { caller?: { type?: unknown } | null; call_id?: unknown; approval_request_id?: unknown };
    if (fields.caller?.type === 'program') return true;
    if (typeof fields.call_id === 'string' && ids.has(fields.call_id)) return true;
    return typeof fields.approval_request_id === 'string' && ids.has(fields.approval_request_id);
  };
}

/** The response's `usage`, by the rules at the top of this file. */
export function countUsage({ instructions, tools, context, output }: UsageInput, count: TokenCounter = countTokens): Usage {
  const programs = programOwned(context, output);
  let inputTokens = 0;
  if (instructions) inputTokens += count(instructions) + ITEM_OVERHEAD_TOKENS;
  if (tools.length > 0) inputTokens += count(JSON.stringify(tools));
  for (const item of context) if (!programs(item)) inputTokens += itemTokens(item, count);

  let outputTokens = 0;
  let reasoningTokens = 0;
  for (const item of output) {
    if (programs(item)) continue;
    const tokens = itemTokens(item, count);
    outputTokens += tokens;
    if (item.type === 'reasoning') reasoningTokens += tokens;
  }

  return {
    input_tokens: inputTokens,
    input_tokens_details: { cache_write_tokens: 0, cached_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: reasoningTokens },
    total_tokens: inputTokens + outputTokens,
  };
}

/** A model backend's own token counts as `Response.usage` (docs/MODEL-BACKEND.md). */
export function backendUsage(spent: ModelUsage): Usage {
  return {
    input_tokens: spent.input_tokens,
    input_tokens_details: { cache_write_tokens: 0, cached_tokens: Math.min(spent.cached_tokens, spent.input_tokens) },
    output_tokens: spent.output_tokens,
    output_tokens_details: { reasoning_tokens: Math.min(spent.reasoning_tokens, spent.output_tokens) },
    total_tokens: spent.input_tokens + spent.output_tokens,
  };
}
