import type { JournalRecord, NodeRecord } from '@troupe/evolve';

/** Characters of a failure's text kept for progress lines, details and the report. */
export const FAILURE_TEXT_CHARS = 600;

/** A candidate that did not score, as a person reads it. */
export interface EvaluationFailure {
  /** The node's attempt id. */
  attemptId: string;
  /** `unscored` (the evaluator itself failed), `buggy` (invalid, error, timeout), `no_code`. */
  outcome: NodeRecord['outcome'];
  /** Status, reason and the tail of stderr, on one line. */
  text: string;
  /**
   * The part a person reads first, short: the last line of stderr for an evaluator that failed
   * (a traceback's exception), status and reason for a program that did not score.
   */
  headline: string;
}

/** Why a seed program failed its evaluation: which seed, and what happened. */
export interface SeedFailure {
  /** Index in `task.yaml` `seeds`. */
  index: number;
  /** The failure of its node. */
  failure: EvaluationFailure;
}

const oneLine = (s: string): string => s.replace(/\s+/g, ' ').trim();
const HEADLINE_CHARS = 160;

/** The last non-empty line of `s`, or ''. */
function lastLine(s: string): string {
  const lines = s.split('\n').map((l) => l.trim());
  return lines.filter((l) => l !== '').at(-1) ?? '';
}

/** The tail of `s` with at most `max` characters (`…` marks a cut). */
function tailOf(s: string, max: number): string {
  return s.length <= max ? s : `…${s.slice(-(max - 1))}`;
}

/** What went wrong with a node that did not score, or undefined for a scored node. */
export function failureOf(node: NodeRecord): EvaluationFailure | undefined {
  if (node.outcome === 'scored') return undefined;
  let text: string;
  let headline: string;
  if (node.result) {
    const reason = node.result.metrics['reason'] ?? node.result.metrics['invalidReason'];
    const stderr = oneLine(node.result.stderrTail);
    const said = typeof reason === 'string' && reason ? `: ${oneLine(reason)}` : '';
    text = `${node.result.status}${said}` + (stderr ? `; stderr: ${stderr}` : '');
    const last = lastLine(node.result.stderrTail);
    headline = `${node.result.status}${said}` + (last ? ` (${last})` : '');
  } else {
    const error = node.error ?? node.outcome;
    text = oneLine(error);
    // An evaluator failure's message ends with its stderr: the last line is the exception.
    headline = lastLine(error);
  }
  return {
    attemptId: node.attemptId,
    outcome: node.outcome,
    text: tailOf(text, FAILURE_TEXT_CHARS),
    headline:
      headline.length <= HEADLINE_CHARS ? headline : `${headline.slice(0, HEADLINE_CHARS - 1)}…`,
  };
}

/**
 * Watches a search's journal records (each once) for what a suite's author must see: how many
 * candidates failed and how (the last failure's status, reason and stderr tail — a grader that
 * crashes shows its traceback here), and whether a seed program failed its evaluation, which
 * makes the whole search pointless (the task fails with that reason).
 */
export class EvaluationHealth {
  private readonly seen = new Set<string>();
  private seeds: string[] = [];
  private includeSeeds = true;
  private readonly seedNodes = new Map<number, NodeRecord>();
  private failed = 0;
  private evaluatorFailed = 0;
  private last: EvaluationFailure | undefined;

  /** Candidates that did not score (buggy, unscored, no code). */
  get failures(): number {
    return this.failed;
  }

  /** Candidates the evaluator itself failed on (`unscored`: exit status, no result line). */
  get evaluatorFailures(): number {
    return this.evaluatorFailed;
  }

  /** The most recent failure, or undefined. */
  get lastFailure(): EvaluationFailure | undefined {
    return this.last;
  }

  /** Takes one journal record into account (records already seen are ignored). */
  observe(record: JournalRecord): void {
    if (record.type === 'task') {
      this.seeds = record.seeds.map((s) => s.source);
      this.includeSeeds = record.config.includeSeeds;
      return;
    }
    if (record.type !== 'node' || this.seen.has(record.attemptId)) return;
    this.seen.add(record.attemptId);
    if (record.operator === 'seed' && record.depth === 0) {
      const index = this.seeds.indexOf(record.program.source);
      if (index >= 0 && !this.seedNodes.has(index)) this.seedNodes.set(index, record);
    }
    const failure = failureOf(record);
    if (!failure) return;
    this.failed++;
    if (record.outcome === 'unscored') this.evaluatorFailed++;
    this.last = failure;
  }

  /**
   * The first seed program (in `seeds` order) whose evaluation did not score, once it is known;
   * undefined while seeds are pending, when every seed scored, or without seed evaluations
   * (`includeSeeds: false`).
   */
  seedFailure(): SeedFailure | undefined {
    if (!this.includeSeeds) return undefined;
    for (const [index, node] of [...this.seedNodes].sort(([a], [b]) => a - b)) {
      const failure = failureOf(node);
      if (failure) return { index, failure };
    }
    return undefined;
  }
}
