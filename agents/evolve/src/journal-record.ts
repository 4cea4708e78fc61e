import { z } from 'zod';
import { EvaluatorResultSchema } from './evaluator-result';
import { EvolveOptionsSchema } from './evolve-config';
import { OperatorKind } from './operator-kind';
import { ProgramSchema } from './program';
import { StopReason } from './search-budget';

/** Task ids: letters, digits, `_` and `-`, 1 to 100 characters (they name actors and subjects). */
export const TASK_ID_PATTERN = /^[A-Za-z0-9_-]{1,100}$/;

const TaskId = z.string().regex(TASK_ID_PATTERN, 'must match [A-Za-z0-9_-]{1,100}');
const count = z.number().int().nonnegative();
const ms = z.number().nonnegative();
const Operator = z.enum([
  OperatorKind.SEED,
  OperatorKind.DRAFT,
  OperatorKind.IMPROVE,
  OperatorKind.CROSSOVER,
  OperatorKind.DEBUG,
]);

/** How a node ended. */
export const NodeOutcome = {
  /** Evaluated with status ok: it has a validation score and may join an island. */
  SCORED: 'scored',
  /** Evaluated as invalid, error or timeout: a Debug candidate, never admitted. */
  BUGGY: 'buggy',
  /** The evaluator failed twice (infrastructure): no score, no Debug, never zero. */
  UNSCORED: 'unscored',
  /** The operator produced no program (model reply without code, operator error). */
  NO_CODE: 'no_code',
} as const;

/** One of the {@link NodeOutcome} values. */
export type NodeOutcome = (typeof NodeOutcome)[keyof typeof NodeOutcome];

/** Where an attempt sits in the search: generation, slot, debug depth and try. */
const Position = {
  taskId: TaskId,
  /** Unique within the task: `<taskId>:g<generation>:s<slot>:d<depth>:t<try>`. */
  attemptId: z.string().min(1).max(200),
  generation: count,
  /** Index of the child within its generation. */
  slot: count,
  /** 0 for the child itself, n for the n-th Debug attempt of its chain. */
  depth: count,
  /** 0, or n after n attempts at this position were lost in crashes. */
  try: count,
  island: count,
  operator: Operator,
  /** Parents (Improve: one, Crossover: two, Debug: the buggy node, Draft/seed: none). */
  parentIds: z.array(z.string()).max(2),
};

/** The first record of a task: its configuration and seeds (written once). */
export const TaskRecordSchema = z
  .object({
    type: z.literal('task'),
    taskId: TaskId,
    config: EvolveOptionsSchema,
    seeds: z.array(ProgramSchema).min(1),
    createdAt: z.number(),
  })
  .strict();

/** Written before an attempt's operator runs; an attempt record without a node was lost. */
export const AttemptRecordSchema = z
  .object({ type: z.literal('attempt'), ...Position, startedAt: z.number() })
  .strict();

/** Timings of an attempt (see `AttemptTimings`). */
export const TimingsSchema = z
  .object({
    startedAt: z.number(),
    opMs: ms,
    queueMs: ms,
    evalMs: ms,
    totalMs: ms,
    /**
     * Time an island step waited for its per-step evaluator lease (journals written before
     * leases became per evaluation, whose wait is the attempt's `queueMs`; never charged).
     */
    leaseWaitMs: ms.optional(),
  })
  .strict();

/** One evaluated (or failed) program: a node of the search tree. */
export const NodeRecordSchema = z
  .object({
    type: z.literal('node'),
    ...Position,
    /** The program; empty source for `no_code`. */
    program: ProgramSchema,
    /** sha256 of the source (see `programHash`). */
    codeHash: z.string(),
    outcome: z.enum(['scored', 'buggy', 'unscored', 'no_code']),
    /** Validation result; null for `unscored` and `no_code`. */
    result: EvaluatorResultSchema.nullable(),
    /** What went wrong for `unscored` / `no_code`. */
    error: z.string().nullable(),
    costUsd: z.number().nonnegative(),
    /** Evaluator runs repeated after an infrastructure failure (0 or 1). */
    infraRetries: count,
    /** Improve: the multiple of `mutationSigma` it used (`stepAdaptation`). @default 1 */
    stepScale: z.number().positive().optional(),
    timings: TimingsSchema,
  })
  .strict();

/** The admission decision for one slot's candidate. */
export const AdmissionSchema = z
  .object({
    nodeId: z.string(),
    island: count,
    admitted: z.boolean(),
    reason: z.enum(['empty_island', 'at_least_average', 'below_average', 'duplicate']),
  })
  .strict();

/**
 * Closes a generation: admissions (recomputed on replay from the node records, listed here for
 * readers), evictions, migrations, and the generation's charged time.
 */
export const GenerationRecordSchema = z
  .object({
    type: z.literal('generation'),
    taskId: TaskId,
    generation: count,
    admissions: z.array(AdmissionSchema),
    evicted: z.array(z.object({ island: count, nodeId: z.string() }).strict()),
    migrations: z.array(z.object({ from: count, to: count, nodeId: z.string() }).strict()),
    /** Islands reset at this close (`resetInterval`): each founded again from `nodeId`. */
    resets: z
      .array(z.object({ island: count, from: count, nodeId: z.string() }).strict())
      .optional(),
    chargedMs: ms,
    closedAt: z.number(),
  })
  .strict();

/**
 * Async schedule only: a child planned from the islands as they were when a slot freed, written
 * before it is dispatched (so a resumed search runs the same child, not a new plan). `generation`
 * is the generation in progress when it was planned; `slot` counts children across the search.
 */
export const PlanRecordSchema = z
  .object({
    type: z.literal('plan'),
    taskId: TaskId,
    generation: count,
    slot: count,
    island: count,
    operator: z.enum([
      OperatorKind.SEED,
      OperatorKind.DRAFT,
      OperatorKind.IMPROVE,
      OperatorKind.CROSSOVER,
    ]),
    parentIds: z.array(z.string()).max(2),
    seedIndex: count.nullable(),
    /** Improve: the step scale planned (`stepAdaptation`). @default 1 */
    stepScale: z.number().positive().optional(),
    at: z.number(),
  })
  .strict();

/** Budget usage snapshot. */
export const BudgetUsageSchema = z
  .object({
    evaluations: count,
    lostAttempts: count,
    chargedMs: ms,
    queueMs: ms,
    costUsd: z.number().nonnegative(),
    generations: count,
  })
  .strict();

const StopReasonSchema = z.enum([
  StopReason.EVALUATIONS,
  StopReason.WALL_TIME,
  StopReason.COST,
  StopReason.GENERATIONS,
  StopReason.REQUESTED,
]);

/** The search stopped (a limit or a request); final selection follows. */
export const StopRecordSchema = z
  .object({
    type: z.literal('stop'),
    taskId: TaskId,
    reason: StopReasonSchema,
    generation: count,
    usage: BudgetUsageSchema,
    at: z.number(),
  })
  .strict();

/**
 * Written before the selected program's test-phase evaluation, so that after a crash the test
 * attempt id is not evaluated again (the next try gets a new id).
 */
export const TestStartRecordSchema = z
  .object({
    type: z.literal('test-start'),
    taskId: TaskId,
    /** `<taskId>:final:test:t<try>`. */
    attemptId: z.string().min(1).max(200),
    nodeId: z.string(),
    at: z.number(),
  })
  .strict();

/** The outcome of a task as a whole. */
export const EvolveTaskStatus = {
  /** A program was selected by its validation score (and graded ok on test when asked). */
  SUCCEEDED: 'succeeded',
  /** No program scored: a random code-bearing node was selected and flagged `random_no_valid`. */
  NO_VALID_PROGRAM: 'no_valid_program',
  /** No node carried code at all: nothing was selected. */
  NO_PROGRAM: 'no_program',
  /** The selected program failed its test-phase grading (or could not be graded). */
  TEST_FAILED: 'test_failed',
} as const;

/** One of the {@link EvolveTaskStatus} values. */
export type EvolveTaskStatus = (typeof EvolveTaskStatus)[keyof typeof EvolveTaskStatus];

/** How the final program was chosen. */
export const SelectionSource = {
  /** Best validation score among scored nodes. */
  BEST_VALIDATION: 'best_validation',
  /** Seeded random choice among code-bearing nodes: nothing scored. */
  RANDOM_NO_VALID: 'random_no_valid',
  /** No code-bearing node existed. */
  NONE: 'none',
} as const;

/** One of the {@link SelectionSource} values. */
export type SelectionSource = (typeof SelectionSource)[keyof typeof SelectionSource];

/** The selected node. */
export const SelectionSchema = z
  .object({
    nodeId: z.string().nullable(),
    source: z.enum(['best_validation', 'random_no_valid', 'none']),
    /** Its validation score (null unless `best_validation`). */
    score: z.number().nullable(),
  })
  .strict();

/** The last record: final selection, optional test grading and the task's real status. */
export const FinalRecordSchema = z
  .object({
    type: z.literal('final'),
    taskId: TaskId,
    selection: SelectionSchema,
    /** Test-phase grading of the selection; null when not requested or nothing was selected. */
    test: z
      .object({
        attemptId: z.string(),
        result: EvaluatorResultSchema.nullable(),
        error: z.string().nullable(),
      })
      .strict()
      .nullable(),
    status: z.enum(['succeeded', 'no_valid_program', 'no_program', 'test_failed']),
    stopReason: StopReasonSchema,
    usage: BudgetUsageSchema,
    at: z.number(),
  })
  .strict();

/** Any journal record. */
export const JournalRecordSchema = z.discriminatedUnion('type', [
  TaskRecordSchema,
  AttemptRecordSchema,
  NodeRecordSchema,
  GenerationRecordSchema,
  PlanRecordSchema,
  StopRecordSchema,
  TestStartRecordSchema,
  FinalRecordSchema,
]);

/** The task record. */
export type TaskRecord = z.output<typeof TaskRecordSchema>;
/** An attempt-started record. */
export type AttemptRecord = z.output<typeof AttemptRecordSchema>;
/** A node record. */
export type NodeRecord = z.output<typeof NodeRecordSchema>;
/** A generation-closed record. */
export type GenerationRecord = z.output<typeof GenerationRecordSchema>;
/** A plan record (async schedule). */
export type PlanRecord = z.output<typeof PlanRecordSchema>;
/** A stop record. */
export type StopRecord = z.output<typeof StopRecordSchema>;
/** A test-start record. */
export type TestStartRecord = z.output<typeof TestStartRecordSchema>;
/** The final record. */
export type FinalRecord = z.output<typeof FinalRecordSchema>;
/** Any journal record. */
export type JournalRecord = z.output<typeof JournalRecordSchema>;

/** The `Nats-Msg-Id` of a record: attempt ids for nodes, so each attempt is journaled once. */
export function journalMessageId(record: JournalRecord): string {
  switch (record.type) {
    case 'task':
      return `${record.taskId}:task`;
    case 'attempt':
      return `${record.attemptId}:start`;
    case 'node':
      return record.attemptId;
    case 'generation':
      return `${record.taskId}:generation:${record.generation}`;
    case 'plan':
      return `${record.taskId}:plan:${record.slot}`;
    case 'stop':
      return `${record.taskId}:stop`;
    case 'test-start':
      return record.attemptId;
    case 'final':
      return `${record.taskId}:final`;
  }
}

/** The attempt id of a position: `<taskId>:g<generation>:s<slot>:d<depth>:t<try>`. */
export function attemptIdOf(p: {
  taskId: string;
  generation: number;
  slot: number;
  depth: number;
  try: number;
}): string {
  return `${p.taskId}:g${p.generation}:s${p.slot}:d${p.depth}:t${p.try}`;
}
