import { parseWith } from '@troupe/proto';
import { z } from 'zod';
import { Direction } from './direction';

/** Which operator implementations a search uses. */
export const OperatorMode = {
  /** Built-in operators on `troupe:param` markers; need no model, cannot debug. */
  BUILTIN: 'builtin',
  /** LLM-backed Draft/Improve/Crossover/Debug. */
  LLM: 'llm',
} as const;

/** One of the {@link OperatorMode} values. */
export type OperatorMode = (typeof OperatorMode)[keyof typeof OperatorMode];

/** How the search schedules its children. */
export const ScheduleMode = {
  /** Plan a generation, run all its children, close it (admission, migration), repeat. */
  GENERATIONAL: 'generational',
  /**
   * Steady state (AIRA-dojo's async mode): a child is planned from the current islands as soon
   * as a slot frees and offered for admission as soon as it is done; a generation record closes
   * each `childrenPerGeneration` finished children (migration, progress).
   */
  ASYNC: 'async',
} as const;

/** One of the {@link ScheduleMode} values. */
export type ScheduleMode = (typeof ScheduleMode)[keyof typeof ScheduleMode];

const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().nonnegative();
const probability = z.number().min(0).max(1);

/** Limits of a search; reaching any of them stops it and proceeds to final selection. */
export const EvolveLimitsSchema = z
  .object({
    /**
     * Evaluations (validation phase) the search may start, debug attempts included.
     * @default 200
     */
    maxEvaluations: positiveInt.default(200),
    /**
     * Search time in ms: time with an operator or an evaluation running, not counting time spent
     * waiting for a free evaluator (reported separately as `queueMs`).
     * @default 3600000
     */
    maxWallMs: positiveInt.default(3_600_000),
    /**
     * USD the operators may spend on model calls.
     * @default 10
     */
    maxCostUsd: z.number().positive().default(10),
    /**
     * Generations (generation 0 included).
     * @default 100
     */
    maxGenerations: positiveInt.default(100),
  })
  .strict();

/** Validated limits. */
export type EvolveLimits = z.output<typeof EvolveLimitsSchema>;

/**
 * Options of an evolutionary search (`XxxOptions` is what a caller passes; the parse result,
 * with every default filled in, is the {@link EvolveConfig}). Every field but `direction` has a
 * default, documented with `@default`.
 */
export const EvolveOptionsSchema = z
  .object({
    /** Whether higher (`maximise`) or lower (`minimise`) scores are better. */
    direction: z.enum([Direction.MAXIMISE, Direction.MINIMISE]),
    /**
     * Seed of every random choice (the only key besides generation, slot and purpose: not the job
     * or search id), so the same seed, task and evaluator give the same search in any job.
     * @default 0
     */
    seed: z.number().int().default(0),
    /**
     * Operator implementations.
     * @default 'builtin'
     */
    operators: z.enum([OperatorMode.BUILTIN, OperatorMode.LLM]).default(OperatorMode.BUILTIN),
    /**
     * Scheduling: `generational` waits for a generation's slowest child before planning the
     * next; `async` keeps `islands × islandConcurrency` children running at all times.
     * @default 'generational'
     */
    schedule: z
      .enum([ScheduleMode.GENERATIONAL, ScheduleMode.ASYNC])
      .default(ScheduleMode.GENERATIONAL),
    /**
     * Number of islands (one actor each).
     * @default 3
     */
    islands: positiveInt.max(64).default(3),
    /**
     * Members an island keeps; above it the worst is evicted.
     * @default 10
     */
    maxIslandSize: positiveInt.default(10),
    /**
     * Evaluate the seed programs unchanged in generation 0 (island `k mod islands`).
     * @default true
     */
    includeSeeds: z.boolean().default(true),
    /**
     * Drafts per island in generation 0.
     * @default 2
     */
    draftsPerIsland: nonNegativeInt.default(2),
    /**
     * Children proposed per generation after generation 0 (each for an island chosen by softmax).
     * @default 4
     */
    childrenPerGeneration: positiveInt.default(4),
    /**
     * Probability that a child is a Crossover rather than an Improve, from
     * `crossoverAfterGeneration` on (when its island has two members).
     * @default 0.3
     */
    crossoverProbability: probability.default(0.3),
    /**
     * First generation in which Crossover may be chosen.
     * @default 2
     */
    crossoverAfterGeneration: nonNegativeInt.default(2),
    /**
     * Softmax temperature of the island choice over normalised island fitness (best member);
     * lower is greedier.
     * @default 1
     */
    islandTemperature: z.number().positive().default(1),
    /**
     * Softmax temperature of parent sampling over normalised member fitness.
     * @default 0.5
     */
    parentTemperature: z.number().positive().default(0.5),
    /**
     * Ring migration every this many generations (after generations N-1, 2N-1, …); 0 disables.
     * @default 5
     */
    migrationInterval: nonNegativeInt.default(5),
    /**
     * Top members each island sends to the next one per migration.
     * @default 1
     */
    migrationTopK: positiveInt.default(1),
    /**
     * Debug attempts after a buggy child (LLM operators only).
     * @default 3
     */
    debugMaxDepth: nonNegativeInt.default(3),
    /**
     * Total time of one debug chain, in ms (LLM operators only).
     * @default 600000
     */
    debugMaxTimeMs: positiveInt.default(600_000),
    /**
     * Built-in Improve: standard deviation of the gaussian perturbation, as a fraction of each
     * parameter's range (of its log range for `log` parameters).
     * @default 0.1
     */
    mutationSigma: z.number().positive().max(1).default(0.1),
    /**
     * Built-in Improve: at most this many parameters are perturbed per child (at least one).
     * @default 2
     */
    maxMutatedParams: positiveInt.default(2),
    /**
     * Built-in Improve: step-size adaptation. `one-fifth` scales `mutationSigma` per island by
     * the 1/5 success rule over the island's earlier Improve children, in position order: ×1.5
     * after a child that set a new best on its island, ×1.5^-¼ after one that did not (buggy
     * included), kept within [1/16, 1]; so the step shrinks near an optimum and grows back while
     * improvements are common. `bandit` picks each Improve child's step among ¼, 1 and 4 times
     * `mutationSigma` by Thompson sampling over the search's earlier Improve children (a success:
     * a new best on the child's island). `off` always uses `mutationSigma`.
     * @default 'off'
     */
    stepAdaptation: z.enum(['off', 'one-fifth', 'bandit']).default('off'),
    /**
     * Island reset (FunSearch's) every this many generations (after generations N-1, 2N-1, …,
     * before migration): the worse half of the islands by best fitness is emptied and each is
     * founded again with the best member of an island of the better half, chosen at random; 0
     * disables.
     * @default 0
     */
    resetInterval: nonNegativeInt.default(0),
    /**
     * Deadline of one evaluation, in ms (the evaluator is killed when it passes).
     * @default 60000
     */
    evaluationTimeoutMs: positiveInt.default(60_000),
    /**
     * Deadline of one operator call (a model call), in ms.
     * @default 300000
     */
    operatorTimeoutMs: positiveInt.default(300_000),
    /**
     * Children an island works on at the same time.
     * @default 2
     */
    islandConcurrency: positiveInt.default(2),
    /**
     * How long the search waits for an island's step (all its children of a generation).
     * @default 1800000
     */
    islandStepTimeoutMs: positiveInt.default(1_800_000),
    /**
     * Grade the selected program in the test phase.
     * @default true
     */
    testPhase: z.boolean().default(true),
    /**
     * What the task is, for the LLM operators' prompts.
     * @default ''
     */
    description: z.string().max(20_000).default(''),
    /** Limits; see {@link EvolveLimitsSchema}. @default all defaults */
    limits: EvolveLimitsSchema.default(() => EvolveLimitsSchema.parse({})),
  })
  .strict();

/** What a caller passes to configure a search. */
export type EvolveOptions = z.input<typeof EvolveOptionsSchema>;

/** A validated search configuration with defaults filled in. */
export type EvolveConfig = z.output<typeof EvolveOptionsSchema>;

/**
 * Validates search options and fills in defaults.
 * @throws TroupeError `INVALID_ARGUMENT` listing every broken field (`evolve.islands: …`)
 */
export function parseEvolveConfig(options: unknown): EvolveConfig {
  return parseWith(EvolveOptionsSchema, options, { prefix: 'evolve' });
}
