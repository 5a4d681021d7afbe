import { TOOL_KINDS } from './tool-kinds.ts';

const CALL_TYPES: ReadonlySet<string> = new Set([TOOL_KINDS.function.call.type, TOOL_KINDS.custom.call.type]);

/**
 * How many rounds of direct calls the model has made since the last user message: runs of
 * consecutive call items no program made (a response's calls are adjacent in the history).
 * Read from items as either side has them (a request's input, a Response's output).
 */
export function directRounds(history: readonly unknown[]): number {
  let rounds = 0;
  let inRun = false;
  for (const item of history as readonly { type?: unknown; role?: unknown; caller?: { type?: unknown } | null }[]) {
    if (typeof item !== 'object' || item === null) continue;
    if (item.role === 'user' && (item.type === undefined || item.type === 'message')) {
      rounds = 0;
      inRun = false;
      continue;
    }
    const direct = typeof item.type === 'string' && CALL_TYPES.has(item.type) && item.caller?.type !== 'program';
    if (direct && !inRun) rounds += 1;
    inRun = direct;
  }
  return rounds;
}
