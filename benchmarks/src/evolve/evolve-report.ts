import { type FitnessSeries } from './fitness-series';
import { chartTicks } from '../chart-ticks';
import { escapeHtml } from '../html-escape';

/** What {@link renderEvolveReport} shows. */
export interface EvolveReportInput {
  /** Page title, e.g. `binpacking-or3 (job j-…, task or3)`. */
  title: string;
  /** The search's progress (from its journal). */
  series: FitnessSeries;
  /** Reference scores by name (the suite's `reference:`), drawn as horizontal lines. */
  reference: Record<string, number>;
  /** Facts shown in a table (validation and test score, evaluations, stop reason, …). */
  summary: Record<string, unknown>;
}

const WIDTH = 760;
const HEIGHT = 340;
const MARGIN = { left: 64, right: 150, top: 16, bottom: 40 };
const PALETTE = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#9467bd',
  '#ff7f0e',
  '#8c564b',
  '#e377c2',
  '#17becf',
];
const REFERENCE_COLOURS = ['#555', '#b8860b', '#008080', '#800080'];

function fmt(v: number): string {
  return Math.abs(v) >= 1000 || Number.isInteger(v)
    ? String(Math.round(v * 100) / 100)
    : v.toPrecision(5);
}

/** One chart: per island best (solid) and mean (dashed) over `x`, dots for every evaluation. */
function chart(input: EvolveReportInput, axis: 'evaluations' | 'time'): string {
  const { series } = input;
  const xOf = (p: { evaluations?: number; evaluation?: number; elapsedMs: number }): number =>
    axis === 'time' ? p.elapsedMs / 1000 : (p.evaluations ?? p.evaluation ?? 0);
  const ys: number[] = series.evaluations.map((e) => e.score);
  for (const g of series.generations) {
    for (const i of g.islands) {
      if (i.best !== null) ys.push(i.best);
      if (i.mean !== null) ys.push(i.mean);
    }
  }
  const refs = Object.entries(input.reference);
  for (const [, v] of refs) ys.push(v);
  if (ys.length === 0) return '<p>No scored evaluation yet.</p>';
  let lo = Math.min(...ys);
  let hi = Math.max(...ys);
  if (hi - lo < 1e-9) {
    lo -= 1;
    hi += 1;
  }
  const pad = (hi - lo) * 0.05;
  lo -= pad;
  hi += pad;
  const xs = [...series.evaluations.map(xOf), ...series.generations.map(xOf)];
  const xMax = Math.max(1, ...xs);
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const sx = (x: number): number => MARGIN.left + (x / xMax) * plotW;
  const sy = (y: number): number => MARGIN.top + (1 - (y - lo) / (hi - lo)) * plotH;
  const parts: string[] = [];
  parts.push(
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="#fff" stroke="#ccc"/>`,
  );
  for (const t of chartTicks(lo, hi, 6)) {
    parts.push(
      `<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${sy(t)}" y2="${sy(t)}" stroke="#eee"/>`,
      `<text x="${MARGIN.left - 6}" y="${sy(t) + 4}" text-anchor="end" font-size="11">${fmt(t)}</text>`,
    );
  }
  for (const t of chartTicks(0, xMax, 8)) {
    parts.push(
      `<text x="${sx(t)}" y="${MARGIN.top + plotH + 16}" text-anchor="middle" font-size="11">${fmt(t)}</text>`,
    );
  }
  parts.push(
    `<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 6}" text-anchor="middle" font-size="12">${
      axis === 'time' ? 'time since start (s)' : 'evaluations'
    }</text>`,
  );
  for (const e of series.evaluations) {
    const colour = PALETTE[e.island % PALETTE.length] as string;
    parts.push(
      `<circle cx="${sx(xOf(e))}" cy="${sy(e.score)}" r="2" fill="${colour}" fill-opacity="0.3"><title>island ${e.island}: ${fmt(e.score)}</title></circle>`,
    );
  }
  const islands = Math.max(0, ...series.generations.map((g) => g.islands.length));
  const legend: string[] = [];
  for (let k = 0; k < islands; k++) {
    const colour = PALETTE[k % PALETTE.length] as string;
    for (const kind of ['best', 'mean'] as const) {
      const pts = series.generations
        .map((g) => ({ x: xOf(g), y: g.islands[k]?.[kind] ?? null }))
        .filter((p): p is { x: number; y: number } => p.y !== null)
        .map((p) => `${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`);
      if (pts.length === 0) continue;
      parts.push(
        `<polyline points="${pts.join(' ')}" fill="none" stroke="${colour}" stroke-width="${kind === 'best' ? 2 : 1.2}"${
          kind === 'mean' ? ' stroke-dasharray="5,3"' : ''
        }/>`,
      );
    }
    legend.push(`<tspan fill="${colour}">island ${k}</tspan>`);
  }
  refs.forEach(([name, value], i) => {
    const colour = REFERENCE_COLOURS[i % REFERENCE_COLOURS.length] as string;
    parts.push(
      `<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${sy(value)}" y2="${sy(value)}" stroke="${colour}" stroke-dasharray="2,4" stroke-width="1.5"/>`,
      `<text x="${MARGIN.left + plotW + 6}" y="${sy(value) + 4}" font-size="11" fill="${colour}">${escapeHtml(name)} ${fmt(value)}</text>`,
    );
  });
  const legendText = legend
    .map(
      (l, i) =>
        `<text x="${MARGIN.left + 8 + i * 80}" y="${MARGIN.top + 14}" font-size="11">${l}</text>`,
    )
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img">${parts.join('')}${legendText}</svg>`;
}

/**
 * A self-contained HTML page (inline SVG and CSS, nothing fetched) with the search's validation
 * scores per island — best (solid) and mean (dashed) of each island's members after every
 * generation, a dot per scored evaluation — over evaluations and over time, the reference scores
 * as dotted lines, and a summary table.
 */
export function renderEvolveReport(input: EvolveReportInput): string {
  const rows = Object.entries(input.summary)
    .map(
      ([k, v]) =>
        `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(
          typeof v === 'number' ? fmt(v) : typeof v === 'string' ? v : JSON.stringify(v),
        )}</td></tr>`,
    )
    .join('');
  const gens = input.series.generations
    .map(
      (g) =>
        `<tr><td>${g.generation}</td><td>${g.evaluations}</td><td>${(g.elapsedMs / 1000).toFixed(1)}</td><td>${g.islands
          .map((i) =>
            i.best === null ? '—' : `${fmt(i.best)} / ${fmt(i.mean as number)} (${i.size})`,
          )
          .join('</td><td>')}</td></tr>`,
    )
    .join('');
  const islandHeads = Array.from(
    { length: Math.max(0, ...input.series.generations.map((g) => g.islands.length)) },
    (_, k) => `<th>island ${k} best / mean (size)</th>`,
  ).join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(input.title)}</title>
<style>body{font-family:system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:12px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;font-size:13px}th{background:#f6f6f6}
.note{color:#666;font-size:13px}</style></head><body>
<h1>${escapeHtml(input.title)}</h1>
<table>${rows}</table>
<h2>Validation score by evaluations</h2>
<p class="note">Solid: best member of each island after each generation; dashed: island mean; dots: every scored evaluation (${
    input.series.direction === 'minimise' ? 'lower' : 'higher'
  } is better). Dotted lines: the suite's reference scores (published numbers are usually on the test set).</p>
${chart(input, 'evaluations')}
<h2>Validation score over time</h2>
${chart(input, 'time')}
<h2>Generations</h2>
<table><tr><th>generation</th><th>evaluations</th><th>time (s)</th>${islandHeads}</tr>${gens}</table>
</body></html>
`;
}
