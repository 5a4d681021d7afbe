import { escapeHtml } from '../../platform/html-escape.ts';
import type { ExploreReport, ShapeRow } from '../../engine/explore/explore-report.ts';

/**
 * The report as one HTML page with no script: the table of shapes, then each conversation that
 * reached a shape, with its refusal in full. Served by a running emulator
 * (`GET /v1/emulator/explore?format=html`), each conversation links to the inspector's view of it;
 * written to a file by `ptc-emulator explore --html`, where no server is left to link to, it
 * stands alone.
 */

const VERDICT_COLOURS = { passed: '#1a7f37', failed: '#cf222e', 'not reached': '#8a8f98' } as const;

function conversationsHtml(row: ShapeRow, inspector: boolean): string {
  if (row.conversations.length === 0) return '';
  const items = row.conversations.map((conversation) => {
    const program = inspector
      ? `<a href="/inspector#program=${encodeURIComponent(conversation.program)}">${escapeHtml(conversation.program)}</a>`
      : `<code>${escapeHtml(conversation.program)}</code>`;
    const ended =
      conversation.program_status === null
        ? 'the program did not end'
        : `program ${conversation.program_status}${conversation.program_error ? ` (${escapeHtml(conversation.program_error)})` : ''}`;
    const refused = conversation.refused
      ? `<br><strong>${conversation.refused.status} ${escapeHtml(conversation.refused.code)}</strong>: ${escapeHtml(conversation.refused.message)}`
      : '';
    const waiting = conversation.waiting_on.length > 0 ? `<br>left waiting on ${escapeHtml(conversation.waiting_on.join(', '))}` : '';
    const command = conversation.command === null ? '' : `<br>the command ${escapeHtml(conversation.command)}`;
    return `<li>${program}, seed ${conversation.seed}: <strong>${conversation.outcome.replace('_', ' ')}</strong> after ${conversation.requests} request${conversation.requests === 1 ? '' : 's'} (${escapeHtml(conversation.transports.join(', '))}); ${ended}${refused}${waiting}${command}</li>`;
  });
  return `<h3 id="${escapeHtml(row.shape)}">${escapeHtml(row.shape)}</h3><p>${escapeHtml(row.description)}.</p><ul>${items.join('')}</ul>`;
}

export function exploreHtml(report: ExploreReport, options: { readonly inspectorLinks: boolean; readonly title?: string }): string {
  const rows = report.shapes.map((row) => {
    const refused = row.refused.map((refusal) => `${escapeHtml(refusal.code)} ×${refusal.count}`).join(', ') || '–';
    const name = row.reached > 0 ? `<a href="#${escapeHtml(row.shape)}">${escapeHtml(row.shape)}</a>` : escapeHtml(row.shape);
    return `<tr><td>${name}</td><td style="color:${VERDICT_COLOURS[row.verdict]}">${row.verdict}</td><td class="n">${row.reached}</td><td class="n">${row.completed}</td><td>${refused}</td><td class="n">${row.abandoned}</td><td class="n">${row.command_failed}</td><td>${escapeHtml(row.transports.join(', ') || '–')}</td></tr>`;
  });
  const reached = report.shapes.filter((row) => row.reached > 0).length;
  const failedRuns = report.runs.filter((run) => run.failed);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(options.title ?? 'ptc-emulator explore: client-loop report')}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #1f2328; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
.n { text-align: right; }
li { margin: 0.3em 0; }
</style></head><body>
<h1>Client-loop report</h1>
<p>${report.passed ? 'Every shape reached passed' : reached === 0 ? 'No shape was reached' : 'Some shapes failed'}: ${reached} of ${report.shapes.length} shapes reached${failedRuns.length > 0 ? `; ${failedRuns.length} run${failedRuns.length === 1 ? '' : 's'} of the command failed (${failedRuns.map((run) => `seed ${run.seed}: ${escapeHtml(run.ended)}`).join('; ')})` : ''}. A shape passes when every conversation that drew it got its final message; a refused one got a client-loop 400, an abandoned one was left before its program and message were done, and a command failed one completed in a run whose command then failed.</p>
<table><thead><tr><th>shape</th><th>verdict</th><th>reached</th><th>completed</th><th>refused (400)</th><th>abandoned</th><th>command failed</th><th>requests came</th></tr></thead>
<tbody>${rows.join('')}</tbody></table>
<h2>Conversations</h2>
${report.shapes.map((row) => conversationsHtml(row, options.inspectorLinks)).join('\n')}
</body></html>
`;
}
