import type { DirectCallDecision, ModelContext, ModelDecision, ModelFunction, ModelUsage } from '../model-decision.ts';
import { createChatCompletion, type BackendConnection } from './chat-client.ts';
import { conversationMessages, directTools, finalMessageTail, systemPrompt } from './chat-prompt.ts';
import type { ChatCompletion, ChatMessage, ChatRequest } from './chat-wire.ts';
import { programSyntaxError } from './program-syntax.ts';
import { declarationsOffLoop } from './declarations-off-loop.ts';

export interface ModelBackendOptions extends BackendConnection {
  /** The backend's model; when absent, the request's `model` is passed on. */
  readonly model?: string;
}

/** The first fenced ```js (or ```javascript) block of a chat answer: the program. */
const FENCED_PROGRAM = /```(?:js|javascript|mjs)[^\S\n]*\n([\s\S]*?)\n?```/i;

type Answer =
  | { readonly ok: true; readonly decision: ModelDecision }
  /** An answer the emulator cannot carry out, and what to tell the model about it. */
  | { readonly ok: false; readonly problem: string; readonly said: ChatMessage };

function usageOf(completion: ChatCompletion): ModelUsage {
  const usage = completion.usage ?? {};
  const count = (value: number | undefined): number => (Number.isSafeInteger(value) && value! >= 0 ? value! : 0);
  return {
    input_tokens: count(usage.prompt_tokens),
    output_tokens: count(usage.completion_tokens),
    cached_tokens: count(usage.prompt_tokens_details?.cached_tokens),
    reasoning_tokens: count(usage.completion_tokens_details?.reasoning_tokens),
  };
}

function addUsage(a: ModelUsage, b: ModelUsage): ModelUsage {
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    cached_tokens: a.cached_tokens + b.cached_tokens,
    reasoning_tokens: a.reasoning_tokens + b.reasoning_tokens,
  };
}

/**
 * Reads a chat answer as a decision: tool calls are direct calls, a js block (where programs
 * may be written) is a program, anything else a message. A program that does not parse, a
 * call of a function it was not given, or arguments that are not a JSON object are problems
 * the model gets one chance to mend.
 */
function readAnswer(completion: ChatCompletion, mayAct: boolean, programsEnabled: boolean, ids: ReadonlyMap<string, string>): Answer {
  const message = completion.choices?.[0]?.message ?? {};
  const content = typeof message.content === 'string' ? message.content : '';
  const reasoning = typeof message.reasoning_content === 'string' && message.reasoning_content !== '' ? { reasoning: message.reasoning_content } : {};
  const toolCalls = mayAct ? (message.tool_calls ?? []) : [];
  if (toolCalls.length > 0) {
    const made = toolCalls.map((call) => ({ name: call.function?.name ?? '', arguments: call.function?.arguments ?? '' }));
    // Shown back as text: tool calls with no tool messages after them are not a valid chat.
    const said: ChatMessage = {
      role: 'assistant',
      content: [content, ...made.map((call) => `(tool call) ${call.name}(${call.arguments})`)].filter(Boolean).join('\n'),
    };
    const calls: DirectCallDecision[] = [];
    for (const call of made) {
      const id = ids.get(call.name);
      if (id === undefined)
        return { ok: false, problem: `there is no function named "${call.name}" (you were given: ${[...ids.keys()].join(', ') || 'none'})`, said };
      let parsed: unknown;
      try {
        parsed = JSON.parse(call.arguments || '{}');
      } catch (error) {
        return { ok: false, problem: `the arguments of ${call.name} are not JSON (${(error as Error).message})`, said };
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
        return { ok: false, problem: `the arguments of ${call.name} are not a JSON object`, said };
      const dot = id.indexOf('.');
      calls.push(
        dot === -1
          ? { name: id, arguments: parsed as Record<string, unknown> }
          : { namespace: id.slice(0, dot), name: id.slice(dot + 1), arguments: parsed as Record<string, unknown> },
      );
    }
    return { ok: true, decision: { type: 'function_calls', calls, ...reasoning } };
  }
  const program = mayAct && programsEnabled ? FENCED_PROGRAM.exec(content)?.[1] : undefined;
  if (program !== undefined) {
    const syntaxError = programSyntaxError(program);
    if (syntaxError) return { ok: false, problem: `the program does not parse: ${syntaxError}`, said: { role: 'assistant', content } };
    return { ok: true, decision: { type: 'program', code: program, ...reasoning } };
  }
  return { ok: true, decision: { type: 'message', text: content, ...reasoning } };
}

/**
 * A stand-in model backed by an OpenAI-compatible Chat Completions endpoint: it decides every
 * turn it is asked (docs/MODEL-BACKEND.md). On the user's turn, and after its direct calls'
 * outputs, the model writes a program, calls tools directly or answers; after a program it
 * writes the final message.
 */
export function modelBackend(options: ModelBackendOptions): ModelFunction {
  return async (context: ModelContext): Promise<ModelDecision> => {
    // After direct calls' outputs the model may call again or write a program, as a chat model does.
    const mayAct = context.phase === 'user_turn' || context.phase === 'after_search' || context.phase === 'after_calls';
    const programTools = context.tools.filter((tool) => tool.callers.includes('programmatic'));
    const declarations = mayAct && context.programmaticToolCalling ? await declarationsOffLoop(programTools) : undefined;
    const direct = mayAct ? directTools(context.tools) : { tools: [], ids: new Map<string, string>() };
    const messages: ChatMessage[] = [{ role: 'system', content: systemPrompt(context, declarations, direct.tools.length) }];
    if (context.instructions) messages.push({ role: 'system', content: context.instructions });
    const conversation = conversationMessages(context.history, directTools(context.tools).ids);
    messages.push(...conversation);
    if (!mayAct) messages.push(...finalMessageTail(context, conversation));
    const ask = (asked: readonly ChatMessage[]): Promise<ChatCompletion> => {
      const request: ChatRequest = { model: options.model ?? context.model, messages: asked, ...(direct.tools.length > 0 ? { tools: direct.tools } : {}) };
      return createChatCompletion(options, request);
    };

    const first = await ask(messages);
    let usage = usageOf(first);
    const answer = readAnswer(first, mayAct, declarations !== undefined, direct.ids);
    if (answer.ok) return { ...answer.decision, usage };
    // One more chance, told what was wrong.
    const retry = await ask([
      ...messages,
      answer.said,
      { role: 'user', content: `That answer cannot be carried out: ${answer.problem}. Answer again, mended.` },
    ]);
    usage = addUsage(usage, usageOf(retry));
    const second = readAnswer(retry, mayAct, declarations !== undefined, direct.ids);
    if (second.ok) return { ...second.decision, usage };
    return { type: 'message', text: `ptc-emulator: the model backend's answer could not be carried out, twice: ${second.problem}. Nothing was run.`, usage };
  };
}
