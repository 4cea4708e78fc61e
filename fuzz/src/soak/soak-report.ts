import { chartTicks, escapeHtml } from '@troupe/benchmarks';
import { SERIES, type SeriesKey } from './process-sampler';
import { GROWTH_RULES, JUDGED_THROUGH, type SoakResult } from './soak-run';

const WIDTH = 560;
const HEIGHT = 240;
const MARGIN = { left: 56, right: 16, top: 14, bottom: 36 };

function fmt(v: number): string {
  return Math.abs(v) >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toPrecision(3);
}

/**
 * One series as an SVG line chart: the samples, the warm-up shaded, the least-squares line of
 * the judged window in red (growth) or green (ok).
 */
function chart(
  points: { t: number; v: number }[],
  warmupS: number,
  fit: { t0: number; v0: number; t1: number; v1: number } | undefined,
  growing: boolean,
  unit: string,
): string {
  if (points.length === 0) return '<p>no samples</p>';
  const vs = points.map((p) => p.v);
  if (fit) vs.push(fit.v0, fit.v1);
  let lo = Math.min(...vs);
  let hi = Math.max(...vs);
  if (hi - lo < 1e-9) {
    lo -= 1;
    hi += 1;
  }
  const pad = (hi - lo) * 0.08;
  lo = Math.max(0, lo - pad);
  hi += pad;
  const tMax = Math.max(1, ...points.map((p) => p.t));
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const sx = (t: number) => MARGIN.left + (t / tMax) * plotW;
  const sy = (v: number) => MARGIN.top + (1 - (v - lo) / (hi - lo)) * plotH;
  const parts: string[] = [
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="#fff" stroke="#ccc"/>`,
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${(Math.min(warmupS, tMax) / tMax) * plotW}" height="${plotH}" fill="#f3f3f3"><title>warm-up (not fitted)</title></rect>`,
  ];
  for (const v of chartTicks(lo, hi, 5)) {
    parts.push(
      `<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${sy(v)}" y2="${sy(v)}" stroke="#eee"/>`,
      `<text x="${MARGIN.left - 6}" y="${sy(v) + 4}" text-anchor="end" font-size="11">${fmt(v)}</text>`,
    );
  }
  const tScale = tMax > 5400 ? 3600 : tMax > 300 ? 60 : 1;
  const tUnit = tScale === 3600 ? 'h' : tScale === 60 ? 'min' : 's';
  for (const t of chartTicks(0, tMax / tScale, 8)) {
    parts.push(
      `<text x="${sx(t * tScale)}" y="${MARGIN.top + plotH + 16}" text-anchor="middle" font-size="11">${fmt(t)}</text>`,
    );
  }
  parts.push(
    `<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 4}" text-anchor="middle" font-size="12">time since start (${tUnit})${unit ? `; ${escapeHtml(unit)}` : ''}</text>`,
    `<polyline points="${points.map((p) => `${sx(p.t).toFixed(1)},${sy(p.v).toFixed(1)}`).join(' ')}" fill="none" stroke="#1f77b4" stroke-width="1.3"/>`,
  );
  if (fit) {
    parts.push(
      `<line x1="${sx(fit.t0)}" y1="${sy(fit.v0)}" x2="${sx(fit.t1)}" y2="${sy(fit.v1)}" stroke="${growing ? '#d62728' : '#2ca02c'}" stroke-width="2" stroke-dasharray="6,3"><title>least-squares fit after the warm-up</title></line>`,
    );
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img">${parts.join('')}</svg>`;
}

/**
 * A self-contained HTML page (inline SVG and CSS, nothing fetched) of a soak: the verdict and
 * the run's facts, then per process a chart of each series (RSS, heap after GC, file
 * descriptors, active handles; nats-server's stored bytes, block cache, heap and RSS outside it) with
 * the warm-up shaded and the fitted line, its slope per hour, the rule it was judged by and the
 * verdict (or the series it is judged through); the last sample's handles by kind.
 */
export function renderSoakReport(result: SoakResult, metrics: Record<string, unknown>): string {
  const sections = result.processes.map((s) => {
    const charts = SERIES.filter(
      (def) => s.verdicts[def.key] !== undefined || s.shown?.[def.key] !== undefined,
    ).map((def) => {
      const key: SeriesKey = def.key;
      const points = s.samples
        .filter((x) => x[key] !== undefined)
        .map((x) => ({ t: x.t, v: x[key] as number }));
      const perH = def.unit ? `${def.unit}/h` : '/h';
      const v = s.verdicts[key];
      if (!v) {
        // Fitted, not judged: the series it is judged through follow.
        const shown = s.shown![key]!;
        const through = (JUDGED_THROUGH[key] ?? [])
          .map((k) => SERIES.find((d) => d.key === k)?.label ?? k)
          .join(' and ');
        return `<div class="chart"><h3>${escapeHtml(def.label)} <span class="shown">judged through ${escapeHtml(through)}</span></h3>
${chart(points, result.warmupS, shown.fit, false, def.unit)}
<p>slope ${shown.slopePerH.toFixed(2)} ${perH} over ${shown.points} samples, not judged itself.</p></div>`;
      }
      const rule = GROWTH_RULES[key];
      return `<div class="chart"><h3>${escapeHtml(def.label)} <span class="${v.verdict}">${v.verdict}</span></h3>
${chart(points, result.warmupS, v.fit, v.verdict === 'growth', def.unit)}
<p>slope ${v.slopePerH.toFixed(2)} ${perH} over ${v.points} samples (limit ${rule.maxSlopePerH} ${perH} with a rise over ${rule.minRise}${def.unit ? ` ${def.unit}` : ''}): ${escapeHtml(v.reason)}</p></div>`;
    });
    const last = s.samples.at(-1);
    const kinds = last?.resources
      ? `<p class="kinds">handles at the end: ${Object.entries(last.resources)
          .sort((a, b) => b[1] - a[1])
          .map(([k, n]) => `${escapeHtml(k)} ${n}`)
          .join(', ')}</p>`
      : '';
    const lost = s.lost ? `<p class="growth">${escapeHtml(s.lost)}</p>` : '';
    return `<section><h2>${escapeHtml(s.process.name)} <small>pid ${s.process.pid}, ${s.samples.length} samples</small></h2>${lost}${kinds}<div class="charts">${charts.join('\n')}</div></section>`;
  });
  const facts = Object.entries(metrics)
    .map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(String(v))}</td></tr>`)
    .join('');
  const problems =
    result.problems.length > 0
      ? `<ul>${result.problems.map((p) => `<li>${escapeHtml(p)}</li>`).join('')}</ul>`
      : '<p>No growth trend, every job passed.</p>';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Troupe soak: ${result.verdict}</title>
<style>
body{font-family:system-ui,sans-serif;margin:24px;color:#222}
h1 .pass,h3 .ok{color:#2ca02c} h3 .shown{color:#666;font-weight:normal;font-size:12px} h1 .fail,h3 .growth,.growth{color:#d62728} h3 .too-short{color:#b8860b}
.charts{display:flex;flex-wrap:wrap;gap:16px}.chart{width:${WIDTH}px}.chart p{font-size:12px;margin:2px 0 0}
table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ddd;padding:2px 8px;text-align:left}
small,.kinds{color:#666;font-size:12px}
</style></head><body>
<h1>Troupe soak: <span class="${result.verdict}">${result.verdict}</span></h1>
${problems}
<p>${result.tally.tasks} tasks in ${result.tally.jobs} jobs over ${Math.round(result.wallS)} s; the first ${Math.round(result.warmupS)} s (shaded) are warm-up and are not fitted. Heap is measured after a full collection.</p>
${sections.join('\n')}
<h2>Figures</h2><table>${facts}</table>
</body></html>
`;
}
