import type { ModelContext, ModelDecision, ModelFunction } from './model-decision.ts';

const HOW_TO_STEER = [
  'ptc-emulator has no model: a stand-in decides each turn, and nothing told it what to do here.',
  'To run a program, put it in a fenced ```js block in the last user message, or add a rule to the scenario file (PTC_SCENARIOS),',
  'or pass a model function to buildServer({ model }) when embedding the server. See docs/STAND-IN.md.',
].join(' ');

/**
 * The model stand-ins in order (in-process function, scenario file, inline code). The first
 * that decides wins; when none does, a program that ended is summarised by its result, direct
 * calls by their outputs, and a user turn gets a message saying how to steer the stand-in.
 */
export class ModelStandIn {
  readonly #chain: readonly ModelFunction[];

  constructor(chain: readonly ModelFunction[]) {
    this.#chain = chain;
  }

  async decide(context: ModelContext): Promise<ModelDecision> {
    for (const model of this.#chain) {
      const decision = await model(context);
      if (decision) return decision;
    }
    if (context.phase === 'after_program' && context.program) return { type: 'message', text: context.program.result };
    if (context.phase === 'after_calls' && context.callOutputs) {
      return { type: 'message', text: context.callOutputs.map((call) => call.output).join('\n') };
    }
    return { type: 'message', text: HOW_TO_STEER };
  }
}
