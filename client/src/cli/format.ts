/** Milliseconds as a short duration: `850ms`, `12.3s`, `4m05s`, `2h03m`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '-';
  if (ms < 1_000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)}s`;
  const s = Math.round(ms / 1_000);
  if (s < 3_600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3_600)}h${String(Math.floor((s % 3_600) / 60)).padStart(2, '0')}m`;
}

/** A ratio as a percentage with one decimal, or `-`. */
export function formatPercent(ratio: number | undefined): string {
  return ratio === undefined || !Number.isFinite(ratio) ? '-' : `${(ratio * 100).toFixed(1)}%`;
}

/** Dollars with four decimals. */
export function formatUsd(usd: number): string {
  return `$${usd.toFixed(4)}`;
}

/** A plain-text table: columns padded to their widest cell, two spaces apart. */
export function textTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** Lower-case status name without its prefix: `TASK_TIMED_OUT` → `timed out`. */
export function statusWord(status: string): string {
  return status
    .replace(/^TASK_/, '')
    .replace(/_/g, ' ')
    .toLowerCase();
}
