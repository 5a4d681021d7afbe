import type { ConversationItem } from '../../../schemas/items.ts';
import { ApiError } from '../../platform/api-error.ts';
import { locateItem, type StoredParam } from './client-loop.ts';
import { TOOL_KINDS } from './tool-kinds.ts';

const FUNCTION = TOOL_KINDS.function;
type FunctionCallOutput = Extract<ConversationItem, { type: typeof FUNCTION.output.type }>;

/** `namespace.name`, or `name`: how a call and an output without a call_id are matched. */
function toolName(item: { readonly name?: string | null; readonly namespace?: string | null }): string {
  return item.namespace ? `${item.namespace}.${item.name ?? ''}` : (item.name ?? '');
}

/**
 * openai 7.x lets a `function_call_output` leave out `call_id` and name its tool instead (`name`,
 * `namespace`). Each such output is given the call_id of the one function_call before it with that
 * tool that no output answers yet; the client-loop checks then read it as any other output. An
 * output that names no tool, or whose tool has no unanswered call or several, is a 400 naming it:
 * pairing it by guess could hand one call's result to another.
 *
 * Linear in the number of items (each waiting call is added and removed once); the items are
 * returned unchanged when no output lacks its call_id.
 */
export function bindOutputsByName(items: readonly ConversationItem[], inputStart: number, storedParam: StoredParam): readonly ConversationItem[] {
  if (!items.some((item) => item.type === FUNCTION.output.type && !item.call_id)) return items;
  // A call an output names by call_id is answered wherever that output stands, before or after.
  const answered = new Set(items.flatMap((item) => (item.type === FUNCTION.output.type && item.call_id ? [item.call_id] : [])));
  /** The calls still waiting for an output, by tool name: each is added once and deleted once. */
  const waiting = new Map<string, Set<string>>();
  const bound: ConversationItem[] = [];
  for (const [index, item] of items.entries()) {
    if (item.type === FUNCTION.call.type && !answered.has(item.call_id)) {
      const tool = toolName(item);
      waiting.set(tool, (waiting.get(tool) ?? new Set()).add(item.call_id));
    }
    if (item.type !== FUNCTION.output.type || item.call_id) {
      bound.push(item);
      continue;
    }
    const callId = callIdByName(item, waiting.get(toolName(item)), index, inputStart, storedParam);
    waiting.get(toolName(item))!.delete(callId);
    bound.push({ ...item, call_id: callId } satisfies FunctionCallOutput);
  }
  return bound;
}

/** How many waiting calls an ambiguous output's error lists: the count is given whatever it is. */
const LISTED_CALLS = 10;

function callIdByName(item: FunctionCallOutput, waiting: ReadonlySet<string> | undefined, index: number, inputStart: number, storedParam: StoredParam): string {
  const where = locateItem(index, inputStart, storedParam);
  if (!item.name) {
    throw new ApiError(
      'missing_required_parameter',
      `${where}: a function_call_output needs call_id, or name (and namespace) saying which call it answers.`,
      `${where}.call_id`,
    );
  }
  const tool = toolName(item);
  if (waiting?.size === 1) return waiting.values().next().value!;
  if (!waiting || waiting.size === 0) {
    throw new ApiError(
      'tool_output_unknown_call',
      `${where}: a function_call_output for ${tool} without call_id, but no earlier function_call of ${tool} is waiting for its output.`,
      `${where}.name`,
    );
  }
  const listed = [...waiting].slice(0, LISTED_CALLS).join(', ');
  throw new ApiError(
    'tool_output_unknown_call',
    `${where}: a function_call_output for ${tool} without call_id, but ${waiting.size} function_calls of ${tool} are waiting (${listed}${waiting.size > LISTED_CALLS ? ', …' : ''}): give call_id to say which it answers.`,
    `${where}.call_id`,
  );
}
