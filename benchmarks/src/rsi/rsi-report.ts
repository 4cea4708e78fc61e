import type {
  BankVersion,
  Phase1Result,
  Phase2Log,
  Phase2Result,
  Phase2TaskRecord,
  Phase3Result,
  WaveRecord,
} from '@troupe/rsi';
import { escapeHtml } from '../html-escape';

/** What {@link renderRsiReport} shows. */
export interface RsiReportInput {
  jobId: string;
  bankId: string;
  /** The seed version (Phase 1's input). @default Phase 1's output (no practice) */
  seed?: BankVersion;
  phase1: Phase1Result;
  /** Phase 1's wave records, in order. @default none shown */
  waves?: readonly WaveRecord[];
  phase2: Phase2Result;
  phase3: Phase3Result;
}

const short = (hash: string): string => hash.slice(0, 12);
const version = (v: BankVersion): string => `v${v.version} ${short(v.treeHash)}`;

/** A table cell: text (escaped) or already-escaped HTML. */
type Cell = string | number | { html: string };

function cell(c: Cell): string {
  return typeof c === 'object' ? c.html : escapeHtml(String(c));
}

function table(head: string[], rows: Cell[][], cls?: string): string {
  const th = head.map((h) => `<th>${escapeHtml(h)}</th>`).join('');
  const body = rows
    .map((r) => `<tr>${r.map((c) => `<td>${cell(c)}</td>`).join('')}</tr>`)
    .join('\n');
  const attr = cls !== undefined ? ` class="${escapeHtml(cls)}"` : '';
  return `<table${attr}><thead><tr>${th}</tr></thead><tbody>\n${body}\n</tbody></table>`;
}

/** A verdict as a coloured label. */
function verdictCell(verdict: string | undefined): Cell {
  const v = verdict ?? '—';
  const cls = v === 'PASS' ? 'pass' : v === 'FAIL' ? 'fail' : 'other';
  return { html: `<span class="${cls}">${escapeHtml(v)}</span>` };
}

/** A Verifier report, clipped in the table, whole in the tooltip. */
function reportCell(report: string | undefined): Cell {
  if (report === undefined || report === '') return '—';
  const first = report.split('\n').slice(0, 3).join(' ');
  return { html: `<span class="report" title="${escapeHtml(report)}">${escapeHtml(first)}</span>` };
}

/** What learning did: admitted (bank changed), refused (with the reason) or nothing proposed. */
function lessonsCell(x: {
  bankBefore?: string;
  bankAfter?: string;
  learningRefused?: string;
}): Cell {
  if (x.learningRefused !== undefined) return `refused: ${x.learningRefused}`;
  if (x.bankBefore === undefined || x.bankAfter === undefined) return '—';
  return x.bankBefore === x.bankAfter ? 'none admitted' : 'admitted';
}

function banksCell(before?: string, after?: string): Cell {
  if (before === undefined || after === undefined) return '—';
  return `${short(before)} → ${short(after)}`;
}

/** Phase 1: one table per wave with its branches. */
function phase1Section(input: RsiReportInput): string {
  const { phase1 } = input;
  const waves = input.waves ?? [];
  const ended = `ended ${phase1.ended}${phase1.reason !== undefined ? ` (${phase1.reason})` : ''}`;
  const head = `<h2>Phase 1: practice waves — ${escapeHtml(String(phase1.waves))} committed, ${escapeHtml(ended)}</h2>`;
  if (waves.length === 0)
    return `${head}\n<p>No practice wave ran: the seed is Phase 2's input.</p>`;
  return [
    head,
    ...waves.map((w) => {
      const rows = w.branches.map((b): Cell[] => [
        b.index,
        b.project,
        verdictCell(b.verdict ?? b.status),
        reportCell(b.report),
        lessonsCell(b),
        banksCell(b.bankBefore, b.bankAfter),
        b.changed.join(', ') || '—',
        b.committed
          ? 'committed'
          : `not committed${b.refused !== undefined ? `: ${b.refused}` : ''}`,
      ]);
      return `<h3>Wave ${w.wave}: ${escapeHtml(version(w.input))} → ${escapeHtml(version(w.output))}</h3>\n${table(
        [
          '#',
          'project',
          'verdict',
          'Verifier report',
          'lessons',
          'branch bank',
          'changed',
          'commit',
        ],
        rows,
        'branches',
      )}`;
    }),
  ].join('\n');
}

/** One development task's cycles: its attempts and the projects each attempt's search ran. */
function cycles(t: Phase2TaskRecord, log: Phase2Log): string {
  const rows = log.attempts.flatMap((a): Cell[][] => {
    const attempt: Cell[] = [
      `attempt ${a.attempt}${a.final ? ' (final)' : ''}`,
      verdictCell(a.verdict),
      reportCell(a.report),
      lessonsCell(a),
      banksCell(a.bankBefore, a.bankAfter),
    ];
    const projects = log.projects
      .filter((p) => p.attempt === a.attempt)
      .map((p): Cell[] => [
        { html: `&nbsp;&nbsp;project ${p.index}: <code>${escapeHtml(p.project)}</code>` },
        verdictCell(p.verdict),
        reportCell(p.report),
        lessonsCell(p),
        banksCell(p.bankBefore, p.bankAfter),
      ]);
    return [attempt, ...projects];
  });
  // Projects whose attempt is unknown (none today) still show.
  const known = new Set(log.attempts.map((a) => a.attempt));
  for (const p of log.projects.filter((x) => x.attempt === undefined || !known.has(x.attempt))) {
    rows.push([
      { html: `project ${p.index}: <code>${escapeHtml(p.project)}</code>` },
      verdictCell(p.verdict),
      reportCell(p.report),
      lessonsCell(p),
      banksCell(p.bankBefore, p.bankAfter),
    ]);
  }
  return `<h3>${escapeHtml(`${t.position}. ${t.taskId}`)} — ${escapeHtml(t.status)}</h3>\n${table(
    ['cycle', 'verdict', 'Verifier report', 'lessons', 'bank before → after'],
    rows,
    'cycles',
  )}`;
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
 * The study's HTML report: the bank's lineage (seed, Phase 1's output, each development task's
 * input and output bank, the frozen bank); Phase 1's waves with each branch's verdict, Verifier
 * report, lessons and commit; each development target's status and, per cycle (attempt), its
 * verdict, Verifier report, lessons admitted or refused (with the reason) and the projects its
 * Curriculum search practised with their verdicts and bank hashes; each held-out task's score,
 * with a bar chart. Every model-written text is HTML-escaped.
 */
export function renderRsiReport(input: RsiReportInput): string {
  const { phase1, phase2, phase3 } = input;
  const title = `RSIAgent study ${input.jobId}`;
  const seed = input.seed ?? phase1.output;
  const dev = table(
    ['#', 'task', 'status', 'verdict', 'attempts', 'projects', 'bank in', 'bank out'],
    phase2.tasks.map((t) => [
      t.position,
      t.taskId,
      t.status,
      verdictCell(t.verdict),
      t.attempts,
      t.projects,
      version(t.bankIn),
      version(t.bankOut),
    ]),
  );
  const perCycle = phase2.tasks
    .map((t) =>
      t.log !== undefined
        ? cycles(t, t.log)
        : `<h3>${escapeHtml(`${t.position}. ${t.taskId}`)}</h3>\n<p>No per-cycle log in this record.</p>`,
    )
    .join('\n');
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
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;font-size:14px;vertical-align:top}th{background:#f4f4f4}
code{font-size:13px}.pass{color:#2e7d32;font-weight:600}.fail{color:#c62828;font-weight:600}.other{color:#8d6e00;font-weight:600}
.report{display:inline-block;max-width:42em}</style></head><body>
<h1>${escapeHtml(title)}</h1>
<p>Bank <code>${escapeHtml(input.bankId)}</code>: seed <code>${escapeHtml(version(seed))}</code>
→ Phase 1 output <code>${escapeHtml(version(phase1.output))}</code> (${escapeHtml(phase1.ended)})
→ frozen <code>${escapeHtml(version(phase2.frozen))}</code>.</p>
${phase1Section(input)}
<h2>Phase 2: development tasks</h2>
${dev}
${perCycle}
<h2>Phase 3: held-out tasks — mean score ${phase3.meanScore.toFixed(3)} (${phase3.scored} scored, ${phase3.unscored} unscored)</h2>
${scoreBars(phase3)}
${held}
</body></html>
`;
}
