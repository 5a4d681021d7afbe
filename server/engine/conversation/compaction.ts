import { openToken, sealToken, type SealingKeys } from '../../../runtime/index.ts';
import type { ConversationItem } from '../../../schemas/items.ts';
import { ApiError } from '../../platform/api-error.ts';
import type { StoredParam } from './client-loop.ts';
import { MCP_APPROVAL } from './tool-kinds.ts';

/**
 * What `POST /v1/responses/compact` keeps. The hosted compaction item is encrypted and opaque;
 * the emulator's carries, sealed (HMAC with the fingerprint key, readable, not secret), the
 * items of every program still running, so that a program paused across a compaction resumes:
 * a compaction item sent back is read as those items, at its place. What else the compacted
 * history held (assistant messages, ended programs, direct calls, reasoning, listings) is
 * dropped; user messages stay in the compacted output as they were.
 */
const VERSION = 'ptccmp1';

interface CompactionClaims {
  /** The running programs' items, in their order in the compacted history. */
  readonly items: readonly ConversationItem[];
}

/** The compaction's content: a sealed token (runtime/sealed-token.ts) of its claims. */
export function sealCompaction(items: readonly ConversationItem[], key: Buffer): string {
  return sealToken(VERSION, JSON.stringify({ items } satisfies CompactionClaims), key);
}

/** The items a compaction item holds; a 400 naming it when its content is not one the emulator sealed. */
function openCompaction(itemId: string, content: unknown, keys: SealingKeys, param: string): readonly ConversationItem[] {
  const refuse = (why: string) =>
    new ApiError(
      'invalid_value',
      `Invalid compaction item ${itemId} at ${param}: ${why}. Send back the compaction item POST /v1/responses/compact returned, unchanged.`,
      `${param}.encrypted_content`,
    );
  if (typeof content !== 'string') throw refuse('encrypted_content is not a string');
  const opened = openToken(content, VERSION, keys);
  if ('reason' in opened)
    throw refuse(opened.reason === 'seal' ? 'its seal does not verify (altered, or sealed with another key)' : `its content is not a ${VERSION} compaction`);
  return (JSON.parse(opened.text) as CompactionClaims).items;
}

/**
 * The items with each compaction item read as the items it holds; `param(i)` names the item
 * at index i in errors.
 */
export function expandCompactions(items: readonly ConversationItem[], keys: SealingKeys, param: (index: number) => string): ConversationItem[] {
  if (!items.some((item) => item.type === 'compaction')) return [...items];
  return items.flatMap((item, index) => (item.type === 'compaction' ? [...openCompaction(item.id, item.encrypted_content, keys, param(index))] : [item]));
}

/**
 * A request's history and input with their compaction items read (expandCompactions): errors
 * name a stored item by the parameter that brought it, an input item as `input[i]`.
 */
export function expandHistory(
  stored: readonly ConversationItem[],
  input: readonly ConversationItem[],
  keys: SealingKeys,
  storedParam: StoredParam,
): { stored: ConversationItem[]; input: ConversationItem[] } {
  return { stored: expandCompactions(stored, keys, () => storedParam), input: expandCompactions(input, keys, (index) => `input[${index}]`) };
}

/**
 * The items of programs that have not ended: each program without a `program_output`, the
 * items its calls made (they carry its `caller`), their outputs, and the answers to its
 * approval requests.
 */
export function runningProgramItems(history: readonly ConversationItem[]): ConversationItem[] {
  const ended = new Set(history.flatMap((item) => (item.type === 'program_output' ? [item.call_id] : [])));
  const running = new Set(history.flatMap((item) => (item.type === 'program' && !ended.has(item.call_id) ? [item.call_id] : [])));
  if (running.size === 0) return [];
  const callerOf = (item: ConversationItem): string | undefined => {
    const caller = (item as { caller?: { type?: string; caller_id?: string } | null }).caller;
    return caller?.type === 'program' ? caller.caller_id : undefined;
  };
  const calls = new Set<string>();
  const approvalRequests = new Set<string>();
  for (const item of history) {
    const caller = callerOf(item);
    if (caller === undefined || !running.has(caller)) continue;
    const callId = (item as { call_id?: unknown }).call_id;
    if (typeof callId === 'string') calls.add(callId);
    if (item.type === MCP_APPROVAL.request.type) approvalRequests.add(item.id);
  }
  return history.filter((item) => {
    if (item.type === 'program') return running.has(item.call_id);
    const caller = callerOf(item);
    if (caller !== undefined) return running.has(caller);
    if (item.type === MCP_APPROVAL.response.type) return approvalRequests.has(item.approval_request_id);
    const callId = (item as { call_id?: unknown }).call_id;
    return item.type !== 'program_output' && typeof callId === 'string' && calls.has(callId);
  });
}
