import type { ModelContext, ModelDecision, ModelFunction } from './model-decision.ts';

const HOW_TO_STEER = [
  'ptc-emulator has no model: a stand-in decides each turn, and nothing told it what to do here (the autopilot is off).',
  'To run a program, put it in a fenced ```js block in the last user message, or add a rule to the scenario file (PTC_SCENARIOS),',
  'or pass a model function to buildServer({ model }) when embedding the server, or turn the autopilot on (PTC_AUTOPILOT=on). See docs/STAND-IN.md.',
].join(' ');

/** Why nothing ran, when no stand-in decided a user's turn: the `x-ptc-nothing-ran` header and the journal say it. */
export const NOTHING_RAN = 'no stand-in decided this turn and the autopilot is off; see docs/STAND-IN.md';

/** A stand-in of the chain and the name the journal and the `x-ptc-stand-in` header give it. */
export interface NamedStandIn {
  readonly name: string;
  readonly model: ModelFunction;
}

/** A decision and the stand-in that made it (`fallback` when none of the chain did). */
export interface StandInDecision {
  readonly decision: ModelDecision;
  readonly by: string;
  /** Set when the fallback answered a user's turn: nothing ran, and this says why. */
  readonly nothingRan?: string;
}

/**
 * The model stand-ins in order (in-process function, cassettes, scenario file, model backend,
 * inline code, explorer, autopilot). The first that decides wins; when none does (the autopilot
 * is off), a program that ended is summarised by its result, direct calls by their outputs, and
 * a user turn gets a message saying how to steer the stand-in, and why nothing ran.
 */
export class ModelStandIn {
  readonly #chain: readonly NamedStandIn[];

  constructor(chain: readonly NamedStandIn[]) {
    this.#chain = chain;
  }

  async decide(context: ModelContext): Promise<StandInDecision> {
    for (const { name, model } of this.#chain) {
      const decision = await model(context);
      if (decision) return { decision, by: name };
    }
    if (context.phase === 'after_program' && context.program) return { decision: { type: 'message', text: context.program.result }, by: 'fallback' };
    if (context.phase === 'after_calls' && context.callOutputs) {
      return { decision: { type: 'message', text: context.callOutputs.map((call) => call.output).join('\n') }, by: 'fallback' };
    }
    return { decision: { type: 'message', text: HOW_TO_STEER }, by: 'fallback', nothingRan: NOTHING_RAN };
  }
}
