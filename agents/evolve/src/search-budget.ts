import { type EvolveLimits } from './evolve-config';

/** What a search has used so far; every figure is derived from the journal. */
export interface BudgetUsage {
  /** Evaluations started (attempts with an evaluation, plus attempts lost in a crash). */
  evaluations: number;
  /** Attempts that started but never recorded a result (lost in a crash, or still running). */
  lostAttempts: number;
  /** Search time charged against `maxWallMs`: operator and evaluation time, queue wait excluded. */
  chargedMs: number;
  /** Total time attempts waited for a free evaluator (not charged). */
  queueMs: number;
  /** USD spent by operators. */
  costUsd: number;
  /** Generations closed. */
  generations: number;
}

/** Why a search stopped. */
export const StopReason = {
  /** `maxEvaluations` reached. */
  EVALUATIONS: 'evaluations',
  /** `maxWallMs` of charged search time reached. */
  WALL_TIME: 'wall_time',
  /** `maxCostUsd` reached. */
  COST: 'cost',
  /** `maxGenerations` closed. */
  GENERATIONS: 'generations',
  /** Someone asked the search to stop. */
  REQUESTED: 'requested',
} as const;

/** One of the {@link StopReason} values. */
export type StopReason = (typeof StopReason)[keyof typeof StopReason];

/** The first limit the usage has reached, or `undefined` while there is room left in all. */
export function budgetStopReason(usage: BudgetUsage, limits: EvolveLimits): StopReason | undefined {
  if (usage.generations >= limits.maxGenerations) return StopReason.GENERATIONS;
  if (usage.evaluations >= limits.maxEvaluations) return StopReason.EVALUATIONS;
  if (usage.chargedMs >= limits.maxWallMs) return StopReason.WALL_TIME;
  if (usage.costUsd >= limits.maxCostUsd) return StopReason.COST;
  return undefined;
}

/** A half-open time interval `[start, end)` in epoch ms. */
export type TimeInterval = readonly [start: number, end: number];

/** Length of the union of intervals (overlaps counted once), in ms. */
export function unionLengthMs(intervals: readonly TimeInterval[]): number {
  const sorted = intervals.filter(([s, e]) => e > s).sort((a, b) => a[0] - b[0]);
  let total = 0;
  let curStart = Number.NEGATIVE_INFINITY;
  let curEnd = Number.NEGATIVE_INFINITY;
  for (const [s, e] of sorted) {
    if (s > curEnd) {
      if (curEnd > curStart) total += curEnd - curStart;
      curStart = s;
      curEnd = e;
    } else if (e > curEnd) {
      curEnd = e;
    }
  }
  if (curEnd > curStart) total += curEnd - curStart;
  return total;
}

/** Timings of one attempt, in ms (`startedAt` in epoch ms). */
export interface AttemptTimings {
  /** When the attempt began (before its operator ran). */
  startedAt: number;
  /** Operator time (model call, or parameter rewriting). */
  opMs: number;
  /** Time spent waiting for a free evaluator. */
  queueMs: number;
  /** Evaluation time as the evaluator measured it. */
  evalMs: number;
  /** From `startedAt` until the result was in. */
  totalMs: number;
}

/**
 * The intervals in which an attempt was working rather than waiting for an evaluator: the
 * operator phase, and the evaluation phase after the queue wait. The search is charged for the
 * union of these over all attempts of a generation, so parallel work is counted once and time
 * in which every attempt was queued is not counted at all.
 */
export function activeIntervals(t: AttemptTimings): TimeInterval[] {
  const opEnd = t.startedAt + t.opMs;
  const evalStart = opEnd + t.queueMs;
  const end = t.startedAt + t.totalMs;
  const out: TimeInterval[] = [];
  if (t.opMs > 0) out.push([t.startedAt, opEnd]);
  if (end > evalStart) out.push([evalStart, end]);
  return out;
}
