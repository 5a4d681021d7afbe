import type { ToolSummary } from '../../conversation/tool-set.ts';
import { contentWords, nameParts, stem, type MessageText } from './message-text.ts';
import { FIXED_LIMITS } from '../../../../schemas/fixed-limits.ts';

/**
 * Which tools the user's message is about, as a model would pick them, in passes: those whose
 * own name it uses ("Compare inventory with demand" → `get_inventory`, `get_demand`; asked to
 * act, "Book a flight", the one that acts, not `list_flights` beside it); those whose
 * verb it uses ("Fetch https://…" → `fetch_page`); those of a namespace or MCP server it names;
 * those whose description shares a word with it; failing all, every tool it could call. A tool
 * that changes something (its name begins with `create`, `delete`, `send`, `book`, …) is picked
 * only when the message uses its verb ("Book the flight"), never because it shares a noun with a
 * question, never as one of "every tool". The built-in tools (shell, apply_patch,
 * code_interpreter) are picked only when the message names them.
 */

/** The most tools one autopilot turn calls. */
export const MAX_AUTOPILOT_CALLS = FIXED_LIMITS.autopilotCalls.value;

/** Verbs that begin tool names and say nothing of what the tool is about. */
const GENERIC_NAME_PARTS = new Set(
  'get set list fetch find search create update delete remove read write run call lookup look up query check compute calculate do make add put post load save send by tool api'.split(
    ' ',
  ),
);

/** Verbs of tools that change something: such a tool is called only when the message asks for that. */
const CHANGING_VERBS = new Set(
  (
    'create add insert new make update set edit modify patch put upsert rename move assign delete remove drop destroy purge clear cancel close ' +
    'archive send post notify email message publish deploy book reserve order buy purchase pay charge refund transfer submit approve reject ' +
    'escalate write save upload import reset revoke grant invite schedule'
  ).split(' '),
);

/** The built-in tool kinds, and the words that name each in a message. */
const BUILT_IN_WORDS: Readonly<Record<string, readonly string[]>> = {
  shell: ['shell', 'command', 'terminal', 'bash'],
  hosted_shell: ['shell', 'command', 'terminal', 'bash'],
  apply_patch: ['patch', 'file', 'edit'],
  code_interpreter: ['python', 'interpreter', 'code'],
};

/** A tool's own name, without its namespace or MCP server: `crm.add_note` → `add_note`. */
function ownName(id: string): string {
  return id.slice(id.indexOf('.') + 1);
}

/** The words of a name that say what it is about (`get_inventory` → `inventory`, `book_flight` → `flight`, `get_order` → `order`). */
export function topicWords(name: string): string[] {
  const parts = nameParts(name);
  const noun = parts.filter((part, index) => !(index === 0 && CHANGING_VERBS.has(part)) && !GENERIC_NAME_PARTS.has(part) && part.length >= 2);
  return [...new Set(noun.map(stem))];
}

/** The verb a tool's own name begins with, if it begins with one the autopilot knows. */
function verbOf(id: string): string | undefined {
  const first = nameParts(ownName(id))[0];
  return first !== undefined && (GENERIC_NAME_PARTS.has(first) || CHANGING_VERBS.has(first)) ? first : undefined;
}

/** Whether the message uses a verb: "Book", "booking", "booked" for `book`; "deleting" for `delete`. */
function usesVerb(message: MessageText, verb: string): boolean {
  const root = verb.length > 3 ? verb.replace(/e$/, '') : verb;
  return [...message.allWords].some((word) => word === verb || (root.length >= 3 && word.startsWith(root) && word.length <= root.length + 4));
}

/** Whether a tool's name says it changes something (`create_order`, `crm.delete_note`). */
export function changes(tool: Pick<ToolSummary, 'name'>): boolean {
  const verb = verbOf(tool.name);
  return verb !== undefined && CHANGING_VERBS.has(verb);
}

export interface ToolChoice {
  readonly tools: readonly ToolSummary[];
  /** Why these. */
  readonly reason: 'named' | 'verb' | 'group' | 'described' | 'all' | 'forced' | 'none';
}

export function chooseTools(candidates: readonly ToolSummary[], message: MessageText): ToolChoice {
  const builtIn = (tool: ToolSummary): boolean => Object.hasOwn(BUILT_IN_WORDS, tool.type);
  // A tool that changes something is one the message must ask for by its verb.
  const allowed = (tool: ToolSummary): boolean => !changes(tool) || usesVerb(message, verbOf(tool.name)!);
  const pick = (reason: ToolChoice['reason'], tools: readonly ToolSummary[]): ToolChoice | undefined =>
    tools.length > 0 ? { tools: tools.slice(0, MAX_AUTOPILOT_CALLS), reason } : undefined;
  const mentioned = candidates.filter((tool) =>
    builtIn(tool)
      ? BUILT_IN_WORDS[tool.type]!.some((word) => message.words.has(stem(word)))
      : allowed(tool) && topicWords(ownName(tool.name)).some((word) => message.words.has(word)),
  );
  // Asked to act ("Delete user u_77", "Book a flight"), the model acts: a tool that only shares
  // the noun of the action (`get_user_profile`, `list_flights`) is left out.
  const acting = mentioned.filter(changes);
  const actedOn = new Set(acting.flatMap((tool) => topicWords(ownName(tool.name))));
  const named =
    acting.length === 0
      ? mentioned
      : mentioned.filter((tool) => changes(tool) || !topicWords(ownName(tool.name)).some((word) => actedOn.has(word) && message.words.has(word)));
  const ordinary = candidates.filter((tool) => !builtIn(tool));
  const byVerb = ordinary.filter((tool) => {
    const verb = verbOf(tool.name);
    return verb !== undefined && verb !== 'get' && usesVerb(message, verb);
  });
  const byGroup = ordinary.filter(
    (tool) => tool.name.includes('.') && allowed(tool) && topicWords(tool.name.slice(0, tool.name.indexOf('.'))).some((word) => message.words.has(word)),
  );
  const described = ordinary.filter(
    (tool) =>
      !changes(tool) && tool.description && [...contentWords(tool.description.slice(0, 2_000))].some((word) => word.length >= 4 && message.words.has(word)),
  );
  return (
    pick('named', named) ??
    pick('verb', byVerb) ??
    pick('group', byGroup) ??
    pick('described', described) ??
    pick(
      'all',
      ordinary.filter((tool) => !changes(tool)),
    ) ?? { tools: [], reason: 'none' }
  );
}
