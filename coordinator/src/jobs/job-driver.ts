import { type NatsConnection } from '@nats-io/transport-node';
import { type AnyActorDefinition, type Logger, type RefFactory } from '@troupe/actors';
import { errorCode, type ErrorCode, invalidArgument } from '@troupe/proto';
import { type JobSpec } from './job-spec';

/** What task ids must match (they appear in events, results and artifact paths). */
export const TASK_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** The rule of {@link TASK_ID_PATTERN}, for error messages. */
export const TASK_ID_RULE = 'must match [A-Za-z0-9][A-Za-z0-9._-]{0,127}';

/**
 * Most tasks one job may plan. The job actor's state holds counters, a cursor and the tasks in
 * flight, never a row per task (finished tasks are task records of their own), so the bound is
 * the plan's: it is stored as one object, and a coordinator keeps a job's task ids in memory.
 */
export const MAX_TASKS_PER_JOB = 1_000_000;

/**
 * Most tasks a spec may list inline (`tasks: [...]`), as many as any list of a spec text may hold
 * (`parseUntrustedText`): a list travels in the SubmitJob request and the job's record. Larger
 * task sets are generated (shell-tasks' `{count, command}`) by the driver's plan, up to
 * {@link MAX_TASKS_PER_JOB}.
 */
export const MAX_INLINE_TASKS = 2_000;

/**
 * Refuses a task list longer than {@link MAX_INLINE_TASKS} before its elements are validated:
 * a schema reports every broken element, so a huge list of wrong elements would cost seconds to
 * refuse (and a message of megabytes). Anything that is not a list passes (the schema names it).
 */
export function checkTaskCount(value: unknown, field: string): void {
  if (Array.isArray(value) && value.length > MAX_INLINE_TASKS) {
    throw invalidArgument(
      field,
      `must hold at most ${MAX_INLINE_TASKS} tasks (got ${value.length}): list at most ${MAX_INLINE_TASKS} inline, or generate them (shell-tasks {count, command}) or split the set into several jobs`,
    );
  }
}

/** One task of a job's plan. */
export interface PlannedTask {
  /** Unique within the job, {@link TASK_ID_PATTERN}. */
  id: string;
  /** What the driver needs to run it; JSON-serialisable (it is stored and sent to task actors). */
  input: unknown;
}

/** What {@link JobDriver.plan} gets. */
export interface PlanContext {
  jobId: string;
  /** Aborted when the planning must stop (shutdown, cancellation). */
  signal: AbortSignal;
  log: Logger;
  /**
   * The planning host's NATS connection and cluster name (do not close it), for a plan that stores
   * task data too large for a message in the cluster's object store: under `payloadPrefix`, with
   * only a reference in each task's input.
   */
  nats?: { connection: NatsConnection; cluster: string; replicas?: number };
  /**
   * Object-name prefix for what the plan stores for its tasks (`jobs/<jobId>/payload/`): deleted
   * when the job finishes, for a driver that sets {@link JobDriver.storesPayloads}.
   */
  payloadPrefix: string;
}

/** A task of a task file as a driver's checker returns it (anything with the task's id). */
export interface TaskFileTask {
  id: string;
}

/**
 * What a driver that lists its tasks implements to also take them from a task file (`tasks:
 * {file, upload}`: JSONL, one task a line, uploaded by the client; see `task-file.ts`). The job
 * layer reads the file, checks every line with {@link checker} (ids unique across lines, errors
 * naming `spec.tasks.file:<line>`) at submission and again at planning, and plans with
 * {@link plan}. The driver's `validate` still runs on the spec as submitted (`tasks` holding the
 * reference), for its config and agent.
 */
export interface TaskFileSupport {
  /**
   * The check of one task under `spec` (read its config once, here): takes a line's JSON value
   * and the field to name (`spec.tasks.file:12`), throws `INVALID_ARGUMENT` naming it and the
   * rule, and returns the task as {@link plan} wants it.
   */
  checker(spec: JobSpec): (value: unknown, field: string) => TaskFileTask;
  /** The plan of the file's tasks, as checked, in file order. */
  plan(
    spec: JobSpec,
    tasks: readonly TaskFileTask[],
    ctx: PlanContext,
  ): Promise<PlannedTask[]> | PlannedTask[];
}

/** Stores files produced by a task where `GetArtifact` / `troupe artifact` can fetch them. */
export interface TaskArtifacts {
  /**
   * Stores `data` as `<name>` under the task's artifact prefix and returns its path (listed in the
   * task's result).
   */
  put(
    name: string,
    data: Uint8Array | string,
    options?: { contentType?: string; signal?: AbortSignal },
  ): Promise<string>;
  /** The path `<name>` gets under this task's prefix (for artifacts other actors write). */
  pathOf(name: string): string;
  /**
   * Lists `<name>` — written under this task's prefix by another actor (a sandbox's
   * `exportFiles`) — in the task's result, like an artifact from {@link put}; returns its path.
   */
  adopt(name: string): string;
}

/** A progress report from inside a task (becomes a TASK_PROGRESS or LOG event). */
export interface TaskProgress {
  /** A line worth showing to the user: makes it a LOG event. */
  message?: string;
  step?: number;
  tokens?: number;
  costUsd?: number;
  /**
   * Driver-specific keys merged into the TASK_PROGRESS payload (ignored with `message`): a small
   * JSON object, at most 8 KiB serialised. Send one per milestone (a closed generation, say), not
   * per step, to keep the job's event log bounded.
   */
  data?: Record<string, unknown>;
}

/** What the driver's per-task methods get. */
export interface TaskContext {
  jobId: string;
  /** The task's id from the plan. */
  taskId: string;
  /** Position of the task in the plan. */
  index: number;
  /** Attempt number, from 1 (infrastructure retries increase it). */
  attempt: number;
  /** The job's validated spec. */
  spec: JobSpec;
  /**
   * Aborted when the work must stop: the task's timeout (reason `TIMEOUT`), the job's
   * cancellation (`CANCELLED`, reason `user`), or the host shutting down. Pass it to everything.
   */
  signal: AbortSignal;
  /** When the attempt's time is up (Unix ms). */
  deadlineUnixMs: number;
  /** Refs to actors anywhere in the cluster (sandboxes, evaluators, agents). */
  refs: RefFactory;
  log: Logger;
  /** Host running the task. */
  hostId: string;
  /** Times this attempt has started executing: 1, or more after a crash interrupted it. */
  execution: number;
  /**
   * A string unique to this job, task, attempt and execution, usable in actor ids
   * (`[A-Za-z0-9_-]`, at most 100 characters): name the sandboxes of the attempt after it, so
   * {@link JobDriver.cleanup} can remove them without bookkeeping.
   */
  resourceId: string;
  /**
   * The `resourceId`s of earlier, interrupted executions of this attempt (a crash replay): what
   * they created may still exist and should be removed.
   */
  staleResourceIds: string[];
  /**
   * The `resourceId`s of every earlier execution of this task, of this attempt and the ones
   * before it, oldest first (at most the last 16; empty on a first execution). Work that an
   * earlier execution finished before a fault ended it can be found there instead of being done
   * again (the `shell-tasks` driver reads its finished command from those sandboxes).
   */
  earlierResourceIds: string[];
  /**
   * True once this execution was interrupted rather than ended: its task actor's activation was
   * fenced (its host declared dead, the actor moved) or its host's shutdown grace ran out. The
   * attempt is then executed again, by the next activation, with this execution's `resourceId`
   * among its `earlierResourceIds`: leave what runs (a command in a sandbox) for it to find,
   * instead of killing it on `signal` or removing it in {@link JobDriver.cleanup}. Killed, a
   * command the replay was already waiting for ended 137 and was graded (chaos seed 46014).
   */
  interrupted(): boolean;
  /** Budget ledger scope for model calls (`job:<jobId>`), when the job has a budget. */
  budgetScope?: string;
  /**
   * The host's NATS connection and cluster name, for drivers that keep durable state of their
   * own in JetStream (the `evolve` driver's search journal), and the replicas the cluster's
   * streams are created with. Do not close the connection.
   */
  nats?: { connection: NatsConnection; cluster: string; replicas?: number };
  artifacts: TaskArtifacts;
  /** Sends a progress report (best effort). */
  progress(p: TaskProgress): void;
}

/**
 * What the actors a driver contributes ({@link JobDriver.actors}) get from the process hosting
 * them, once it is connected: the same late-bound runtime as the job and task actors.
 */
export interface DriverActorRuntime {
  /** Cluster name. */
  cluster: string;
  /** Host id of this process. */
  hostId: string;
  /** The process's NATS connection (do not close it). */
  nc: NatsConnection;
  /** Replicas to create streams with (the cluster's `replicas` setting). */
  replicas: number;
  /** Refs to actors anywhere in the cluster. */
  refs: RefFactory;
  /** The job layer's logger. */
  log: Logger;
}

/** A grader's verdict on one task attempt. */
export interface TaskGrade {
  /** Whether the task passed. */
  passed: boolean;
  /** Score, usually in [0, 1]. @default 1 when passed, 0 otherwise */
  score?: number;
  /** Why the work stopped ("finished", "max_steps", "exit", ...). */
  stopReason?: string;
  /** Model spend of the attempt. @default 0 */
  costUsd?: number;
  /** Prompt tokens of the attempt. @default 0 */
  promptTokens?: number;
  /** Completion tokens of the attempt. @default 0 */
  completionTokens?: number;
  /** Grader and benchmark details (JSON object), shown in results. */
  details?: Record<string, unknown>;
}

/** A task's final result as {@link JobDriver.collect} sees it. */
export interface CollectedTask {
  taskId: string;
  status: string;
  score?: number;
  details?: Record<string, unknown>;
}

/**
 * A job kind. Drivers are registered with the coordinator (they live in `@troupe/benchmarks`,
 * which the coordinator never imports) and run as: `plan` once per job, then per task `runTask`
 * → `grade` → `cleanup`, each task in its own task actor; `collect` adds benchmark-specific
 * aggregate metrics at the end.
 *
 * Failures: anything `runTask` or `grade` throws is an infrastructure failure and is retried
 * with backoff (up to `spec.retries.max`), except `INVALID_ARGUMENT`, `PERMISSION_DENIED`,
 * `UNAUTHENTICATED`, `NOT_FOUND` and `BUDGET_EXHAUSTED`, which end the task as errored at once. A
 * grade with `passed: false` is a result and is never retried.
 *
 * Timeouts: when the task's time is up `ctx.signal` aborts with a `TIMEOUT`; `runTask` should
 * return what exists (or throw), and `grade` is then called with a fresh signal and the partial
 * run (or `undefined`). The task ends TIMED_OUT with that grade.
 */
export interface JobDriver<TInput = unknown, TRun = unknown> {
  /** The job kind users write in `kind:`. */
  readonly name: string;
  /** One line for `INVALID_ARGUMENT` listings and docs. */
  readonly description: string;
  /**
   * Checks the driver-specific parts of a spec (`tasks`, `config`, `agent`); throws (or rejects
   * with) an `INVALID_ARGUMENT` naming the field (`spec.tasks[3].command: must be a non-empty
   * string`). It runs on the coordinator's event loop for every submission: a driver that reads
   * files (a suite folder) returns a promise and reads them asynchronously, parsing documents
   * with `parseUntrustedTextAsync`.
   */
  validate(spec: JobSpec): void | Promise<void>;
  /** Expands the spec into tasks (ids unique). */
  plan(spec: JobSpec, ctx: PlanContext): Promise<PlannedTask[]> | PlannedTask[];
  /**
   * Whether the plan (or a task) stores objects under {@link PlanContext.payloadPrefix}: the job
   * actor then deletes them when the job finishes, which lists the whole object store. Unset, a
   * finishing job lists nothing (listing every object per job made each job's end cost as much as
   * every artifact the cluster held: the soak's NATS memory grew with it).
   */
  readonly storesPayloads?: boolean;
  /** Task files (`tasks: {file, upload}`): absent when the driver takes none. */
  readonly taskFile?: TaskFileSupport;
  /** Does the work of one attempt and returns what the grader needs (JSON-serialisable). */
  runTask(ctx: TaskContext, input: TInput): Promise<TRun>;
  /** Grades an attempt; `run` is undefined when `runTask` threw on its timeout. */
  grade(ctx: TaskContext, input: TInput, run: TRun | undefined): Promise<TaskGrade>;
  /**
   * Releases what the attempt created (sandboxes); runs after every execution, even failed or
   * interrupted ones (see {@link TaskContext.interrupted}: what the replay will adopt may stay).
   */
  cleanup?(ctx: TaskContext, input: TInput): Promise<void>;
  /**
   * Benchmark-specific aggregate metrics over the final results (a promise when it reads files).
   */
  collect?(
    spec: JobSpec,
    tasks: readonly CollectedTask[],
  ): Record<string, unknown> | Promise<Record<string, unknown>>;
  /**
   * Actor kinds the driver's tasks use (the `evolve` driver's island actors), hosted by every
   * process that hosts the job and task actors (each coordinator: `troupe dev`, `troupe
   * coordinator`, compose, k8s), so they need no process of their own and, with several
   * coordinators, are placed on any of them. Called once, when the job manager is built; the
   * runtime is bound later: `runtime()` throws `UNAVAILABLE` until the process is connected, so
   * call it in handlers, not here. A kind that another driver or the job layer already defines
   * is refused (`ALREADY_EXISTS`).
   */
  actors?(runtime: () => DriverActorRuntime): readonly AnyActorDefinition[];
}

/** A driver with its type parameters erased, as the registry holds it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyJobDriver = JobDriver<any, any>;

const NOT_INFRASTRUCTURE: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'INVALID_ARGUMENT',
  'PERMISSION_DENIED',
  'UNAUTHENTICATED',
  'NOT_FOUND',
  'BUDGET_EXHAUSTED',
  'CANCELLED',
]);

/**
 * Whether a failure of `runTask`/`grade` is an infrastructure failure, which is retried. Bad input,
 * missing permissions, exhausted budgets and cancellations are not: retrying cannot help.
 */
export function isInfrastructureFailure(err: unknown): boolean {
  return !NOT_INFRASTRUCTURE.has(errorCode(err));
}
