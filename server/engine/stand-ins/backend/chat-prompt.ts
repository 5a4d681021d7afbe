import type { ContentPart, ConversationItem } from '../../../../schemas/items.ts';
import { TOOL_KINDS } from '../../conversation/tool-kinds.ts';
import type { ToolSummary } from '../../conversation/tool-set.ts';
import type { ModelContext } from '../model-decision.ts';
import type { ChatMessage, ChatTool, ChatToolCall } from './chat-wire.ts';

/**
 * How the emulator asks a chat model to act as a Responses API model with programmatic tool
 * calling: a system message with the runtime's rules and the tools as TypeScript, the
 * developer's instructions, the conversation as chat messages, and the tools the model may
 * call itself as chat `tools`. docs/MODEL-BACKEND.md shows the whole prompt.
 */

const FUNCTION = TOOL_KINDS.function;

/** The rules of programs (docs/DEVIATIONS.md, "Programs"), as a model needs them. */
export const PROGRAM_RULES = [
  'To answer with a program, reply with one fenced ```js code block holding the whole program (text outside the block is ignored). The emulator runs it and shows you its result.',
  'A program is the body of an async function in strict mode: use top-level `await`; `return` ends it.',
  'A program may use only ECMAScript built-ins and three globals: `tools` (declared below), `text(value)` and `image(url)`.',
  'There is no Node.js and no browser: no `require`, `import`, `process`, `fetch`, `console`, timers or `Buffer`.',
  'Call tools as `await tools.name(args)`; calls that do not depend on each other can run together with `Promise.all`.',
  'What the program passes to `text()` becomes its result (`program_output.result`); nothing else is shown. Emit the facts the user asked for, e.g. `text(JSON.stringify({...}))`.',
].join('\n');

/** Chat function names: letters, digits, `_` and `-`, 64 at most; a namespace's `crm.get` is `crm__get`. */
function chatNameOf(id: string, taken: ReadonlySet<string>): string {
  const base =
    id
      .replace('.', '__')
      .replace(/[^A-Za-z0-9_-]/g, '_')
      .slice(0, 60) || 'tool';
  let name = base;
  for (let n = 2; taken.has(name); n++) name = `${base}_${n}`;
  return name;
}

/** The tools the model may call itself, as chat `tools`, and the tool id each chat name stands for. */
export function directTools(tools: readonly ToolSummary[]): { tools: ChatTool[]; ids: Map<string, string> } {
  const ids = new Map<string, string>();
  const chatTools: ChatTool[] = [];
  for (const tool of tools) {
    // Only function tools go to the client as calls a chat model can make (docs/MODEL-BACKEND.md).
    if (tool.type !== 'function' || !tool.callers.includes('direct')) continue;
    const name = chatNameOf(tool.name, new Set(ids.keys()));
    ids.set(name, tool.name);
    chatTools.push({
      type: 'function',
      function: { name, ...(tool.description ? { description: tool.description } : {}), parameters: tool.parameters ?? { type: 'object', properties: {} } },
    });
  }
  return { tools: chatTools, ids };
}

/** The system message: who the model is, how it may answer, the tools as TypeScript. */
export function systemPrompt(context: ModelContext, declarations: string | undefined, directToolCount: number): string {
  const ways: string[] = [];
  if (declarations !== undefined) ways.push('write a program that calls the tools below (see the rules)');
  if (directToolCount > 0) ways.push('call one or more of the functions you are given, with a tool call');
  ways.push('answer with a message');
  const parts = [`You are a model served through the OpenAI Responses API. Each turn, ${ways.join(', or ')}.`];
  if (declarations !== undefined) {
    parts.push(`Rules of programs:\n${PROGRAM_RULES}`, `The tools a program can call:\n\`\`\`ts\n${declarations}\n\`\`\``);
  }
  return parts.join('\n\n');
}

function partsText(content: string | readonly ContentPart[]): string {
  if (typeof content === 'string') return content;
  return content
    .map((part) => {
      if (part.type === 'input_text' || part.type === 'output_text') return part.text;
      if (part.type === 'refusal') return part.refusal;
      if (part.type === 'input_image') return '[image]';
      return '[file]';
    })
    .join('');
}

/** A program made by the model, shown back to it as it wrote it. */
export function programMessage(code: string): ChatMessage {
  return { role: 'assistant', content: `\`\`\`js\n${code}\n\`\`\`` };
}

export function programOutputMessage(status: string, result: string): ChatMessage {
  return { role: 'user', content: `The program ended with status "${status}". Its result (program_output.result):\n${result}` };
}

/**
 * The conversation as chat messages. A program is the assistant's js block and its output a
 * user message with the result; the calls a program made are its own business and left out
 * (the model sees their effect in the result). Direct calls are assistant tool calls.
 */
export function conversationMessages(history: readonly ConversationItem[], ids: ReadonlyMap<string, string>): ChatMessage[] {
  const chatName = new Map([...ids].map(([name, id]) => [id, name]));
  const messages: ChatMessage[] = [];
  let pendingCalls: ChatToolCall[] = [];
  const flushCalls = (): void => {
    if (pendingCalls.length > 0) messages.push({ role: 'assistant', content: null, tool_calls: pendingCalls });
    pendingCalls = [];
  };
  for (const item of history) {
    if (item.type === FUNCTION.call.type && item.caller?.type !== 'program') {
      const id = item.namespace ? `${item.namespace}.${item.name}` : item.name;
      pendingCalls.push({ id: item.call_id, type: 'function', function: { name: chatName.get(id) ?? id, arguments: item.arguments } });
      continue;
    }
    flushCalls();
    if (item.type === 'message') {
      const text = partsText(item.content);
      if (item.role === 'assistant') messages.push({ role: 'assistant', content: text });
      else messages.push({ role: item.role === 'user' ? 'user' : 'system', content: text });
    } else if (item.type === 'program') {
      messages.push(programMessage(item.code));
    } else if (item.type === 'program_output') {
      messages.push(programOutputMessage(item.status, item.result));
    } else if (item.type === FUNCTION.output.type && item.caller?.type !== 'program') {
      messages.push({ role: 'tool', tool_call_id: item.call_id ?? '', content: partsText(item.output) });
    }
  }
  flushCalls();
  return messages;
}

const FINAL_MESSAGE = 'Now write the final message to the user from this. Answer with a message only: no program, no tool calls.';

/**
 * What is asked after a program or direct calls: the conversation, the program and its result
 * if they are not in it yet (a program that ended in this response), and the request for the
 * final message.
 */
export function finalMessageTail(context: ModelContext, conversation: readonly ChatMessage[]): ChatMessage[] {
  const tail: ChatMessage[] = [];
  if (context.phase === 'after_program' && context.program) {
    const last = [...context.history].reverse().find((item) => item.type === 'program' || item.type === 'program_output');
    if (!(last?.type === 'program' && last.code === context.program.code) && last?.type !== 'program_output') tail.push(programMessage(context.program.code));
    if (last?.type !== 'program_output') tail.push(programOutputMessage(context.program.status, context.program.result));
  }
  return [...tail, { role: 'user', content: FINAL_MESSAGE }];
}
