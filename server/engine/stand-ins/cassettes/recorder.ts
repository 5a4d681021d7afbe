import { isDirectCall } from '../../conversation/direct-rounds.ts';
import type { ToolSummary } from '../../conversation/tool-set.ts';
import type { CassetteEntry, ExpectedCall, RecordedCall } from './cassette-entry.ts';
import { cassetteKey, type KeyPhase } from './cassette-key.ts';
import { recordedCall, type LooseItem } from './divergence.ts';
import type { Redactor } from './redaction.ts';

/**
 * Turns one upstream exchange (the conversation before it, and the Response it answered) into
 * cassette entries, one per model decision: a program the model wrote, direct calls it made, a
 * message or refusal it gave. What the upstream runtime did with a program (its calls, batch by
 * batch, and its `program_output`) is added to the program's entry as expectations, in this
 * response and in the later ones that resume it.
 */

interface OutputItemLike extends LooseItem {
  readonly role?: unknown;
  readonly content?: unknown;
  readonly status?: unknown;
  readonly result?: unknown;
  readonly summary?: unknown;
}

/** A program being recorded: its entry, and how many of its pauses have been seen. */
interface OpenProgram {
  entry: CassetteEntry;
  batches: number;
}

export interface Exchange {
  readonly model: string;
  readonly instructions: string | null | undefined;
  readonly tools: readonly ToolSummary[];
  /** The conversation before the response: stored history and the request's input. */
  readonly history: readonly unknown[];
  readonly output: readonly unknown[];
}

const isProgramCall = (item: OutputItemLike): boolean => item.caller?.type === 'program' && typeof item.type === 'string' && !item.type.endsWith('_output');

/** What the model reacts to after the conversation so far: the user, a program that ended, or direct calls answered. */
function phaseAfter(history: readonly unknown[]): KeyPhase {
  for (let index = history.length - 1; index >= 0; index--) {
    const item = history[index] as OutputItemLike;
    if (item.type === 'reasoning') continue;
    if (item.type === 'program_output') return 'after_program';
    if (typeof item.type === 'string' && item.type.endsWith('_output')) {
      return (item as { caller?: { type?: unknown } }).caller?.type === 'program' ? 'after_program' : 'after_calls';
    }
    return 'user_turn';
  }
  return 'user_turn';
}

function reasoningText(item: OutputItemLike): string {
  return Array.isArray(item.summary) ? item.summary.map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : '')).join('\n') : '';
}

export class CassetteRecorder {
  /** Programs by the upstream's call_id, whose later pauses and output add to their entry. */
  readonly #programs = new Map<string, OpenProgram>();

  /** The entries this exchange wrote or changed (a program's entry is rewritten as it goes on). */
  record(exchange: Exchange, redactor: Redactor): CassetteEntry[] {
    const changed = new Set<CassetteEntry>();
    const key = (phase: KeyPhase) =>
      cassetteKey({ model: exchange.model, instructions: exchange.instructions, tools: exchange.tools, history: exchange.history, phase }, redactor);
    // Calls and programs are decided on the user's turn, or after direct calls' outputs (a
    // model reading one page and asking for the next): each round under a key of its own.
    const acting: KeyPhase = phaseAfter(exchange.history) === 'after_calls' ? 'after_calls' : 'user_turn';
    const output = exchange.output as readonly OutputItemLike[];
    let reasoning: string[] = [];
    const takeReasoning = (): { reasoning?: string } => {
      const text = reasoning.filter(Boolean).join('\n');
      reasoning = [];
      return text ? { reasoning: redactor.redact(text) } : {};
    };
    let directCalls: RecordedCall[] = [];
    let programEnded = false;
    const pausedHere = new Set<string>();
    const flushDirectCalls = (): void => {
      if (directCalls.length === 0) return;
      changed.add({ key: key(acting), decision: { ...takeReasoning(), calls: redactor.redactValue(directCalls) } });
      directCalls = [];
    };
    for (const item of output) {
      if (item.type === 'reasoning') {
        reasoning.push(reasoningText(item));
        continue;
      }
      if (!isDirectCall(item)) flushDirectCalls();
      if (item.type === 'program' && typeof item.code === 'string' && typeof item.call_id === 'string') {
        const entry: CassetteEntry = { key: key(acting), decision: { ...takeReasoning(), program: redactor.redact(item.code) }, expect: { calls: [] } };
        this.#programs.set(item.call_id, { entry, batches: 0 });
        changed.add(entry);
      } else if (isProgramCall(item)) {
        const programId = String(item.caller!.caller_id);
        const open = this.#programs.get(programId);
        if (!open) continue;
        // One pause per response: every call of the program in this response is one batch.
        if (!pausedHere.has(programId)) {
          pausedHere.add(programId);
          open.batches++;
        }
        const call: ExpectedCall = { ...redactor.redactValue(recordedCall(item)), batch: open.batches };
        open.entry.expect = { ...open.entry.expect, calls: [...(open.entry.expect?.calls ?? []), call] };
        changed.add(open.entry);
      } else if (item.type === 'program_output') {
        programEnded = true;
        const open = typeof item.call_id === 'string' ? this.#programs.get(item.call_id) : undefined;
        if (!open) continue;
        open.entry.expect = {
          calls: open.entry.expect?.calls ?? [],
          output: { status: item.status === 'completed' ? 'completed' : 'incomplete', result: redactor.redact(String(item.result ?? '')) },
        };
        this.#programs.delete(item.call_id as string);
        changed.add(open.entry);
      } else if (isDirectCall(item)) {
        directCalls.push(recordedCall(item));
      } else if (item.type === 'message' && item.role === 'assistant') {
        const parts = Array.isArray(item.content) ? (item.content as { type?: unknown; text?: unknown; refusal?: unknown }[]) : [];
        const refusal = parts.find((part) => part.type === 'refusal');
        const text = parts.map((part) => (typeof part.text === 'string' ? part.text : '')).join('');
        const phase = programEnded ? 'after_program' : phaseAfter(exchange.history);
        const decision = refusal && typeof refusal.refusal === 'string' ? { refusal: redactor.redact(refusal.refusal) } : { message: redactor.redact(text) };
        changed.add({ key: key(phase), decision: { ...takeReasoning(), ...decision } });
      }
    }
    flushDirectCalls();
    return [...changed];
  }
}
