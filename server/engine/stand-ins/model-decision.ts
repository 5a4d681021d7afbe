import type { ProgramLimits } from '../../../runtime/index.ts';
import type { ConversationItem } from '../../../schemas/items.ts';
import type { ToolChoice } from '../../../schemas/tools.ts';
import type { ToolSummary } from '../conversation/tool-set.ts';

/**
 * What the stand-in "model" sees each turn. `phase` says what it reacts to: a user message,
 * a program that just ended, or the outputs of calls it made directly.
 */
export interface ModelContext {
  /** `after_search`: a tool search just loaded tools (`tools` has them); go on as on the user's turn, without searching again. */
  readonly phase: 'user_turn' | 'after_search' | 'after_program' | 'after_calls';
  readonly model: string;
  /** Text of the latest user message. */
  readonly lastUserText: string;
  /** How many user messages the conversation has (1 on the first turn). */
  readonly turn: number;
  readonly instructions: string | null;
  readonly metadata: Readonly<Record<string, string>>;
  /**
   * Tools of the request the model or a program can call (a namespace's as `namespace.name`),
   * who may call them, and, where the request has them, their description and schemas.
   */
  readonly tools: readonly ToolSummary[];
  /**
   * The conversation so far, oldest first: the stored history (previous_response_id,
   * conversation) and this request's input, as items. This response's output is not in it.
   */
  readonly history: readonly ConversationItem[];
  /** True when the request enables programs (`{type: "programmatic_tool_calling"}`). */
  readonly programmaticToolCalling: boolean;
  /** In `after_program`: the program that ended. */
  readonly program?: { readonly code: string; readonly status: 'completed' | 'incomplete'; readonly result: string };
  /** In `after_calls`: the direct calls and their outputs, in order. */
  readonly callOutputs?: readonly { readonly name: string; readonly arguments: string; readonly output: string }[];
  /** Request headers, lower-cased. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  /** The `seed` knob (header `x-ptc-seed`, or a scenario rule's): stand-ins that draw choices draw them from it. */
  readonly seed?: number;
  /** The request has a `tool_search` tool and deferred tools no search has loaded yet. */
  readonly toolSearch?: boolean;
  /** The `explore` knob (header `x-ptc-explore`): this request explores, or does not, whatever the server's setting. */
  readonly explore?: boolean;
  /** The request's `tool_choice`, as sent. */
  readonly toolChoice?: ToolChoice;
}

/** A call the stand-in makes itself: a function tool's `arguments`, or a custom tool's `input`. */
export interface DirectCallDecision {
  readonly name: string;
  /** For a tool inside a namespace. */
  readonly namespace?: string;
  readonly arguments?: Readonly<Record<string, unknown>>;
  readonly input?: string;
}

/** Tokens a real model spent on a decision (a model backend's); the response's usage reports them. */
export interface ModelUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly cached_tokens: number;
  readonly reasoning_tokens: number;
}

/** What the stand-in decides to emit this turn; `usage` when a real model decided. */
export type ModelDecision = (
  | {
      readonly type: 'program';
      readonly code: string;
      readonly reasoning?: string;
      /** Direct calls of the model's own in the same response, after the program's items. */
      readonly calls?: readonly DirectCallDecision[];
      /** Tighter limits for this program (never looser than the server's): sealed in its fingerprint, so every resume keeps them. */
      readonly limits?: Partial<ProgramLimits>;
    }
  | { readonly type: 'function_calls'; readonly calls: readonly DirectCallDecision[]; readonly reasoning?: string }
  /** Load deferred tools first (the request needs a `tool_search` tool). */
  | { readonly type: 'tool_search'; readonly query: string; readonly reasoning?: string }
  | { readonly type: 'message'; readonly text: string; readonly reasoning?: string }
) & { readonly usage?: ModelUsage };

/**
 * A stand-in model. Returning `undefined` passes the turn to the next stand-in in the chain
 * (in-process function, then scenario file, then inline code).
 */
export type ModelFunction = (context: ModelContext) => ModelDecision | undefined | Promise<ModelDecision | undefined>;
