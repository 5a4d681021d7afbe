import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../../platform/api-error.ts';
import type { CassetteJournal, JournalDetails } from '../../journal-details.ts';
import type { ModelContext, ModelDecision, ModelFunction } from '../model-decision.ts';
import { CassetteDirectory, type IndexedEntry } from './cassette-directory.ts';
import type { CassetteEntry, Decision } from './cassette-entry.ts';
import { cassetteKey, keyDifferences, keyDigest, type CassetteKey, type KeyPhase } from './cassette-key.ts';
import { compareProgram, observedCalls, type Divergence } from './divergence.ts';
import { Redactor } from './redaction.ts';
import { currentRequest, scopeRequests } from './request-scope.ts';

export interface CassetteReplayOptions {
  readonly dir: string;
  /** PTC_REPLAY_STRICT: a divergence fails the response. */
  readonly strict: boolean;
  /** PTC_CASSETTE_REDACT, applied to keys as the recorder applied it. */
  readonly redactPattern: string | undefined;
}

/** How many near entries a miss names. */
const NEAREST = 3;

function phaseOf(context: ModelContext): KeyPhase {
  // A tool search is not recorded (docs/CASSETTES.md): what follows it is the user's turn.
  return context.phase === 'after_search' ? 'user_turn' : context.phase;
}

function describeKey(key: CassetteKey, digest: string): string {
  const lastUser = [...key.messages].reverse().find((message) => message.role === 'user')?.text ?? '';
  return `sha256 ${digest.slice(0, 12)}: model ${JSON.stringify(key.model)}, turn ${key.turn}, phase ${key.phase}, ${key.messages.length} message${key.messages.length === 1 ? '' : 's'}, last user message ${JSON.stringify(lastUser.slice(0, 120))}, tools [${key.tools.join(', ')}]`;
}

function decisionOf(decision: Decision): ModelDecision {
  const reasoning = decision.reasoning === undefined ? {} : { reasoning: decision.reasoning };
  if (decision.program !== undefined) return { type: 'program', code: decision.program, ...reasoning };
  if (decision.calls !== undefined)
    return {
      type: 'function_calls',
      calls: decision.calls.map(({ name, namespace, arguments: args, input }) => ({
        name,
        ...(namespace ? { namespace } : {}),
        ...(args !== undefined ? { arguments: (typeof args === 'object' && args !== null ? args : {}) as Record<string, unknown> } : {}),
        ...(input !== undefined ? { input } : {}),
      })),
      ...reasoning,
    };
  // A refusal is replayed as the message's text (docs/DEVIATIONS.md).
  return { type: 'message', text: decision.message ?? decision.refusal ?? '', ...reasoning };
}

/**
 * Replay mode: every turn is decided by the cassette entry whose key the request's matches,
 * and nothing else (no scenario, no inline program, no made-up answer): a request no entry
 * matches fails with `cassette_miss`. When a recorded program has ended, what it did in our
 * runtime is compared with what the upstream's did; a difference is reported (journal, log)
 * and, when strict, fails the response.
 */
export class CassetteReplay {
  readonly #options: CassetteReplayOptions;
  readonly #redactor: Redactor;
  readonly #directory: CassetteDirectory;
  #note: (request: FastifyRequest, details: JournalDetails) => void = () => {};
  #log: FastifyBaseLogger | undefined;

  constructor(options: CassetteReplayOptions) {
    this.#options = options;
    this.#redactor = new Redactor(options.redactPattern);
    this.#directory = new CassetteDirectory(options.dir);
    // A directory that cannot be read, or an entry that is not one, stops the server at start;
    // the entries parsed here are the ones the first request uses unless their files change.
    this.#directory.entries();
  }

  /** Lets the replay reach each request's journal entry and log. */
  attach(app: FastifyInstance, note: (request: FastifyRequest, details: JournalDetails) => void): void {
    scopeRequests(app);
    this.#note = note;
    this.#log = app.log;
  }

  readonly model: ModelFunction = (context) => {
    const key = cassetteKey(
      { model: context.model, instructions: context.instructions, tools: context.tools, history: context.history, phase: phaseOf(context) },
      this.#redactor,
    );
    // Looked at each time: entries edited, added or removed while the server runs count at once.
    const entries = this.#directory.entries();
    const found = this.#find(entries, key);
    if (!found) throw this.#miss(entries, key);
    const request = currentRequest();
    const divergences = context.phase === 'after_program' ? this.#check(entries, context) : [];
    this.#report(request, found.file, divergences);
    if (divergences.length > 0 && this.#options.strict) {
      const first = divergences[0]!;
      throw new ApiError(
        'cassette_divergence',
        `Replay diverged from cassette ${first.entry} at ${first.step} of program ${first.program}: recorded ${JSON.stringify(first.expected)}, got ${JSON.stringify(first.actual)} (PTC_REPLAY_STRICT=true).`,
      );
    }
    return decisionOf(found.entry.decision);
  };

  #find(entries: readonly IndexedEntry[], key: CassetteKey): IndexedEntry | undefined {
    const digest = keyDigest(key);
    return entries.find((candidate) => candidate.digest === digest);
  }

  /** The recorded program's expectations against what it did here, once it has ended. */
  #check(entries: readonly IndexedEntry[], context: ModelContext): Divergence[] {
    const program = context.program;
    if (!program) return [];
    const started = cassetteKey(
      { model: context.model, instructions: context.instructions, tools: context.tools, history: context.history, phase: 'user_turn' },
      this.#redactor,
    );
    const recorded = this.#find(entries, started);
    if (!recorded?.entry.expect || recorded.entry.decision.program !== program.code) return [];
    const observed = observedCalls(context.history, program.code);
    return compareProgram(
      recorded.entry.expect,
      { program: observed.program ?? '(started in this response)', calls: observed.calls, output: { status: program.status, result: program.result } },
      recorded.file,
      this.#redactor,
    );
  }

  #report(request: FastifyRequest | undefined, file: string, divergences: readonly Divergence[]): void {
    const log = request?.log ?? this.#log;
    for (const divergence of divergences) log?.warn({ cassette: divergence }, `replay diverged from cassette ${divergence.entry} at ${divergence.step}`);
    if (!request) return;
    const before = (request.journal?.cassette as CassetteJournal | undefined) ?? { entries: [], divergences: [] };
    const cassette: CassetteJournal = { entries: [...before.entries, file], divergences: [...before.divergences, ...divergences] };
    this.#note(request, { cassette });
  }

  #miss(entries: readonly IndexedEntry[], key: CassetteKey): ApiError {
    const nearest = entries
      .map((candidate) => ({ file: candidate.file, differs: keyDifferences(key, candidate.entry.key) }))
      .sort((a, b) => a.differs.length - b.differs.length || (a.file < b.file ? -1 : 1))
      .slice(0, NEAREST);
    const near =
      nearest.length === 0
        ? `the directory ${this.#options.dir} has no entries`
        : `nearest: ${nearest.map((entry) => `${entry.file} (differs in ${entry.differs.join(', ') || 'nothing'})`).join('; ')}`;
    return new ApiError(
      'cassette_miss',
      `No cassette entry matches this request (replay mode, PTC_REPLAY): key ${describeKey(key, keyDigest(key))}; ${near}. Record it again with PTC_RECORD, or see docs/CASSETTES.md.`,
    );
  }
}

export type { CassetteEntry };
