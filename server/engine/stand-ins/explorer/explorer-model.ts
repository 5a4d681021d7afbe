import { createHash } from 'node:crypto';
import type { ProgramLimits } from '../../../../runtime/index.ts';
import type { ConversationItem } from '../../../../schemas/items.ts';
import type { Knobs } from '../../../../schemas/knobs.ts';
import { afterProgramSentence, type CallPlanner } from '../autopilot/autopilot-model.ts';
import { changes } from '../autopilot/tool-choice.ts';
import type { ModelContext, ModelFunction } from '../model-decision.ts';
import { SHAPES, shapeNamed, type Shape, type ShapeInput } from './shapes.ts';

/**
 * The explorer: in explore mode (`PTC_EXPLORE=on`, or a request's `x-ptc-explore: true`), each
 * conversation's program is drawn from the catalogue of shapes a client loop must survive
 * (shapes.ts), written with the request's own tools and the autopilot's arguments. The draw is
 * the seed's (the `seed` knob, or the one the server explores with: `ptc-emulator explore` sets
 * it for each run of the command) plus the conversation's first words: the same seed, the same
 * sequence. The program's first line names its shape; the explorer remembers the programs it
 * wrote, so that a program that merely starts with that line (a user's inline code) is not
 * taken for one of its own by the report, the knobs or the final message.
 */

const MARKER = /^\/\/ ptc-emulator explorer: (\S+) \(seed (\d+)\)/;

/** Programs the explorer remembers having written (their code's hashes), the newest. */
const MAX_REMEMBERED = 10_000;

/** The kinds of tools the model calls directly. */
const DIRECT_KINDS = new Set(['function', 'custom']);

export interface ExplorerOptions {
  readonly planner: CallPlanner;
  readonly limits: ProgramLimits;
  /** Explore every request (PTC_EXPLORE=on), not only those whose `explore` knob asks. */
  readonly always: boolean;
}

export interface ExploredProgram {
  readonly shape: string;
  readonly seed: number;
}

function hashOf(code: string): string {
  return createHash('sha256').update(code).digest('base64url');
}

/** Which applicable shape a conversation draws: the seed, shifted by the conversation's first words and turn. */
function drawn(applicable: readonly Shape[], seed: number, context: ModelContext): Shape {
  const shift = createHash('sha256')
    .update(`${context.turn}\n${context.lastUserText.slice(0, 65_536)}`)
    .digest()
    .readUInt32BE(0);
  return applicable[(seed + shift) % applicable.length]!;
}

export class Explorer {
  readonly #options: ExplorerOptions;
  readonly #written = new Map<string, ExploredProgram>();
  /** The seed of requests that set none; `ptc-emulator explore` sets one per run of its command. */
  seed = 0;

  constructor(options: ExplorerOptions) {
    this.#options = options;
  }

  /** The shape and seed of a program this explorer wrote; undefined for any other program. */
  explored(code: string): ExploredProgram | undefined {
    return MARKER.test(code) ? this.#written.get(hashOf(code)) : undefined;
  }

  #remember(code: string, program: ExploredProgram): void {
    if (this.#written.size >= MAX_REMEMBERED) this.#written.delete(this.#written.keys().next().value!);
    this.#written.set(hashOf(code), program);
  }

  /** Whether this request explores: its knob, else the server's setting. */
  #on(context: Pick<ModelContext, 'explore'>): boolean {
    return context.explore ?? this.#options.always;
  }

  readonly model: ModelFunction = async (context) => {
    if (context.phase === 'after_program') {
      const explored = context.program && this.explored(context.program.code);
      return explored ? { type: 'message', text: `Explorer, shape ${explored.shape}: ${afterProgramSentence(context)}` } : undefined;
    }
    if ((context.phase !== 'user_turn' && context.phase !== 'after_search') || !this.#on(context) || !context.programmaticToolCalling) return undefined;
    const planned = await this.#options.planner.plan(context);
    // A plan that failed (too costly) says so here: the autopilot would only plan it again.
    if (typeof planned === 'string') return { type: 'message', text: planned };
    if (planned.programCalls.length === 0) return undefined;
    const input: ShapeInput = {
      independent: planned.programCalls.filter((call) => call.references.length === 0),
      kinds: new Map(planned.programCalls.map((call, index) => [call.tool, planned.programKinds[index]!])),
      canCallDirectly: context.tools.some((tool) => tool.callers.includes('direct') && DIRECT_KINDS.has(tool.type) && !changes(tool)),
      direct: [],
      limits: this.#options.limits,
    };
    const seed = (context.seed ?? this.seed) >>> 0;
    let shape = drawn(
      SHAPES.filter((candidate) => candidate.applies(input)),
      seed,
      context,
    );
    // The model's own call is planned only for the shape that makes one (a plan costs a thread's time).
    let direct = input.direct;
    if (shape.name === 'direct_and_programmatic') {
      const directPlan = await this.#options.planner.plan(context, { programmatic: false });
      direct = typeof directPlan === 'string' ? [] : directPlan.direct;
      if (direct.length === 0)
        shape = drawn(
          SHAPES.filter((candidate) => candidate.applies({ ...input, canCallDirectly: false })),
          seed,
          context,
        );
    }
    const written = shape.write({ ...input, direct });
    const code = `// ptc-emulator explorer: ${shape.name} (seed ${seed}): ${shape.description}.\n${written.body}\n`;
    this.#remember(code, { shape: shape.name, seed });
    return {
      type: 'program',
      code,
      reasoning: `Explorer: shape ${shape.name}, drawn with seed ${seed}.`,
      ...(written.limits ? { limits: written.limits(code) } : {}),
      ...(written.calls ? { calls: written.calls } : {}),
    };
  };

  /**
   * The knobs the shape of the conversation's program asks of its responses (`no_message_yet`:
   * the message comes a response later): the program of this turn, the latest one made since
   * the user's last message.
   */
  knobs(context: ModelContext): Knobs | undefined {
    const code = programOfThisTurn(context.history);
    const explored = code === undefined ? undefined : this.explored(code);
    return explored ? shapeNamed(explored.shape)?.knobs : undefined;
  }
}

/** The code of the latest program since the user's last message, if any. */
function programOfThisTurn(history: readonly ConversationItem[]): string | undefined {
  for (let index = history.length - 1; index >= 0; index--) {
    const item = history[index]!;
    if (item.type === 'program') return item.code;
    if (item.type === 'message' && item.role === 'user') return undefined;
  }
  return undefined;
}
