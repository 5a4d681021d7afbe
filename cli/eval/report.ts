import { EVAL_MODES, type EvalMode, type RunResult } from './run-task.ts';

/** The measured columns, in the table's order: what each is called and how it reads from a run. */
export const MEASURES = [
  { key: 'inputTokens', title: 'input tokens' },
  { key: 'outputTokens', title: 'output tokens' },
  { key: 'totalTokens', title: 'total tokens' },
  { key: 'modelTurns', title: 'model turns' },
  { key: 'requests', title: 'requests' },
  { key: 'toolCalls', title: 'tool calls' },
  { key: 'retries', title: 'retries' },
  { key: 'contextBytes', title: 'tool bytes in context' },
  { key: 'approvals', title: 'approvals' },
  { key: 'wallMs', title: 'wall ms' },
] as const satisfies readonly { key: keyof RunResult; title: string }[];
type Measure = (typeof MEASURES)[number]['key'];

/** The label of the rows that divide PTC's figures by direct calling's. */
export const RATIO_LABEL = 'ptc ÷ direct';
export const ALL_TASKS = 'all tasks';

export interface EvalReport {
  readonly tasks: readonly { readonly task: string; readonly runs: Readonly<Record<EvalMode, RunResult>> }[];
  readonly totals: Readonly<Record<EvalMode, Readonly<Record<Measure, number>> & { readonly correct: number; readonly runs: number }>>;
  readonly ratios: Readonly<Record<Measure, number | null>>;
}

/** Per task both runs, then the sums of every task per mode and PTC's ratio to direct calling. */
export function buildReport(results: readonly RunResult[]): EvalReport {
  const names = [...new Set(results.map((result) => result.task))];
  const tasks = names.map((task) => {
    const runs = Object.fromEntries(EVAL_MODES.map((mode) => [mode, results.find((result) => result.task === task && result.mode === mode)!])) as Record<
      EvalMode,
      RunResult
    >;
    return { task, runs };
  });
  const totals = Object.fromEntries(
    EVAL_MODES.map((mode) => {
      const runs = results.filter((result) => result.mode === mode);
      const sums = Object.fromEntries(MEASURES.map(({ key }) => [key, runs.reduce((sum, run) => sum + run[key], 0)]));
      return [mode, { ...sums, correct: runs.filter((run) => run.correct).length, runs: runs.length }];
    }),
  ) as EvalReport['totals'];
  return { tasks, totals, ratios: ratiosOf(totals.ptc, totals.direct) };
}

function ratiosOf(ptc: Readonly<Record<Measure, number>>, direct: Readonly<Record<Measure, number>>): Record<Measure, number | null> {
  return Object.fromEntries(MEASURES.map(({ key }) => [key, direct[key] === 0 ? null : ptc[key] / direct[key]])) as Record<Measure, number | null>;
}

function figure(key: Measure, value: number): string {
  return key === 'wallMs' ? value.toFixed(1) : String(value);
}

function ratio(value: number | null): string {
  return value === null ? '–' : `${value.toFixed(2)}×`;
}

/** The table's header and rows: two per task (direct, ptc) and their ratio, then the sums over all tasks and theirs. */
export function reportRows(report: EvalReport): { header: string[]; rows: string[][] } {
  const header = ['task', 'mode', 'correct', 'path', ...MEASURES.map((measure) => measure.title)];
  const rows: string[][] = [];
  const ratioRow = (ratios: Readonly<Record<Measure, number | null>>): string[] => ['', RATIO_LABEL, '', '', ...MEASURES.map(({ key }) => ratio(ratios[key]))];
  for (const { task, runs } of report.tasks) {
    for (const mode of EVAL_MODES) {
      const run = runs[mode];
      rows.push([
        mode === 'direct' ? task : '',
        mode,
        run.correct ? 'yes' : 'NO',
        run.pathAsIntended ? run.path : `${run.path} (!)`,
        ...MEASURES.map(({ key }) => figure(key, run[key])),
      ]);
    }
    rows.push(ratioRow(ratiosOf(runs.ptc, runs.direct)));
  }
  for (const mode of EVAL_MODES) {
    const total = report.totals[mode];
    rows.push([mode === 'direct' ? ALL_TASKS : '', mode, `${total.correct}/${total.runs}`, '', ...MEASURES.map(({ key }) => figure(key, total[key]))]);
  }
  rows.push(ratioRow(report.ratios));
  return { header, rows };
}

/** The report as a table that reads in a terminal and renders as Markdown. */
export function reportTable(report: EvalReport): string {
  const { header, rows } = reportRows(report);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  // Text columns to the left, figures to the right.
  const line = (cells: readonly string[]): string =>
    `| ${cells.map((cell, column) => (column < 4 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join(' | ')} |`;
  const rule = `| ${widths.map((width, column) => (column < 4 ? '-'.repeat(width) : `${'-'.repeat(width - 1)}:`)).join(' | ')} |`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

/** Every run that was wrong, or took another path than its mode's, with why. */
export function reportNotes(report: EvalReport): string[] {
  const notes: string[] = [];
  for (const { task, runs } of report.tasks) {
    for (const mode of EVAL_MODES) {
      const run = runs[mode];
      if (!run.correct) notes.push(`${task} (${mode}): incorrect: ${run.reason ?? 'no reason given'}`);
      if (!run.pathAsIntended && !run.failed)
        notes.push(`${task} (${mode}): the tools were reached by ${run.path}, not by ${mode === 'ptc' ? 'a program' : 'direct calls'} only`);
      if (run.toolErrors > 0) notes.push(`${task} (${mode}): ${run.toolErrors} tool call${run.toolErrors === 1 ? '' : 's'} failed`);
    }
  }
  return notes;
}
