import { type TaskContext } from '@troupe/coordinator';
import type { BudgetHook, LlmClient } from '@troupe/llm';
import { DesktopRsiRoles, rsiBank, type ShellRoleModels } from '@troupe/rsi';
import { type DesktopBudgetContext } from '../desktop-tasks/desktop-agents';
import { judgeMachine } from '../desktop-tasks/desktop-evaluator';
import { runSetupSteps } from '../desktop-tasks/desktop-setup';
import { type DesktopTask } from '../desktop-tasks/desktop-task-spec';
import { type RsiDesktopSuite } from './rsi-desktop-suite';
import { type RsiStudyEnvironment, taskById } from './rsi-study';

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
  const roles = (task: DesktopTask, execution: string) =>
    new DesktopRsiRoles({
      system: ctx.refs,
      llm: o.llm.client,
      ...(budget ? { budget } : {}),
      jobId: ctx.jobId,
      task: {
        id: task.id,
        instruction: task.instruction,
        allowCommands: task.allowCommands,
        limits: suite.limits,
      },
      execution,
      models: o.models,
      environment: {
        kind: suite.desktop.kind,
        image: suite.desktop.image,
        width: suite.desktop.width,
        height: suite.desktop.height,
        memoryMb: suite.desktop.memoryMb,
      },
      setup: (m, signal) => runSetupSteps(m.ref, task.setup, signal),
      practiceSetup: (m, signal) =>
        runSetupSteps(
          m.ref,
          task.setup.filter((s) => 'launch' in s),
          signal,
        ),
      logger: ctx.log,
    });
  return {
    dev: suite.dev,
    heldOut: suite.heldOut,
    rolesFor: (taskId, execution) => roles(taskById(all, taskId), execution),
    async evaluate(taskId, bank, sig) {
      const task = taskById(suite.heldOut, taskId);
      const r = roles(task, `${ctx.resourceId}-p3`);
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
