import { TOOL_KINDS } from './tool-kinds.ts';

/** The item types of calls a model makes for the client to run (function, custom, shell, apply_patch). */
const CLIENT_CALL_TYPES: ReadonlySet<unknown> = new Set(
  Object.values(TOOL_KINDS)
    .filter((kind) => kind.owner === 'client')
    .map((kind) => kind.call.type),
);

/** An item as either side has it: a request's input item, or a Response's output item. */
interface LooseItem {
  readonly type?: unknown;
  readonly role?: unknown;
  readonly caller?: { readonly type?: unknown } | null;
}

/** A call the model made itself for the client to run (no caller, or a direct one), not a program's. */
export function isDirectCall(item: LooseItem): boolean {
  return CLIENT_CALL_TYPES.has(item.type) && (item.caller === undefined || item.caller === null || item.caller.type === 'direct');
}

/**
 * How many rounds of direct calls the model has made since the last user message: runs of
 * consecutive direct calls (a response's calls are adjacent in the history).
 */
export function directRounds(history: readonly unknown[]): number {
  let rounds = 0;
  let inRun = false;
  for (const item of history as readonly LooseItem[]) {
    if (typeof item !== 'object' || item === null) continue;
    if (item.role === 'user' && (item.type === undefined || item.type === 'message')) {
      rounds = 0;
      inRun = false;
      continue;
    }
    const direct = isDirectCall(item);
    if (direct && !inRun) rounds += 1;
    inRun = direct;
  }
  return rounds;
}
