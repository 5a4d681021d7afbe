import { escapeHtml } from '../../server/platform/html-escape.ts';
import { EVAL_MODES } from './run-task.ts';
import { ALL_TASKS, MEASURES, RATIO_LABEL, reportNotes, reportRows, type EvalReport } from './report.ts';

/**
 * The report as one self-contained HTML page: charts of tokens, turns and tool bytes per task
 * (inline SVG, no script), the table, and each run's answer. Task names and answers come from
 * files and models, so every text is escaped.
 */

const COLOURS = { direct: '#8a8f98', ptc: '#2563eb' } as const;

/** A horizontal bar chart: per task one bar per mode, scaled to the largest value. */
function barChart(report: EvalReport, key: 'totalTokens' | 'modelTurns' | 'contextBytes', title: string): string {
  const barHeight = 14;
  const labelWidth = 260;
  const plotWidth = 420;
  const groupHeight = EVAL_MODES.length * barHeight + 14;
  const height = report.tasks.length * groupHeight + 30;
  const largest = Math.max(1, ...report.tasks.flatMap(({ runs }) => EVAL_MODES.map((mode) => runs[mode][key])));
  const bars = report.tasks.flatMap(({ task, runs }, index) => {
    const top = 24 + index * groupHeight;
    return [
      `<text x="0" y="${top + barHeight}" class="label">${escapeHtml(task.length > 40 ? `${task.slice(0, 39)}…` : task)}</text>`,
      ...EVAL_MODES.map((mode, row) => {
        const value = runs[mode][key];
        const width = Math.max(1, (value / largest) * plotWidth);
        const y = top + row * barHeight;
        return `<rect x="${labelWidth}" y="${y}" width="${width.toFixed(1)}" height="${barHeight - 2}" fill="${COLOURS[mode]}"><title>${escapeHtml(`${task}, ${mode}: ${value}`)}</title></rect><text x="${(labelWidth + width + 4).toFixed(1)}" y="${y + barHeight - 4}" class="value">${value}</text>`;
      }),
    ];
  });
  return `<figure><svg role="img" aria-label="${escapeHtml(title)}" width="${labelWidth + plotWidth + 80}" height="${height}" xmlns="http://www.w3.org/2000/svg"><text x="0" y="14" class="title">${escapeHtml(title)}</text>${bars.join('')}</svg></figure>`;
}

function tableHtml(report: EvalReport): string {
  // The same cells as the terminal's table.
  const { header, rows } = reportRows(report);
  const cells = (row: readonly string[], tag: 'th' | 'td'): string =>
    row.map((cell, column) => `<${tag}${column >= 4 ? ' class="n"' : ''}>${escapeHtml(cell)}</${tag}>`).join('');
  const rowClass = (row: readonly string[]): string => (row[1] === RATIO_LABEL ? ' class="ratio"' : row[0] === ALL_TASKS ? ' class="total"' : '');
  return `<table><thead><tr>${cells(header, 'th')}</tr></thead><tbody>${rows.map((row) => `<tr${rowClass(row)}>${cells(row, 'td')}</tr>`).join('')}</tbody></table>`;
}

export function htmlReport(report: EvalReport, source: string): string {
  const notes = reportNotes(report);
  const answers = report.tasks
    .map(
      ({ task, runs }) =>
        `<h3>${escapeHtml(task)}</h3><dl>${EVAL_MODES.map((mode) => `<dt>${mode}${runs[mode].correct ? '' : ' (incorrect)'}</dt><dd><pre>${escapeHtml(runs[mode].answer || '(no answer)')}</pre></dd>`).join('')}</dl>`,
    )
    .join('');
  const measures = MEASURES.map((measure) => escapeHtml(measure.title)).join(', ');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ptc-emulator eval: direct calls versus PTC</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #1f2328; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #d0d7de; padding: 3px 8px; text-align: left; }
.n { text-align: right; }
tr.ratio td { color: #57606a; font-style: italic; }
tr.total td { font-weight: 600; }
svg .label, svg .value { font: 12px system-ui, sans-serif; fill: #1f2328; }
svg .title { font: 600 13px system-ui, sans-serif; }
.legend span { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px; vertical-align: middle; }
pre { white-space: pre-wrap; margin: 0; }
</style></head><body>
<h1>Direct tool calling versus programmatic tool calling</h1>
<p>Tasks from <code>${escapeHtml(source)}</code>, each run once per mode. Columns: ${measures}.</p>
<p class="legend"><span style="background:${COLOURS.direct}"></span>direct<span style="background:${COLOURS.ptc}"></span>ptc</p>
${barChart(report, 'totalTokens', 'Total tokens')}
${barChart(report, 'modelTurns', 'Model turns')}
${barChart(report, 'contextBytes', 'Tool output bytes in the model\u2019s context')}
${tableHtml(report)}
${notes.length === 0 ? '' : `<h2>Notes</h2><ul>${notes.map((note) => `<li>${escapeHtml(note)}</li>`).join('')}</ul>`}
<h2>Answers</h2>
${answers}
</body></html>
`;
}
