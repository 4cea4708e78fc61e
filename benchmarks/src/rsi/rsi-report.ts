import type { Phase1Result, Phase2Result, Phase3Result } from '@troupe/rsi';
import { escapeHtml } from '../html-escape';

/** What {@link renderRsiReport} shows. */
export interface RsiReportInput {
  jobId: string;
  bankId: string;
  phase1: Phase1Result;
  phase2: Phase2Result;
  phase3: Phase3Result;
}

const short = (hash: string): string => hash.slice(0, 12);

function table(head: string[], rows: (string | number)[][]): string {
  const th = head.map((h) => `<th>${escapeHtml(h)}</th>`).join('');
  const body = rows
    .map((r) => `<tr>${r.map((c) => `<td>${escapeHtml(String(c))}</td>`).join('')}</tr>`)
    .join('\n');
  return `<table><thead><tr>${th}</tr></thead><tbody>\n${body}\n</tbody></table>`;
}

/** A bar per held-out task (green: 1, red: 0, grey: unscored) as inline SVG. */
function scoreBars(phase3: Phase3Result): string {
  const w = 28;
  const bars = phase3.tasks
    .map((t, i) => {
      const colour = t.status !== 'scored' ? '#bbb' : t.score >= 1 ? '#2e7d32' : '#c62828';
      const h = t.status === 'scored' ? Math.max(4, t.score * 80) : 80;
      return `<rect x="${i * w + 4}" y="${90 - h}" width="${w - 8}" height="${h}" fill="${colour}"><title>${escapeHtml(t.taskId)}</title></rect>`;
    })
    .join('');
  return `<svg width="${Math.max(120, phase3.tasks.length * w + 8)}" height="96" role="img" aria-label="held-out scores">${bars}</svg>`;
}

/**
 * The study's HTML report: the bank's lineage (seed, each development task's input and output
 * bank, the frozen bank), each development target's status, verdict, attempts and projects, and
 * each held-out task's score, with a bar chart of the scores.
 */
export function renderRsiReport(input: RsiReportInput): string {
  const { phase1, phase2, phase3 } = input;
  const title = `RSIAgent study ${input.jobId}`;
  const dev = table(
    ['#', 'task', 'status', 'verdict', 'attempts', 'projects', 'bank in', 'bank out'],
    phase2.tasks.map((t) => [
      t.position,
      t.taskId,
      t.status,
      t.verdict,
      t.attempts,
      t.projects,
      `v${t.bankIn.version} ${short(t.bankIn.treeHash)}`,
      `v${t.bankOut.version} ${short(t.bankOut.treeHash)}`,
    ]),
  );
  const held = table(
    ['task', 'status', 'score', 'detail'],
    phase3.tasks.map((t) => [
      t.taskId,
      t.status,
      t.status === 'scored' ? t.score : '—',
      t.status === 'scored' ? (t.detail ?? '') : t.reason,
    ]),
  );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:12px 0}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;font-size:14px}th{background:#f4f4f4}
code{font-size:13px}</style></head><body>
<h1>${escapeHtml(title)}</h1>
<p>Bank <code>${escapeHtml(input.bankId)}</code>: seed <code>v${phase1.output.version} ${escapeHtml(short(phase1.output.treeHash))}</code>
(Phase 1 ${escapeHtml(phase1.ended)}), frozen <code>v${phase2.frozen.version} ${escapeHtml(short(phase2.frozen.treeHash))}</code>.</p>
<h2>Phase 2: development tasks</h2>
${dev}
<h2>Phase 3: held-out tasks — mean score ${phase3.meanScore.toFixed(3)} (${phase3.scored} scored, ${phase3.unscored} unscored)</h2>
${scoreBars(phase3)}
${held}
</body></html>
`;
}
