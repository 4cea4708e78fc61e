import { type Job__Output, type JobResults__Output, type TaskResult__Output } from '@troupe/proto';
import { formatDuration, formatPercent, formatUsd, statusWord } from './format';

const COLORS: Record<string, string> = {
  TASK_PASSED: '#2e7d32',
  TASK_FAILED: '#c62828',
  TASK_TIMED_OUT: '#ef6c00',
  TASK_ERRORED: '#6a1b9a',
  TASK_CANCELLED: '#757575',
  TASK_RUNNING: '#1565c0',
  TASK_PENDING: '#9e9e9e',
};

function esc(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** A small chart for one task: its duration against the slowest task, and its score. */
function taskChart(t: TaskResult__Output, maxMs: number): string {
  const w = 220;
  const durW = maxMs > 0 ? Math.max(1, Math.round((t.durationMs / maxMs) * (w - 10))) : 1;
  const score = t.score === undefined ? undefined : Math.min(1, Math.max(0, t.score));
  const color = COLORS[t.status] ?? '#9e9e9e';
  const scoreBar =
    score === undefined
      ? `<text x="0" y="31" font-size="9" fill="#777">no score</text>`
      : `<rect x="0" y="22" width="${Math.round(score * (w - 10))}" height="10" fill="#455a64"/>` +
        `<rect x="0" y="22" width="${w - 10}" height="10" fill="none" stroke="#b0bec5"/>`;
  return (
    `<svg width="${w}" height="36" role="img" ` +
    `aria-label="duration ${esc(formatDuration(t.durationMs))}, score ${score ?? 'none'}">` +
    `<rect x="0" y="4" width="${durW}" height="12" fill="${color}"/>` +
    `<text x="${Math.min(durW + 4, w - 60)}" y="14" font-size="9" fill="#333">${esc(formatDuration(t.durationMs))}</text>` +
    scoreBar +
    `</svg>`
  );
}

/** The share of each status as one stacked bar. */
function statusChart(tasks: readonly TaskResult__Output[]): string {
  const w = 600;
  const counts = new Map<string, number>();
  for (const t of tasks) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
  let x = 0;
  const parts: string[] = [];
  const legend: string[] = [];
  let lx = 0;
  for (const [status, n] of [...counts.entries()].sort()) {
    const width = tasks.length > 0 ? (n / tasks.length) * w : 0;
    parts.push(
      `<rect x="${x.toFixed(1)}" y="0" width="${width.toFixed(1)}" height="24" fill="${COLORS[status] ?? '#999'}"><title>${esc(statusWord(status))}: ${n}</title></rect>`,
    );
    legend.push(
      `<rect x="${lx}" y="32" width="10" height="10" fill="${COLORS[status] ?? '#999'}"/>` +
        `<text x="${lx + 14}" y="41" font-size="11">${esc(statusWord(status))} ${n}</text>`,
    );
    x += width;
    lx += 110;
  }
  return `<svg width="${w}" height="48" role="img" aria-label="task statuses">${parts.join('')}${legend.join('')}</svg>`;
}

/** Options of {@link renderHtmlReport}. */
export interface HtmlReportOptions {
  /**
   * The link of an artifact (a path relative to the report, when it was downloaded next to it),
   * or `undefined` to show its path only. @default paths only, no links
   */
  artifactHref?: (artifactPath: string) => string | undefined;
}

/** A task's artifacts worth a link: named ones from `details.links`, then the listed ones. */
export function taskArtifactLinks(t: TaskResult__Output): { name: string; path: string }[] {
  const out: { name: string; path: string }[] = [];
  const seen = new Set<string>();
  let details: unknown;
  try {
    details = t.detailsJson ? JSON.parse(t.detailsJson) : undefined;
  } catch {
    details = undefined;
  }
  const links = (details as { links?: unknown } | undefined)?.links;
  if (links && typeof links === 'object') {
    for (const [name, p] of Object.entries(links as Record<string, unknown>)) {
      if (typeof p === 'string' && !seen.has(p)) {
        seen.add(p);
        out.push({ name, path: p });
      }
    }
  }
  for (const p of t.artifacts) {
    if (!seen.has(p)) {
      seen.add(p);
      out.push({ name: p.slice(p.lastIndexOf('/') + 1), path: p });
    }
  }
  return out;
}

function linksCell(t: TaskResult__Output, options: HtmlReportOptions): string {
  return taskArtifactLinks(t)
    .map(({ name, path }) => {
      const href = options.artifactHref?.(path);
      if (href && path.endsWith('.png')) {
        // Screenshots (desktop tasks) show as thumbnails linking to the full image.
        return `<a href="${esc(href)}" title="${esc(name)}"><img src="${esc(href)}" alt="${esc(name)}" width="96" loading="lazy"></a>`;
      }
      return href
        ? `<a href="${esc(href)}">${esc(name)}</a>`
        : `<span title="${esc(path)}">${esc(name)}</span>`;
    })
    .join(' · ');
}

/**
 * A self-contained HTML report of a job's results (no scripts, no external resources): summary,
 * a status chart, and per task a row with an inline SVG chart of its duration and score, its
 * tokens and stop reason, and its artifacts (trajectory, grader logs, workspace) — links when
 * `options.artifactHref` resolves them.
 */
export function renderHtmlReport(
  job: Job__Output,
  r: JobResults__Output,
  options: HtmlReportOptions = {},
): string {
  const agg = r.aggregate;
  const maxMs = Math.max(0, ...r.tasks.map((t) => t.durationMs));
  const rows = r.tasks
    .map(
      (t) => `<tr>
  <td>${esc(t.taskId)}</td>
  <td><span class="st" style="background:${COLORS[t.status] ?? '#999'}">${esc(statusWord(t.status))}</span></td>
  <td>${t.score === undefined ? '-' : esc(String(Math.round(t.score * 1000) / 1000))}</td>
  <td>${t.attempts}</td>
  <td>${esc(formatUsd(t.costUsd))}</td>
  <td>${t.tokens}</td>
  <td>${esc(t.stopReason || '-')}</td>
  <td>${taskChart(t, maxMs)}</td>
  <td class="links">${linksCell(t, options)}</td>
  <td class="err">${esc(t.error)}</td>
</tr>`,
    )
    .join('\n');
  const summary = agg
    ? `<table class="sum">
<tr><th>state</th><td>${esc(r.state)}${job.reason ? ` — ${esc(job.reason)}` : ''}</td></tr>
<tr><th>tasks</th><td>${agg.total} (passed ${agg.passed}, failed ${agg.failed}, errored ${agg.errored}, timed out ${agg.timedOut}, cancelled ${agg.cancelled}, pending ${agg.pending})</td></tr>
<tr><th>pass rate</th><td>${esc(formatPercent(agg.passRate))}</td></tr>
<tr><th>cost</th><td>${esc(formatUsd(agg.costUsd))} (${agg.promptTokens + agg.completionTokens} tokens)</td></tr>
<tr><th>wall time</th><td>${esc(formatDuration(agg.wallMs))}</td></tr>
${agg.extraJson ? `<tr><th>metrics</th><td><code>${esc(agg.extraJson)}</code></td></tr>` : ''}
</table>`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Troupe job ${esc(r.jobId)} — ${esc(job.name)}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } table { border-collapse: collapse; }
.sum th { text-align: left; padding-right: 1em; color: #555; font-weight: normal; }
.tasks th, .tasks td { border-bottom: 1px solid #eee; padding: 4px 8px; text-align: left; vertical-align: middle; }
.st { color: #fff; padding: 1px 6px; border-radius: 3px; font-size: 12px; }
.err { color: #8e2424; font-size: 12px; max-width: 30em; }
.links { font-size: 12px; max-width: 22em; }
code { font-size: 12px; }
</style>
</head>
<body>
<h1>${esc(job.name)} <small>(${esc(job.kind)}) — job ${esc(r.jobId)}</small></h1>
${summary}
<h2>Task statuses</h2>
${statusChart(r.tasks)}
<h2>Tasks</h2>
<p>Bar: the task's duration against the slowest (${esc(formatDuration(maxMs))}); grey bar: its score (0 to 1).</p>
<table class="tasks">
<tr><th>task</th><th>status</th><th>score</th><th>attempts</th><th>cost</th><th>tokens</th><th>stop</th><th>duration and score</th><th>artifacts</th><th>error</th></tr>
${rows}
</table>
</body>
</html>
`;
}
