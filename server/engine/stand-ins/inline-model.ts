import type { ModelFunction } from './model-decision.ts';

const FENCED_JS = /```(?:js|javascript)[^\S\n]*\n([\s\S]*?)```/i;

/** The first fenced ```js (or ```javascript) block of a text, if any. */
export function fencedProgram(text: string): string | undefined {
  return FENCED_JS.exec(text)?.[1];
}

/**
 * Inline stand-in: a fenced js block in the last user message is the program, for any model
 * name; when the program ends, the final message is its result.
 */
export const inlineModel: ModelFunction = (context) => {
  const code = fencedProgram(context.lastUserText);
  if (code === undefined) return undefined;
  if (context.phase === 'user_turn' || context.phase === 'after_search') return { type: 'program', code };
  if (context.phase === 'after_program' && context.program) return { type: 'message', text: context.program.result };
  return undefined;
};
