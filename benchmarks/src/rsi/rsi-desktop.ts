import { type TaskContext } from '@troupe/coordinator';
import type { BudgetHook, LlmClient } from '@troupe/llm';
import { ErrorCode, TroupeError } from '@troupe/proto';
import {
  DESKTOP_PLACE,
  desktopPhase1Curriculum,
  DesktopRsiRoles,
  type DesktopRsiTask,
  type DesktopSetup,
  rsiBank,
  type ShellRoleModels,
} from '@troupe/rsi';
import { type DesktopBudgetContext } from '../desktop-tasks/desktop-agents';
import { judgeMachine } from '../desktop-tasks/desktop-evaluator';
import { runSetupSteps } from '../desktop-tasks/desktop-setup';
import { type DesktopTask } from '../desktop-tasks/desktop-task-spec';
import { type RsiDesktopSuite } from './rsi-desktop-suite';
import { phase3Execution, type RsiStudyEnvironment, taskById } from './rsi-study';

/** The cluster's models as the desktop roles call them (they run in the driver's process). */
export interface RsiDesktopModels {
  /** The cluster's LLM client (registry, retries, call records). */
  client: Pick<LlmClient, 'chat'>;
  /** Budget hook of a study's calls (the job's ledger scope). @default the client's */
  budgetFor?: (ctx: DesktopBudgetContext) => BudgetHook | undefined;
}

/** Options of {@link desktopStudy}. */
export interface DesktopStudyOptions {
  ctx: TaskContext;
  models: ShellRoleModels;
  suite: RsiDesktopSuite;
  llm: RsiDesktopModels;
}

/**
 * Desktop tasks (`environment: desktop`): the roles are {@link DesktopRsiRoles} on the node
 * agent's environment actors; a target machine is prepared by the desktop task's setup steps, a
 * practice machine gets its fixtures and the task's `launch` steps (the applications the target
 * starts with). Phase 3 runs the Actor on a fresh target machine and scores it with the desktop
 * task's evaluator (getter + metric over machine state, as the `desktop-tasks` driver does); an
 * Actor that ends with EVOLVE counts as the FAIL action (a feasible task given up on scores 0).
 * Phase 1 practises its waves on desktops too: the roles of a wave (`phase1-wave-<n>`, the
 * suite's `phase1Brief`, no target setup; a practice machine gets the project's fixtures and the
 * launch steps every development task shares; `run_command` only if every development task allows it)
 * and the Phase-1 Curriculum as a desktop role session against the cluster's LLM client (the
 * roles' mechanism: a desktop cluster needs no models on its agent hosts).
 */
export function desktopStudy(o: DesktopStudyOptions): RsiStudyEnvironment {
  const { ctx, suite } = o;
  const all = [...suite.dev, ...suite.heldOut];
  const budget = o.llm.budgetFor?.({
    jobId: ctx.jobId,
    taskId: ctx.taskId,
    refs: ctx.refs,
    ...(ctx.budgetScope ? { budgetScope: ctx.budgetScope } : {}),
  });
  const rolesOf = (
    task: DesktopRsiTask,
    execution: string,
    setup: DesktopSetup,
    practiceSetup?: DesktopSetup,
  ) =>
    new DesktopRsiRoles({
      system: ctx.refs,
      llm: o.llm.client,
      ...(budget ? { budget } : {}),
      jobId: ctx.jobId,
      task,
      execution,
      models: o.models,
      environment: {
        kind: suite.desktop.kind,
        image: suite.desktop.image,
        width: suite.desktop.width,
        height: suite.desktop.height,
        memoryMb: suite.desktop.memoryMb,
      },
      setup,
      ...(practiceSetup ? { practiceSetup } : {}),
      logger: ctx.log,
    });
  const roles = (task: DesktopTask, execution: string) =>
    rolesOf(
      {
        id: task.id,
        instruction: task.instruction,
        allowCommands: task.allowCommands,
        limits: suite.limits,
      },
      execution,
      (m, signal) => runSetupSteps(m.ref, task.setup, signal),
      (m, signal) =>
        runSetupSteps(
          m.ref,
          task.setup.filter((s) => 'launch' in s),
          signal,
        ),
    );
  // Phase 1's practice roles may run commands only if every development task lets its Actor:
  // lessons learned with a tool the targets withhold would not carry over.
  const phase1Commands = suite.dev.every((t) => t.allowCommands);
  // ... and start the applications every development task starts with (the launch steps they all
  // share), so practice happens on the desktop the targets present.
  const launches = suite.dev.map((t) => t.setup.filter((s) => 'launch' in s));
  const phase1Launch = (launches[0] ?? []).filter((step) =>
    launches.every((l) => l.some((s) => JSON.stringify(s) === JSON.stringify(step))),
  );
  const noTarget: DesktopSetup = () =>
    Promise.reject(new TroupeError(ErrorCode.INTERNAL, 'a Phase-1 wave has no target machine'));
  return {
    dev: suite.dev,
    heldOut: suite.heldOut,
    rolesFor: (taskId, execution) => roles(taskById(all, taskId), execution),
    phase1: (execution) => ({
      // A wave's pseudo target: the brief as its instruction, no target setup; a practice machine
      // gets the project's fixtures (installed by the roles), then the shared launch steps.
      roles: (wave) =>
        rolesOf(
          {
            id: wave.id,
            instruction: wave.instruction,
            allowCommands: phase1Commands,
            limits: suite.limits,
          },
          execution,
          noTarget,
          (m, signal) => runSetupSteps(m.ref, phase1Launch, signal),
        ),
      curriculumTurn: desktopPhase1Curriculum({
        llm: o.llm.client,
        model: o.models.curriculum,
        ...(budget ? { budget } : {}),
        jobId: ctx.jobId,
        limits: suite.limits,
      }),
      workDir: DESKTOP_PLACE.workDir,
    }),
    async evaluate(taskId, bank, sig, attempt) {
      const task = taskById(suite.heldOut, taskId);
      const r = roles(task, phase3Execution(ctx.resourceId, attempt));
      const work = { kind: 'target' as const, targetId: task.id, attempt: 1, final: true };
      const handle = rsiBank(bank);
      const env = await r.openTarget(work, handle, sig);
      try {
        const run = await r.act(env, work, handle, sig);
        const lastAction =
          run.ending === 'done' ? 'DONE' : run.ending === 'evolve' ? 'FAIL' : undefined;
        const judged = await judgeMachine(
          env.machine.ref,
          task.evaluator,
          lastAction,
          sig ?? ctx.signal,
        );
        return {
          status: 'scored',
          score: judged.score,
          detail: `actor ${run.ending}; evaluator read ${JSON.stringify(judged.value.slice(0, 200))}`,
        };
      } finally {
        await r.release(env);
      }
    },
  };
}
