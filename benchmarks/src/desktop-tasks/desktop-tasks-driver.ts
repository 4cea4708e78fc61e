import { type UntypedActorRef } from '@troupe/actors';
import { type JobDriver, type JobSpec, type TaskContext } from '@troupe/coordinator';
import { errorCode, invalidArgument, parseWith, type TroupeError } from '@troupe/proto';
import {
  type DesktopAgent,
  type DesktopAgentResult,
  type DesktopModelAccess,
  goldAgent,
  type LoggedStep,
  modelAgent,
  noneAgent,
} from './desktop-agents';
import { judgeMachine } from './desktop-evaluator';
import { runSetupSteps } from './desktop-setup';
import {
  type DesktopTaskInput,
  DesktopTaskInputSchema,
  DesktopSuiteRefSchema,
  DesktopTasksConfigSchema,
  loadDesktopSuite,
  type ScriptStep,
} from './desktop-task-spec';

/** Kind of the node agent's environment actors. */
const ENVIRONMENT_KIND = 'environment';
/** The label of hosts offering `vm` environments (the node agent's `VM_LABEL`). */
const VM_HOST_LABEL = 'environment.vm';

/** Options of {@link createDesktopTasksDriver}. */
export interface DesktopTasksDriverOptions {
  /** Base of a relative `tasks.suite`. @default process.cwd() */
  baseDir?: string;
  /** The cluster's models, for `model` agents. @default none: model agents are refused */
  models?: DesktopModelAccess;
  /** Deadline of creating an environment (building a missing image included). @default 900000 */
  createTimeoutMs?: number;
}

function noModels(): TroupeError {
  return invalidArgument(
    'spec.config.agent.kind',
    'model agents need models on this cluster (start it with --models <file>)',
  );
}

/** What a desktop task's run produced: the evaluator's verdict and the agent's account. */
export interface DesktopRun {
  score: number;
  value: string;
  stopReason: DesktopAgentResult['stopReason'];
  lastAction?: string;
  steps: number;
  invalidActions: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  links: Record<string, string>;
}

/** The environment id of an attempt's execution. */
export function desktopEnvironmentId(resourceId: string): string {
  return `dt-${resourceId}`;
}

/**
 * The `desktop-tasks` driver: each task gets a fresh desktop environment (the node agent's
 * `environment` actor), runs its setup steps, lets the agent (`gold`: the task's reference
 * script; `none`: nothing; `model`: a computer-use model loop) act, and then scores the machine's
 * state with the task's evaluator — never the agent's own DONE. Artifacts: a screenshot after
 * every step (`steps/NNN.png`, thumbnails in the HTML report) and the action log
 * (`actions.jsonl`).
 */
export function createDesktopTasksDriver(
  options: DesktopTasksDriverOptions = {},
): JobDriver<DesktopTaskInput, DesktopRun> {
  const baseDir = options.baseDir ?? process.cwd();
  const createTimeoutMs = options.createTimeoutMs ?? 900_000;

  const tasksOf = (spec: JobSpec) => {
    const ref = parseWith(DesktopSuiteRefSchema, spec.tasks, { prefix: 'spec.tasks' });
    return loadDesktopSuite(ref.suite, baseDir, 'spec.tasks');
  };
  const environment = (
    ctx: TaskContext,
    resourceId: string,
    kind: 'desktop' | 'vm' = 'desktop',
  ): UntypedActorRef =>
    ctx.refs.refOf({ kind: ENVIRONMENT_KIND, id: desktopEnvironmentId(resourceId) }).withHints({
      jobId: ctx.jobId,
      // VMs only on hosts that offer them (the node agent labels itself `environment.vm`).
      ...(kind === 'vm' ? { labels: { [VM_HOST_LABEL]: 'true' } } : {}),
    });
  const agentOf = (input: DesktopTaskInput, ctx: TaskContext): DesktopAgent => {
    switch (input.config.agent.kind) {
      case 'gold':
        return goldAgent;
      case 'none':
        return noneAgent;
      case 'model': {
        const access = options.models;
        if (!access) throw noModels();
        const budget = access.budgetFor?.({
          jobId: ctx.jobId,
          taskId: ctx.taskId,
          refs: ctx.refs,
          ...(ctx.budgetScope ? { budgetScope: ctx.budgetScope } : {}),
        });
        return modelAgent(access, {
          ...(budget ? { budget } : {}),
          metadata: { job: ctx.jobId, task: ctx.taskId },
        });
      }
    }
  };

  return {
    name: 'desktop-tasks',
    description: 'computer-use tasks on desktop environments, scored from machine state',

    async validate(spec) {
      const config = parseWith(DesktopTasksConfigSchema, spec.config, { prefix: 'spec.config' });
      if (config.agent.kind === 'model') {
        if (!options.models) throw noModels();
        if (!options.models.models.has(config.agent.model)) {
          throw invalidArgument(
            'spec.config.agent.model',
            `must be one of the cluster's models (${options.models.models.names().join(', ')})`,
            config.agent.model,
          );
        }
      }
      await tasksOf(spec);
    },

    async plan(spec) {
      const config = parseWith(DesktopTasksConfigSchema, spec.config, { prefix: 'spec.config' });
      return (await tasksOf(spec)).map((task) => ({ id: task.id, input: { task, config } }));
    },

    async runTask(ctx, raw) {
      const input = parseWith(DesktopTaskInputSchema, raw, { prefix: 'input' });
      const { task, config } = input;
      for (const stale of ctx.staleResourceIds) {
        await environment(ctx, stale, config.kind)
          .ask('destroy', {}, { timeoutMs: 60_000 })
          .catch(() => undefined);
      }
      const env = environment(ctx, ctx.resourceId, config.kind);
      const signal = ctx.signal;
      const call = (msg: string, payload: unknown, timeoutMs = 60_000): Promise<unknown> =>
        env.ask(msg, payload, { timeoutMs, signal });
      await env.ask(
        'create',
        {
          spec: {
            kind: config.kind,
            image: config.image,
            width: config.width,
            height: config.height,
            memoryMb: config.memoryMb,
          },
          jobId: ctx.jobId,
        },
        { timeoutMs: createTimeoutMs, signal },
      );
      await runSetupSteps(env, task.setup, signal);

      const log: LoggedStep[] = [];
      let invalid = 0;
      let lastAction: string | undefined;
      const shoot = async (n: number): Promise<string | undefined> => {
        if (!config.screenshots) return undefined;
        const s = (await call('screenshot', {})) as { pngBase64: string };
        return ctx.artifacts.put(
          `steps/${String(n).padStart(3, '0')}.png`,
          Buffer.from(s.pngBase64, 'base64'),
          {
            contentType: 'image/png',
            signal,
          },
        );
      };
      const step = async (action: ScriptStep): Promise<string> => {
        let outcome = 'ok';
        try {
          if ('run_command' in action) {
            if (!task.allowCommands)
              throw invalidArgument('run_command', 'this task allows no commands');
            const r = (await call(
              'runCommand',
              { cmd: action.run_command, timeoutMs: 60_000 },
              90_000,
            )) as {
              exitCode: number;
              stdout: string;
              stderr: string;
            };
            outcome = `exit ${r.exitCode}\n${r.stdout.slice(-4_000)}${r.stderr.slice(-2_000)}`;
          } else {
            await call('act', { action }, 90_000);
            lastAction = String(action.action_type);
          }
        } catch (err) {
          if (errorCode(err) !== 'INVALID_ARGUMENT') throw err;
          invalid++;
          outcome = `refused: ${(err as Error).message}`;
        }
        const screenshot = await shoot(log.length + 1);
        log.push({
          step: log.length + 1,
          action: { ...action },
          outcome,
          ...(screenshot ? { screenshot } : {}),
        });
        return outcome;
      };
      const first = await shoot(0);
      const result = await agentOf(input, ctx).run({
        task,
        config,
        env,
        step,
        screenshotUrl: async () =>
          `data:image/png;base64,${((await call('screenshot', {})) as { pngBase64: string }).pngBase64}`,
        signal,
      });

      // The evaluator judges the machine, never the agent's own DONE.
      const { score: s, value } = await judgeMachine(env, task.evaluator, lastAction, signal);

      const actionLog = await ctx.artifacts.put(
        'actions.jsonl',
        log.map((l) => JSON.stringify(l)).join('\n') + '\n',
        { contentType: 'application/x-ndjson', signal },
      );
      const links: Record<string, string> = { actions: actionLog };
      if (first) links['start'] = first;
      const lastShot = [...log].reverse().find((l) => l.screenshot)?.screenshot;
      if (lastShot) links['end'] = lastShot;
      return {
        score: s,
        value: value.slice(0, 2_000),
        stopReason: result.stopReason,
        ...(lastAction ? { lastAction } : {}),
        steps: log.length,
        invalidActions: invalid,
        promptTokens: result.promptTokens,
        completionTokens: result.completionTokens,
        costUsd: result.costUsd ?? 0,
        links,
      };
    },

    async grade(_ctx, _raw, run) {
      if (!run) return { passed: false, score: 0, stopReason: 'timeout' };
      return {
        passed: run.score >= 1,
        score: run.score,
        stopReason: run.stopReason,
        promptTokens: run.promptTokens,
        completionTokens: run.completionTokens,
        costUsd: run.costUsd,
        details: {
          value: run.value,
          steps: run.steps,
          invalidActions: run.invalidActions,
          ...(run.lastAction ? { lastAction: run.lastAction } : {}),
          links: run.links,
        },
      };
    },

    async cleanup(ctx) {
      await environment(ctx, ctx.resourceId).ask(
        'destroy',
        {},
        { timeoutMs: 60_000, signal: ctx.signal },
      );
    },

    collect(_spec, tasks) {
      const steps = tasks
        .map((t) => t.details?.['steps'])
        .filter((n): n is number => typeof n === 'number');
      return { meanSteps: steps.length ? steps.reduce((a, b) => a + b, 0) / steps.length : 0 };
    },
  };
}
