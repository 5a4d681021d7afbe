import { canonicalJson } from './cassette-key.ts';
import type { ExpectedCall, Expectations, RecordedCall } from './cassette-entry.ts';
import type { Redactor } from './redaction.ts';

/** A replayed program that did otherwise in our runtime than in the recorded one. */
export interface Divergence {
  /** The cassette entry of the program. */
  readonly entry: string;
  /** The program's call_id on this server. */
  readonly program: string;
  /** Where: `call 2 (batch 1)`, or `program_output`. */
  readonly step: string;
  readonly expected: unknown;
  readonly actual: unknown;
}

/** The calls a program made, in order, and the pause each came in. */
export type ObservedCall = ExpectedCall;

export interface LooseItem {
  readonly type?: unknown;
  readonly call_id?: unknown;
  readonly code?: unknown;
  readonly name?: unknown;
  readonly namespace?: unknown;
  readonly arguments?: unknown;
  readonly input?: unknown;
  readonly caller?: { readonly type?: unknown; readonly caller_id?: unknown } | null;
}

function parsedArguments(text: unknown): unknown {
  if (typeof text !== 'string') return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A call item (a program's or a direct one) as a cassette keeps it: name, and arguments parsed or input. */
export function recordedCall(item: LooseItem): RecordedCall {
  const type = typeof item.type === 'string' ? item.type : 'call';
  return {
    name: typeof item.name === 'string' ? item.name : type,
    ...(typeof item.namespace === 'string' ? { namespace: item.namespace } : {}),
    ...(item.arguments !== undefined ? { arguments: parsedArguments(item.arguments) } : {}),
    ...(typeof item.input === 'string' ? { input: item.input } : {}),
  };
}

/**
 * The calls the program with this code made, read from the conversation: the last `program`
 * item with the code, then every call whose `caller` names it. A call that follows one of its
 * outputs starts the next batch (the program had paused and been resumed).
 */
export function observedCalls(history: readonly unknown[], code: string): { program: string | undefined; calls: ObservedCall[] } {
  const items = history as readonly LooseItem[];
  let start = -1;
  for (let index = items.length - 1; index >= 0; index--) {
    if (items[index]?.type === 'program' && items[index]?.code === code) {
      start = index;
      break;
    }
  }
  if (start < 0) return { program: undefined, calls: [] };
  const program = items[start]!.call_id as string;
  const callIds = new Set<unknown>();
  const calls: ObservedCall[] = [];
  let batch = 1;
  let answeredSinceLastCall = false;
  for (const item of items.slice(start + 1)) {
    const type = typeof item.type === 'string' ? item.type : '';
    if (item.caller?.caller_id === program && !type.endsWith('_output')) {
      if (answeredSinceLastCall) batch++;
      answeredSinceLastCall = false;
      callIds.add(item.call_id);
      calls.push({ ...recordedCall(item), batch });
    } else if (type.endsWith('_output') && callIds.has(item.call_id)) {
      answeredSinceLastCall = true;
    }
  }
  return { program, calls };
}

function comparable(call: ObservedCall | undefined, redactor: Redactor): string | undefined {
  if (call === undefined) return undefined;
  return canonicalJson(redactor.redactValue({ ...call }));
}

/** The first difference between what a program was recorded doing and what it did here, if any. */
export function compareProgram(
  expected: Expectations,
  observed: { readonly program: string; readonly calls: readonly ObservedCall[]; readonly output: { status: string; result: string } },
  entry: string,
  redactor: Redactor,
): Divergence[] {
  const divergences: Divergence[] = [];
  const count = Math.max(expected.calls.length, observed.calls.length);
  for (let index = 0; index < count; index++) {
    const want = expected.calls[index];
    const got = observed.calls[index];
    if (comparable(want, redactor) !== comparable(got, redactor)) {
      divergences.push({
        entry,
        program: observed.program,
        step: `call ${index + 1} (batch ${(want ?? got)!.batch})`,
        expected: want ?? null,
        actual: got ?? null,
      });
      // Later calls follow from this one: the first difference is the one to look at.
      break;
    }
  }
  if (expected.output) {
    const got = redactor.redactValue(observed.output);
    if (got.status !== expected.output.status || got.result !== expected.output.result) {
      divergences.push({ entry, program: observed.program, step: 'program_output', expected: expected.output, actual: got });
    }
  }
  return divergences;
}
