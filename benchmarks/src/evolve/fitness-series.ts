import {
  applyJournalRecord,
  budgetUsage,
  createSearchState,
  type JournalRecord,
  scoreOf,
  type SearchState,
} from '@troupe/evolve';

/** The islands' scores after one generation closed. */
export interface GenerationPoint {
  /** The generation closed. */
  generation: number;
  /** Evaluations started by then. */
  evaluations: number;
  /** Time since the task record, ms. */
  elapsedMs: number;
  /** Per island: best and mean validation score of its members (null while empty). */
  islands: { best: number | null; mean: number | null; size: number }[];
}

/** One scored evaluation. */
export interface EvaluationPoint {
  /** 1-based position among the node records. */
  evaluation: number;
  /** When it finished, ms since the task record. */
  elapsedMs: number;
  island: number;
  score: number;
}

/** What a search's journal says about its progress, for charts and progress lines. */
export interface FitnessSeries {
  /** `maximise` or `minimise`. */
  direction: 'maximise' | 'minimise';
  generations: GenerationPoint[];
  evaluations: EvaluationPoint[];
  /** The state after the last record. */
  state: SearchState;
}

/**
 * Replays a journal (task record first) and samples the islands after every generation: best and
 * mean validation score of each island's members, in score units (not direction-adjusted).
 */
export function fitnessSeries(records: readonly JournalRecord[]): FitnessSeries | undefined {
  const [first, ...rest] = records;
  if (!first || first.type !== 'task') return undefined;
  const state = createSearchState(first);
  const direction = state.config.direction;
  const generations: GenerationPoint[] = [];
  const evaluations: EvaluationPoint[] = [];
  let nodes = 0;
  for (const record of rest) {
    applyJournalRecord(state, record);
    if (record.type === 'node') {
      nodes++;
      if (record.outcome === 'scored' && record.result && record.result.score !== null) {
        evaluations.push({
          evaluation: nodes,
          elapsedMs: Math.max(
            0,
            record.timings.startedAt + record.timings.totalMs - first.createdAt,
          ),
          island: record.island,
          score: record.result.score,
        });
      }
    } else if (record.type === 'generation') {
      generations.push({
        generation: record.generation,
        evaluations: budgetUsage(state).evaluations,
        elapsedMs: Math.max(0, record.closedAt - first.createdAt),
        islands: islandPoints(state),
      });
    }
  }
  return { direction, generations, evaluations, state };
}

/**
 * Per island of `state`: best and mean validation score of its members, in score units (not
 * direction-adjusted), and how many members it has.
 */
export function islandPoints(state: SearchState): GenerationPoint['islands'] {
  const direction = state.config.direction;
  return state.islands.map((members) => {
    if (members.length === 0) return { best: null, mean: null, size: 0 };
    const fitness = members.map((m) => m.fitness);
    const best = Math.max(...fitness);
    const mean = fitness.reduce((a, b) => a + b, 0) / fitness.length;
    return {
      best: scoreOf(best, direction),
      mean: scoreOf(mean, direction),
      size: members.length,
    };
  });
}

/** The best validation score among `points` for a direction, or null. */
export function bestScore(
  points: readonly { score: number }[],
  direction: 'maximise' | 'minimise',
): number | null {
  let best: number | null = null;
  for (const p of points) {
    if (best === null || (direction === 'maximise' ? p.score > best : p.score < best)) {
      best = p.score;
    }
  }
  return best;
}
