import { parseTunableParams } from '@troupe/evolve';
import { errorCode, invalidArgument } from '@troupe/proto';
import { type EvolveTask } from './evolve-job-spec';
import { loadTaskBundle } from './competition-tasks';
import { checkSuiteFitsMessages } from './suite-bundle';

/** What {@link checkSuite} found in a suite that passed its static checks. */
export interface SuiteCheck {
  /** Absolute suite folder. */
  suiteDir: string;
  /** The suite's name (task.yaml). */
  name: string;
  /** Each seed file with the names of its marked parameters. */
  seeds: { file: string; params: string[] }[];
  /** Files the phases ship, and their bytes. */
  files: number;
  bytes: number;
}

/**
 * The static half of `troupe validate`: the layout (task.yaml against its schema, seed files,
 * every phase file), the size limit of a suite's files, and the seeds' `troupe:param` markers
 * (built-in operators need at least one). Every failure is an `INVALID_ARGUMENT` on `field`.
 */
export async function checkSuite(suite: string, field: string, cwd?: string): Promise<SuiteCheck> {
  const bundle = await loadTaskBundle(suite, field, cwd);
  checkSuiteFitsMessages(bundle, field);
  const seeds = bundle.spec.seeds.map((file, i) => {
    let names: string[];
    try {
      names = parseTunableParams(bundle.seeds[i]?.source ?? '').map((p) => p.name);
    } catch (err) {
      if (errorCode(err) !== 'INVALID_ARGUMENT') throw err;
      throw invalidArgument(
        field,
        `seed ${file} (task.yaml seeds[${i}]): ${(err as Error).message}`,
      );
    }
    if (names.length === 0 && (bundle.spec.search.operators ?? 'builtin') === 'builtin') {
      throw invalidArgument(
        field,
        `seed ${file} (task.yaml seeds[${i}]) has no troupe:param marker, and built-in operators ` +
          'tune only marked numbers (mark one: `X = 0.5  # troupe:param float[0,1]`)',
      );
    }
    return { file, params: names };
  });
  const bytes = Object.values(bundle.files).reduce(
    (sum, b64) => sum + Buffer.byteLength(b64, 'base64'),
    0,
  );
  return {
    suiteDir: bundle.suiteDir,
    name: bundle.spec.name,
    seeds,
    files: Object.keys(bundle.files).length,
    bytes,
  };
}

/**
 * A search task turned into a dry run for `troupe validate`: the seeds evaluated once each on
 * the validation phase and nothing else (no drafts, no test phase, one generation). A seed that
 * does not score fails the task with the grader's reason.
 */
export function dryRunTask(task: EvolveTask, seeds: number): EvolveTask {
  return {
    id: task.id,
    suite: task.suite,
    limits: { maxEvaluations: seeds, maxGenerations: 1 },
    search: {
      ...(task.search?.evaluationTimeoutMs !== undefined
        ? { evaluationTimeoutMs: task.search.evaluationTimeoutMs }
        : {}),
      operators: 'builtin',
      includeSeeds: true,
      draftsPerIsland: 0,
      islands: 1,
      testPhase: false,
    },
  };
}
