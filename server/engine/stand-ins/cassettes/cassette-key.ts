import { createHash } from 'node:crypto';
import type { ToolSummary } from '../../conversation/tool-set.ts';
import { directRounds } from '../../conversation/direct-rounds.ts';
import type { Redactor } from './redaction.ts';

/**
 * The match key of a model decision: what a replay must see to give the recorded decision.
 * Made of what stays the same between instances (never ids, call ids or fingerprints, which
 * each server makes its own): the model, the instructions, the tools (names, and a digest of
 * their definitions), every message of the conversation so far (role and text, oldest first),
 * the user turn (how many user messages), and the phase: the user's turn, or after a program
 * or direct calls ended (and, from the second round of direct calls on, which round). Two
 * requests with the same last user message differ in the messages before it or the turn.
 */
export interface CassetteKey {
  readonly model: string;
  readonly instructions: string | null;
  readonly tools: string[];
  readonly tools_sha256: string;
  readonly turn: number;
  readonly phase: KeyPhase;
  /**
   * After direct calls, when the model has made more than one round of them since the last
   * user message: which round it is answering (absent otherwise, so that keys recorded before
   * it existed still match).
   */
  readonly rounds?: number;
  readonly messages: KeyMessage[];
}

export type KeyPhase = 'user_turn' | 'after_program' | 'after_calls';

export interface KeyMessage {
  readonly role: string;
  readonly text: string;
}

/** An item as either side has it: a request's input item or a Response's output item. */
type LooseItem = { readonly type?: unknown; readonly role?: unknown; readonly content?: unknown };

function partText(part: unknown): string {
  if (typeof part !== 'object' || part === null) return '';
  const { text, refusal, type } = part as { text?: unknown; refusal?: unknown; type?: unknown };
  if (typeof text === 'string') return text;
  if (typeof refusal === 'string') return refusal;
  // An image or a file: its place is kept, not its bytes.
  return typeof type === 'string' ? `[${type}]` : '';
}

/** The messages of a conversation (user, assistant, system, developer), as role and text. */
export function keyMessages(items: readonly unknown[]): KeyMessage[] {
  const messages: KeyMessage[] = [];
  for (const item of items as readonly LooseItem[]) {
    if (typeof item !== 'object' || item === null || typeof item.role !== 'string') continue;
    if (item.type !== undefined && item.type !== 'message') continue;
    const text = typeof item.content === 'string' ? item.content : Array.isArray(item.content) ? item.content.map(partText).join('') : '';
    messages.push({ role: item.role, text });
  }
  return messages;
}

/** JSON with object keys sorted: the same value always gives the same text (and digest). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_, element: unknown) =>
    element !== null && typeof element === 'object' && !Array.isArray(element)
      ? Object.fromEntries(Object.entries(element).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : element,
  );
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export interface KeyParts {
  readonly model: string;
  readonly instructions: string | null | undefined;
  readonly tools: readonly ToolSummary[];
  /** The conversation before this decision: history and the request's input, not this response's output. */
  readonly history: readonly unknown[];
  readonly phase: KeyPhase;
}

/** The key of a decision, with every string redacted as the cassette stores it. */
export function cassetteKey(parts: KeyParts, redactor: Redactor): CassetteKey {
  const messages = keyMessages(parts.history);
  // Round after round of direct calls, the messages stay the same: the round tells them apart.
  const rounds = parts.phase === 'after_calls' ? directRounds(parts.history) : 0;
  const tools = parts.tools.map((tool) => ({
    name: tool.name,
    type: tool.type,
    callers: [...tool.callers].sort(),
    description: tool.description ?? null,
    parameters: tool.parameters ?? null,
    output_schema: tool.outputSchema ?? null,
  }));
  return redactor.redactValue({
    model: parts.model,
    instructions: parts.instructions ?? null,
    tools: tools.map((tool) => tool.name),
    tools_sha256: sha256(canonicalJson(tools)),
    turn: messages.filter((message) => message.role === 'user').length,
    phase: parts.phase,
    ...(rounds > 1 ? { rounds } : {}),
    messages,
  });
}

/** The digest that names a key (and its entry's file). */
export function keyDigest(key: CassetteKey): string {
  return sha256(canonicalJson(key));
}

/** The fields in which two keys differ, for a miss's "nearest entries". */
export function keyDifferences(a: CassetteKey, b: CassetteKey): string[] {
  const fields = ['model', 'instructions', 'tools_sha256', 'turn', 'phase', 'rounds', 'messages'] as const;
  return fields.filter((field) => canonicalJson(a[field]) !== canonicalJson(b[field])).map((field) => (field === 'tools_sha256' ? 'tools' : field));
}
