import type { ToolSummary } from '../../conversation/tool-set.ts';
import { contentWords, nameParts, stem, type MessageText } from './message-text.ts';

/**
 * Which tools the user's message is about, as a model would pick them: those whose name it uses
 * ("Compare inventory with demand" → `get_inventory`, `get_demand`); failing that, those whose
 * description it shares words with; failing that, every tool it could call. The built-in tools
 * (shell, apply_patch, code_interpreter) are picked only when the message names them: a model
 * does not run commands or write files nobody asked for.
 */

/** The most tools one autopilot turn calls. */
export const MAX_AUTOPILOT_CALLS = 32;

/** Verbs that begin tool names and say nothing of what the tool is about. */
const GENERIC_NAME_PARTS = new Set(
  'get set list fetch find search create update delete remove read write run call lookup look up query check compute calculate do make add put post load save send by tool api'.split(' '),
);

/** The built-in tool kinds, and the words that name each in a message. */
const BUILT_IN_WORDS: Readonly<Record<string, readonly string[]>> = {
  shell: ['shell', 'command', 'terminal', 'bash'],
  hosted_shell: ['shell', 'command', 'terminal', 'bash'],
  apply_patch: ['patch', 'file', 'edit'],
  code_interpreter: ['python', 'interpreter', 'code'],
};

/** The words of a tool's name that say what it is about (`get_inventory` → `inventory`). */
export function topicWords(id: string): string[] {
  const parts = nameParts(id).filter((part) => !GENERIC_NAME_PARTS.has(part) && part.length >= 2);
  return [...new Set(parts.map(stem))];
}

export interface ToolChoice {
  readonly tools: readonly ToolSummary[];
  /** Why these: `named`, `described`, `all`. */
  readonly reason: 'named' | 'described' | 'all' | 'none';
}

export function chooseTools(candidates: readonly ToolSummary[], message: MessageText): ToolChoice {
  const builtIn = (tool: ToolSummary): boolean => Object.hasOwn(BUILT_IN_WORDS, tool.type);
  const named = candidates.filter((tool) =>
    builtIn(tool) ? BUILT_IN_WORDS[tool.type]!.some((word) => message.words.has(stem(word))) : topicWords(tool.name).some((word) => message.words.has(word)),
  );
  if (named.length > 0) return { tools: named.slice(0, MAX_AUTOPILOT_CALLS), reason: 'named' };
  const ordinary = candidates.filter((tool) => !builtIn(tool));
  const described = ordinary.filter((tool) => tool.description && [...contentWords(tool.description.slice(0, 2_000))].some((word) => word.length >= 4 && message.words.has(word)));
  if (described.length > 0) return { tools: described.slice(0, MAX_AUTOPILOT_CALLS), reason: 'described' };
  if (ordinary.length > 0) return { tools: ordinary.slice(0, MAX_AUTOPILOT_CALLS), reason: 'all' };
  return { tools: [], reason: 'none' };
}
