import { TASK_ID_PATTERN, TASK_ID_RULE } from '@troupe/coordinator';
import { z } from 'zod';
import { TaskEnvironmentSchema, WorkdirSchema } from './task-environment';

/**
 * Images a task may name (built offline by `deploy/images/build.sh`). Not busybox: graders run
 * with bash.
 */
export const ISSUE_TASK_IMAGES = ['base', 'python', 'python-slim', 'node'] as const;

const IMAGE_RULE = `must be one of ${ISSUE_TASK_IMAGES.join(', ')} (an image of deploy/images)`;

const positiveInt = (min: number, max: number) =>
  z
    .number({ error: 'must be a number' })
    .int({ error: 'must be an integer' })
    .min(min, { error: `must be >= ${min}` })
    .max(max, { error: `must be <= ${max}` });

/** Time limits of one task (`timeouts:` of its task.yaml). */
export const IssueTaskTimeoutsSchema = z
  .object({
    /** Wall time of the agent (then it is stopped and its work graded). @default 600000 */
    agentMs: positiveInt(1_000, 24 * 3_600_000).default(600_000),
    /** Wall time of one grading run. @default 120000 */
    gradeMs: positiveInt(1_000, 3_600_000).default(120_000),
  })
  .strict();

/** Resource and agent limits of one task (`limits:` of its task.yaml). */
export const IssueTaskLimitsSchema = z
  .object({
    /** Agent steps (model turns). @default 50 */
    maxSteps: positiveInt(1, 10_000).default(50),
    /** Model spend of the task. @default unlimited (the job budget still applies) */
    maxCostUsd: z
      .number({ error: 'must be a number' })
      .positive({ error: 'must be > 0' })
      .max(10_000, { error: 'must be <= 10000' })
      .optional(),
    /** Memory of the agent's sandbox and of each grading container. @default 512 */
    memoryMb: positiveInt(64, 65_536).default(512),
    /** CPU limit of the agent's sandbox (cores). @default 1 */
    cpus: z
      .number({ error: 'must be a number' })
      .min(0.1, { error: 'must be >= 0.1' })
      .max(64, { error: 'must be <= 64' })
      .default(1),
  })
  .strict();

/**
 * A task's `task.yaml`: the issue an agent must resolve in `repo/`. Strict: a misspelt key is an
 * error naming it.
 */
export const IssueTaskFileSchema = z
  .object({
    /** Task id, the folder's name by convention. */
    id: z.string({ error: 'must be a string' }).regex(TASK_ID_PATTERN, { error: TASK_ID_RULE }),
    /** The issue, as the agent reads it (its first user message). */
    instruction: z
      .string({ error: 'must be a string (the issue text)' })
      .trim()
      .min(20, { error: 'must describe the issue (at least 20 characters)' })
      .max(65_536, { error: 'must be at most 65536 characters' }),
    /** Image of the sandbox and of the grader, a name of `deploy/images`. */
    image: z.enum(ISSUE_TASK_IMAGES, { error: IMAGE_RULE }),
    /** Where `repo/` is put in the sandbox and the grader (e.g. `/testbed`). @default /workspace */
    workdir: WorkdirSchema.default('/workspace'),
    /**
     * The task's environment: base image and set-up steps, built once into a cached image that
     * the sandbox and the grader both run (`image` is then unused). @default none (`image` as is)
     */
    environment: TaskEnvironmentSchema.optional(),
    /** Time limits. @default agentMs 600000, gradeMs 120000 */
    timeouts: IssueTaskTimeoutsSchema.default(() => IssueTaskTimeoutsSchema.parse({})),
    /** Limits. @default maxSteps 50, memoryMb 512, cpus 1 */
    limits: IssueTaskLimitsSchema.default(() => IssueTaskLimitsSchema.parse({})),
  })
  .strict();
/** A validated task.yaml. */
export type IssueTaskFile = z.output<typeof IssueTaskFileSchema>;

/** Agent kinds the `issue-resolution` driver knows. */
export const TaskAgentKind = {
  /** Applies the task's reference `solution.patch` (validates tasks and harness). */
  GOLD: 'gold',
  /** Changes nothing (every task must fail). */
  NONE: 'none',
  /** A model-driven agent (`spec.agent` names the model); a seam until it is wired. */
  MODEL: 'model',
  /** Applies each instance's `model_patch` from `tasks.predictions` (grading without an agent). */
  PREDICTIONS: 'predictions',
} as const;
/** One of {@link TaskAgentKind}. */
export type TaskAgentKind = (typeof TaskAgentKind)[keyof typeof TaskAgentKind];

/** `spec.config` of an `issue-resolution` job. */
export const IssueResolutionConfigSchema = z
  .object({
    /** The agent working every task. */
    agent: z
      .object({
        /**
         * `gold`, `none`, or `model` (with `spec.agent`); other kinds when a runner of that kind
         * is registered with the driver.
         */
        kind: z
          .string({ error: 'must be a string (gold, none or model)' })
          .regex(/^[a-z][a-z0-9-]{0,31}$/, {
            error: 'must be an agent kind such as gold, none or model',
          }),
      })
      .strict(),
    /** Gradings per task; more than one reports disagreement (flaky graders). @default 1 */
    repeat: positiveInt(1, 10).default(1),
    /** Seed exported to graders as `GRADER_SEED`. @default 0 */
    seed: z
      .number({ error: 'must be a number' })
      .int({ error: 'must be an integer' })
      .min(0, { error: 'must be >= 0' })
      .default(0),
    /**
     * Folder (relative to the coordinator's working directory) keeping each finished task's
     * result: a re-run of the job skips tasks with a complete, valid result there.
     * @default none (every run starts from scratch)
     */
    resultsDir: z.string({ error: 'must be a string (a folder)' }).min(1).optional(),
    /** Skip tasks with a stored result in `resultsDir`. @default true */
    resume: z.boolean({ error: 'must be a boolean' }).default(true),
    /**
     * Deadline of creating the agent's sandbox, and the margin of a grading request over the
     * grader's own time limit (a missing image is built first). @default 300000
     */
    createTimeoutMs: positiveInt(1_000, 3_600_000).default(300_000),
  })
  .strict();
/** Validated `spec.config` of an `issue-resolution` job. */
export type IssueResolutionConfig = z.output<typeof IssueResolutionConfigSchema>;

/** `spec.tasks`: a suite folder (every sub-folder holding a task.yaml), optionally filtered. */
export const IssueSuiteRefSchema = z
  .object({
    /** Suite folder: absolute, or relative to the coordinator's working directory. */
    suite: z
      .string({ error: 'must be a string (a suite folder)' })
      .min(1, { error: 'must not be empty' }),
    /** Only these task ids (folder names). @default every task of the suite */
    include: z
      .array(
        z.string({ error: 'must be task ids' }).regex(TASK_ID_PATTERN, { error: TASK_ID_RULE }),
      )
      .min(1, { error: 'must name at least one task' })
      .optional(),
    /**
     * A predictions file (JSONL of `instance_id`, `model_patch`, `model_name_or_path`), graded
     * with `config.agent.kind: predictions`. Relative to the coordinator's working directory.
     */
    predictions: z
      .string({ error: 'must be a string (a JSONL file)' })
      .min(1, { error: 'must not be empty' })
      .optional(),
  })
  .strict();
/** Validated `spec.tasks` of an `issue-resolution` job. */
export type IssueSuiteRef = z.output<typeof IssueSuiteRefSchema>;

/** A task.yaml that failed validation: reported, never run. */
export const InvalidIssueTaskSchema = z.object({
  /** The task's id (its folder name when task.yaml has no valid id). */
  taskId: z.string(),
  /** The field that broke a rule (`task.yaml`, `timeouts.agentMs`, `solution.patch`, …). */
  field: z.string(),
  /** The rule it broke. */
  rule: z.string(),
});
/** A task.yaml that failed validation. */
export type InvalidIssueTask = z.output<typeof InvalidIssueTaskSchema>;

/** A task read from disk, ready to travel in a task's input (files base64). */
export const LoadedIssueTaskSchema = z.object({
  task: IssueTaskFileSchema,
  /** Task folder, absolute, at planning time (reports only). */
  dir: z.string(),
  /** `repo/`: relative path → {base64, mode}. */
  repo: z.record(z.string(), z.object({ base64: z.string(), mode: z.number().int() })),
  /** `grader/`: relative path → {base64, mode}. Never sent to the agent's sandbox. */
  grader: z.record(z.string(), z.object({ base64: z.string(), mode: z.number().int() })),
  /** `solution.patch`, when the task has one (only the gold agent reads it). */
  solutionPatch: z.string().optional(),
  /**
   * SWE-bench grading: the log parser of the test run and the tests that must go from failing to
   * passing and stay passing. Without it, the grader's exit status is the verdict.
   */
  tests: z
    .object({
      logParser: z.string(),
      failToPass: z.array(z.string()),
      passToPass: z.array(z.string()),
    })
    .optional(),
  /** A prediction's patch (`model_patch` of a predictions file), applied by the `predictions` agent. */
  prediction: z.object({ patch: z.string(), model: z.string().optional() }).optional(),
  /** sha256 over task.yaml, repo, grader and patch: a stored result is valid for this digest. */
  digest: z.string(),
});
/** A task read from disk. */
export type LoadedIssueTask = z.output<typeof LoadedIssueTaskSchema>;

/** What a task actor receives: a loaded task, or the reason it is invalid. */
export const IssueTaskInputSchema = z.union([
  z.object({ loaded: LoadedIssueTaskSchema, config: IssueResolutionConfigSchema }).strict(),
  z.object({ invalid: InvalidIssueTaskSchema, config: IssueResolutionConfigSchema }).strict(),
]);
/** Input of one `issue-resolution` task. */
export type IssueTaskInput = z.output<typeof IssueTaskInputSchema>;
