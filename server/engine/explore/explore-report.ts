import { SHAPES } from '../stand-ins/explorer/shapes.ts';
import { outcomeOf, type ExploredConversation } from './explore-ledger.ts';

/**
 * The client-loop report: for each shape of the catalogue, what the conversations that drew it
 * came to: completed (the final message was delivered), refused (the client-loop 400 its loop
 * got, code and message), abandoned (the client stopped before the program and its message were
 * done), or never reached. A shape passes when every conversation that reached it completed.
 */

/** A run of the command (`ptc-emulator explore`): its seed, how it ended, and whether that is a failure. */
export interface ExploreRun {
  readonly seed: number;
  readonly ended: string;
  readonly failed: boolean;
}

export interface ShapeRow {
  readonly shape: string;
  readonly description: string;
  /** `passed`, `failed`, or `not reached`. */
  readonly verdict: 'passed' | 'failed' | 'not reached';
  readonly reached: number;
  readonly completed: number;
  readonly abandoned: number;
  /** Conversations that completed in a run whose command then failed (its exit status, a timeout). */
  readonly command_failed: number;
  /** Each code of refusal: how many conversations got it, and the message of the first. */
  readonly refused: readonly { readonly code: string; readonly message: string; readonly count: number }[];
  /** How its requests came: `stream`, `no stream`, `store`, `no store`. */
  readonly transports: readonly string[];
  readonly conversations: readonly ExploredConversationView[];
}

export interface ExploredConversationView {
  readonly program: string;
  readonly seed: number;
  readonly started_at: string;
  readonly outcome: 'completed' | 'refused' | 'abandoned' | 'command_failed';
  readonly requests: number;
  readonly program_status: 'completed' | 'incomplete' | null;
  readonly program_error: string | null;
  readonly refused: ExploredConversation['refused'] | null;
  readonly transports: readonly string[];
  /** What the client was last left to do, for an abandoned conversation. */
  readonly waiting_on: readonly string[];
  /** How the command's run of its seed ended, when it failed. */
  readonly command: string | null;
}

export interface ExploreReport {
  readonly object: 'emulator.explore_report';
  /** Every shape reached passed, some shape was reached, and no run of the command failed. */
  readonly passed: boolean;
  readonly shapes: readonly ShapeRow[];
  /** The command's runs (`ptc-emulator explore`); empty for a server's own report. */
  readonly runs: readonly ExploreRun[];
}

function view(conversation: ExploredConversation, failedRuns: ReadonlyMap<number, string>): ExploredConversationView {
  const outcome = outcomeOf(conversation);
  const command = failedRuns.get(conversation.seed) ?? null;
  return {
    program: conversation.program,
    seed: conversation.seed,
    started_at: conversation.startedAt,
    outcome: outcome === 'completed' && command !== null ? 'command_failed' : outcome,
    requests: conversation.requests,
    program_status: conversation.programStatus ?? null,
    program_error: conversation.programError ?? null,
    refused: conversation.refused ?? null,
    transports: [...conversation.transports].sort(),
    waiting_on: outcome === 'abandoned' ? conversation.waitingOn : [],
    command,
  };
}

export function exploreReport(conversations: readonly ExploredConversation[], runs: readonly ExploreRun[] = []): ExploreReport {
  const failedRuns = new Map(runs.filter((run) => run.failed).map((run) => [run.seed, run.ended]));
  const shapes = SHAPES.map((shape): ShapeRow => {
    const mine = conversations.filter((conversation) => conversation.shape === shape.name).map((conversation) => view(conversation, failedRuns));
    const refusals = new Map<string, { code: string; message: string; count: number }>();
    for (const conversation of mine) {
      if (conversation.outcome !== 'refused') continue;
      // One row per code, with the first message: a message names its own call ids.
      const { code, message } = conversation.refused!;
      const known = refusals.get(code);
      refusals.set(code, { code, message: known?.message ?? message, count: (known?.count ?? 0) + 1 });
    }
    const count = (outcome: ExploredConversationView['outcome']): number => mine.filter((conversation) => conversation.outcome === outcome).length;
    const completed = count('completed');
    return {
      shape: shape.name,
      description: shape.description,
      verdict: mine.length === 0 ? 'not reached' : completed === mine.length ? 'passed' : 'failed',
      reached: mine.length,
      completed,
      abandoned: count('abandoned'),
      command_failed: count('command_failed'),
      refused: [...refusals.values()],
      transports: [...new Set(mine.flatMap((conversation) => conversation.transports))].sort(),
      conversations: mine,
    };
  });
  const passed = shapes.some((row) => row.reached > 0) && shapes.every((row) => row.verdict !== 'failed') && failedRuns.size === 0;
  return { object: 'emulator.explore_report', passed, shapes, runs };
}

/** The report as a table for a terminal: a line per shape, then each refusal's message in full. */
export function reportTable(report: ExploreReport): string {
  const header = ['shape', 'verdict', 'reached', 'completed', 'refused (400)', 'abandoned', 'command failed', 'requests came'];
  const rows = report.shapes.map((row) => [
    row.shape,
    row.verdict,
    String(row.reached),
    String(row.completed),
    row.refused.length === 0 ? '–' : row.refused.map((refusal) => `${refusal.code} ×${refusal.count}`).join(', '),
    String(row.abandoned),
    String(row.command_failed),
    row.transports.join(', ') || '–',
  ]);
  const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd();
  const refusals = report.shapes.flatMap((row) => row.refused.map((refusal) => `  ${row.shape}: ${refusal.code}: ${refusal.message}`));
  const abandoned = report.shapes.flatMap((row) =>
    row.conversations
      .filter((conversation) => conversation.outcome === 'abandoned')
      .map((conversation) => `  ${row.shape} (seed ${conversation.seed}): left waiting on ${conversation.waiting_on.join(', ') || 'the program'}`),
  );
  const failedRuns = report.runs.filter((run) => run.failed).map((run) => `  seed ${run.seed}: the command ${run.ended}`);
  const reached = report.shapes.filter((row) => row.reached > 0).length;
  const failed = report.shapes.filter((row) => row.verdict === 'failed').length;
  const verdict = reached === 0 ? 'none reached' : failed === 0 ? 'every one reached passed' : `${failed} failed`;
  return [
    line(header),
    ...rows.map(line),
    '',
    `${reached} of ${report.shapes.length} shapes reached; ${verdict}${failedRuns.length > 0 ? `; ${failedRuns.length} run${failedRuns.length === 1 ? '' : 's'} of the command failed` : ''}.`,
    ...(refusals.length > 0 ? ['', 'Refusals:', ...refusals] : []),
    ...(abandoned.length > 0 ? ['', 'Abandoned:', ...abandoned] : []),
    ...(failedRuns.length > 0 ? ['', 'Failed runs:', ...failedRuns] : []),
    '',
  ].join('\n');
}
