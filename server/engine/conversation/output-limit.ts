import type { OutputItem } from '../../../schemas/items.ts';
import type { Knobs } from '../../../schemas/knobs.ts';

export interface LimitedOutput {
  readonly output: OutputItem[];
  /** True when the response must end `incomplete` with reason `max_output_tokens`. */
  readonly incomplete: boolean;
}

/**
 * Applies `max_output_tokens` to the response's final message, as a model that ran out of
 * tokens would: the message is cut to that many tokens and marked `incomplete`, and so is the
 * response. The `incomplete` knob does the same on demand (cutting the message in half when no
 * limit is set). Program, call and reasoning items are never cut.
 */
export function limitOutput(
  output: readonly OutputItem[],
  maxOutputTokens: number | null | undefined,
  knobs: Knobs,
  tokenChunks: (text: string) => readonly string[],
): LimitedOutput {
  const forced = knobs.incomplete === 'max_output_tokens';
  // Nothing to cut: the message is not tokenized (a long one costs the loop milliseconds).
  if (maxOutputTokens == null && !forced) return { output: [...output], incomplete: false };
  const index = output.findLastIndex((item) => item.type === 'message');
  const message = output[index];
  if (message?.type !== 'message') return { output: [...output], incomplete: forced };
  const text = message.content.map((part) => part.text).join('');
  const tokens = tokenChunks(text);
  const budget = maxOutputTokens ?? (forced ? Math.floor(tokens.length / 2) : tokens.length);
  if (tokens.length <= budget && !forced) return { output: [...output], incomplete: false };
  const cut = tokens.slice(0, Math.min(budget, tokens.length)).join('');
  const limited = [...output];
  limited[index] = { ...message, status: 'incomplete', content: [{ type: 'output_text', text: cut, annotations: [], logprobs: [] }] };
  return { output: limited, incomplete: true };
}
