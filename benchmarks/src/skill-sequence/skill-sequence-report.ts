import { escapeHtml } from '../html-escape';
import type { SequenceArmRun, SequenceTaskRun } from './sequence-task-run';

/** What {@link renderSkillSequenceReport} shows: one scenario's runs. */
export interface SkillSequenceReportInput {
  jobId: string;
  scenario: string;
  description: string;
  /** One run (library or baseline) or both (ablation). */
  arms: readonly SequenceArmRun[];
}

const COLOURS: Record<SequenceArmRun['arm'], string> = { library: '#1565c0', baseline: '#9e9e9e' };

/** Grouped bars: one group per task, one bar per arm, for a metric. */
function barChart(
  title: string,
  arms: readonly SequenceArmRun[],
  metric: (t: SequenceTaskRun) => number,
): string {
  const tasks = arms[0]?.tasks.map((t) => t.taskId) ?? [];
  const W = 560;
  const H = 180;
  const left = 40;
  const bottom = 30;
  const max = Math.max(1, ...arms.flatMap((a) => a.tasks.map(metric)));
  const groupW = (W - left) / Math.max(1, tasks.length);
  const barW = Math.max(4, (groupW - 12) / Math.max(1, arms.length));
  const parts: string[] = [
    `<line x1="${left}" y1="${H - bottom}" x2="${W}" y2="${H - bottom}" stroke="#777"/>`,
    `<text x="4" y="14" font-size="11">${escapeHtml(String(max))}</text>`,
    `<text x="4" y="${H - bottom}" font-size="11">0</text>`,
  ];
  tasks.forEach((id, i) => {
    const x0 = left + i * groupW + 6;
    arms.forEach((a, j) => {
      const t = a.tasks.find((r) => r.taskId === id);
      const v = t ? metric(t) : 0;
      const h = ((H - bottom - 10) * v) / max;
      parts.push(
        `<rect x="${(x0 + j * barW).toFixed(1)}" y="${(H - bottom - h).toFixed(1)}" width="${(barW - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${COLOURS[a.arm]}"><title>${escapeHtml(`${id} ${a.arm}: ${v}`)}</title></rect>`,
      );
    });
    parts.push(
      `<text x="${(x0 + 2).toFixed(1)}" y="${H - bottom + 14}" font-size="10">${escapeHtml(id)}</text>`,
    );
  });
  const legend = arms
    .map(
      (a, j) =>
        `<rect x="${left + j * 110}" y="${H - 10}" width="10" height="10" fill="${COLOURS[a.arm]}"/>` +
        `<text x="${left + j * 110 + 14}" y="${H - 1}" font-size="11">${escapeHtml(a.arm === 'library' ? 'with library' : 'without library')}</text>`,
    )
    .join('');
  return `<figure><figcaption>${escapeHtml(title)}</figcaption><svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" role="img">${parts.join('')}${legend}</svg></figure>`;
}

function row(cells: (string | number)[]): string {
  return `<tr>${cells.map((c) => `<td>${escapeHtml(String(c))}</td>`).join('')}</tr>`;
}

/**
 * The HTML report of one scenario: per task, with and without the library side by side (passed,
 * steps, tokens, cost), bar charts of steps and tokens per task, and what the library did
 * (retrieved, checked, dropped with reasons, used, admitted).
 */
export function renderSkillSequenceReport(input: SkillSequenceReportInput): string {
  const { arms } = input;
  const head = [
    'task',
    ...arms.flatMap((a) => [
      `passed (${a.arm})`,
      `steps (${a.arm})`,
      `tokens (${a.arm})`,
      `cost $ (${a.arm})`,
    ]),
  ];
  const tasks = arms[0]?.tasks.map((t) => t.taskId) ?? [];
  const tokens = (t: SequenceTaskRun): number => t.promptTokens + t.completionTokens;
  const rows = tasks.map((id) =>
    row([
      id,
      ...arms.flatMap((a) => {
        const t = a.tasks.find((r) => r.taskId === id);
        return t
          ? [t.passed ? 'yes' : 'no', t.steps, tokens(t), t.costUsd.toFixed(4)]
          : ['—', '—', '—', '—'];
      }),
    ]),
  );
  const totals = row([
    'scenario',
    ...arms.flatMap((a) => [
      `${a.passed}/${a.tasks.length}${a.goalCompleted ? ' (goal completed)' : ''}`,
      a.steps,
      a.promptTokens + a.completionTokens,
      a.costUsd.toFixed(4),
    ]),
  ]);
  const library = arms.find((a) => a.arm === 'library');
  const skillRows = (library?.tasks ?? []).map((t) =>
    row([
      t.taskId,
      t.skills.retrieved.map((s) => `${s.name}@v${s.version}`).join(', ') || '—',
      t.skills.checked.map((s) => `${s.name}@v${s.version}`).join(', ') || '—',
      t.skills.dropped.map((s) => `${s.name}@v${s.version}: ${s.reason}`).join('; ') || '—',
      t.skills.used.join(', ') || '—',
      t.skills.admitted.map((s) => `${s.name}@v${s.version}`).join(', ') || '—',
      t.skills.skipped.map((s) => `${s.name}: ${s.reason}`).join('; ') || '—',
    ]),
  );
  const th = (h: string[]): string =>
    `<tr>${h.map((x) => `<th>${escapeHtml(x)}</th>`).join('')}</tr>`;
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(`skill-sequence ${input.scenario} — ${input.jobId}`)}</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px;text-align:left}figure{display:inline-block;margin:1em}</style>
</head><body>
<h1>${escapeHtml(input.scenario)}</h1>
<p>${escapeHtml(input.description)}</p>
<p>job ${escapeHtml(input.jobId)}</p>
<h2>Tasks${arms.length > 1 ? ': with and without the library' : ''}</h2>
<table><thead>${th(head)}</thead><tbody>
${rows.join('\n')}
${totals}
</tbody></table>
${barChart('steps per task', arms, (t) => t.steps)}
${barChart('tokens per task', arms, tokens)}
${
  library
    ? `<h2>Skill library</h2><table><thead>${th(['task', 'retrieved', 'checked', 'dropped', 'used', 'admitted', 'not admitted'])}</thead><tbody>\n${skillRows.join('\n')}\n</tbody></table>`
    : ''
}
</body></html>
`;
}
