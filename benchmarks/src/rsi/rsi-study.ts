import { type TaskContext } from '@troupe/coordinator';
import { type TrajectoryStore } from '@troupe/agents';
import {
  type MemoryBank,
  type Phase1CurriculumTurn,
  type Phase1RolesFactory,
  type Phase3Evaluation,
  type RsiBank,
  rsiBank,
  type RsiRoles,
  type ShellPublication,
  type ShellRoleModels,
  ShellRsiRoles,
  type ShellTask,
} from '@troupe/rsi';

/**
 * What a study needs of its environment kind (chosen by the suite's `environment`): the task ids
 * of each phase, the roles of one target, and the Phase-3 scoring of one held-out task on the
 * frozen bank (the task's Actor, then the task's official evaluator, which no role ever sees).
 */
export interface RsiStudyEnvironment {
  /** Development tasks (Phase 2, in order). */
  dev: readonly { id: string }[];
  /** Held-out tasks (Phase 3). */
  heldOut: readonly { id: string }[];
  /** The roles of target `taskId` in one execution of the study's task. */
  rolesFor(taskId: string, execution: string): RsiRoles<unknown, RsiBank, ShellPublication>;
  /**
   * Scores held-out task `taskId` on `bank`; infrastructure failures throw (Phase 3 retries a
   * retryable one, then leaves the task unscored). `attempt` (1-based) picks fresh role ids.
   */
  evaluate(
    taskId: string,
    bank: MemoryBank,
    signal: AbortSignal | undefined,
    attempt: number,
  ): Promise<Phase3Evaluation>;
  /**
   * Phase 1's practice on this environment kind, in one execution of the study's task: the roles
   * of a wave and the Curriculum's turns. @default shell sandboxes and agent sessions
   */
  phase1?(execution: string): RsiPhase1Binding;
}

/** How Phase 1 practises on an environment kind (see `Phase1PracticeOptions`). */
export interface RsiPhase1Binding {
  roles: Phase1RolesFactory;
  curriculumTurn: Phase1CurriculumTurn;
  /** The directory project roots are relative to, as the Curriculum is told. */
  workDir: string;
}

/** Looks a task up by id (the ids come from the same suite, so a miss is a bug). */
export function taskById<T extends { id: string }>(tasks: readonly T[], id: string): T {
  const task = tasks.find((t) => t.id === id);
  if (task === undefined) throw new Error(`unknown task ${id}`);
  return task;
}

/** Options of {@link shellStudy}. */
export interface ShellStudyOptions {
  ctx: TaskContext;
  models: ShellRoleModels;
  dev: readonly ShellTask[];
  heldOut: readonly ShellTask[];
  trajectories: TrajectoryStore;
}

/**
 * The execution id of Phase-3 evaluation `attempt` in one execution of the study's task: a retry
 * after an infrastructure failure gets fresh sessions and machines, not the lost ones.
 */
export function phase3Execution(resourceId: string, attempt: number): string {
  return attempt <= 1 ? `${resourceId}-p3` : `${resourceId}-p3-a${attempt}`;
}

/**
 * Shell tasks: the roles are agent sessions on sandboxes (`ShellRsiRoles`); Phase 3 runs the
 * task's `evaluator` command in the Actor's sandbox (exit 0 scores 1).
 */
export function shellStudy(o: ShellStudyOptions): RsiStudyEnvironment {
  const { ctx } = o;
  const all = [...o.dev, ...o.heldOut];
  const roles = (task: ShellTask, execution: string) =>
    new ShellRsiRoles({
      system: ctx.refs,
      trajectories: o.trajectories,
      jobId: ctx.jobId,
      task,
      execution,
      models: o.models,
      ...(ctx.budgetScope ? { budgetScope: ctx.budgetScope } : {}),
      logger: ctx.log,
    });
  return {
    dev: o.dev,
    heldOut: o.heldOut,
    rolesFor: (taskId, execution) => roles(taskById(all, taskId), execution),
    async evaluate(taskId, bank, sig, attempt) {
      const task = taskById(o.heldOut, taskId);
      const r = roles(task, phase3Execution(ctx.resourceId, attempt));
      const work = { kind: 'target' as const, targetId: task.id, attempt: 1, final: true };
      const handle = rsiBank(bank);
      const env = await r.openTarget(work, handle, sig);
      try {
        const run = await r.act(env, work, handle, sig);
        const graded = await env.machine.exec(`cd /workspace && ${task.evaluator}`, {
          ...(sig ? { signal: sig } : {}),
        });
        return {
          status: 'scored',
          score: graded.exitCode === 0 ? 1 : 0,
          detail: `actor ${run.ending}; evaluator exit ${graded.exitCode}`,
        };
      } finally {
        await r.release(env);
      }
    },
  };
}
