import { access } from 'node:fs/promises';
import path from 'node:path';
import { type UntypedActorRef } from '@troupe/actors';
import { type JobDriver, type JobSpec, type TaskContext } from '@troupe/coordinator';
import { invalidArgument, parseWith, TroupeError } from '@troupe/proto';
import { extractSkillFunctions, openSkillLibrary } from './default-library';
import { runScenarioArm } from './scenario-runner';
import { ScenarioJournal, type SequenceArm } from './scenario-journal';
import {
  goldSequenceAgent,
  modelSequenceAgent,
  noneSequenceAgent,
  type SequenceAgent,
  type SequenceModelAccess,
} from './sequence-agents';
import type { ExtractSequenceFunctions, OpenSequenceLibrary } from './sequence-library';
import type { SequenceArmRun } from './sequence-task-run';
import { renderSkillSequenceReport } from './skill-sequence-report';
import {
  loadSequenceSuite,
  resolveSequenceImage,
  type ScenarioInput,
  ScenarioInputSchema,
  selectScenarios,
  SequenceSuiteRefSchema,
  SkillSequenceConfigSchema,
} from './skill-sequence-spec';
import { readTree } from './world-sandbox';

/** Kind of the node agent's sandbox actors. */
const SANDBOX_KIND = 'sandbox';

/** Options of {@link createSkillSequenceDriver}. */
export interface SkillSequenceDriverOptions {
  /** Base of a relative `tasks.suite`. @default process.cwd() */
  baseDir?: string;
  /** The cluster's models, for `model` agents. @default none: model agents are refused */
  models?: SequenceModelAccess;
  /** Opens a job's skill library. @default `SkillLibrary.open` of `@troupe/agents` */
  openLibrary?: OpenSequenceLibrary;
  /** Top-level functions of executed code. @default `extractFunctions` of `@troupe/agents` */
  extractFunctions?: ExtractSequenceFunctions;
  /** Deadline of creating a sandbox (building a missing image included). @default 300000 */
  createTimeoutMs?: number;
}

/** What a scenario's coordinator task produced: its run with the library, without, or both. */
export interface SkillSequenceRun {
  scenario: string;
  arms: SequenceArmRun[];
  links: Record<string, string>;
}

/** The sandbox id of task `index` of `arm` in an attempt's execution. */
export function sequenceSandboxId(resourceId: string, arm: SequenceArm, index: number): string {
  return `ss-${resourceId}-${arm === 'library' ? 'l' : 'b'}${index}`;
}

/** The library a job uses when `config.library.id` is not set. */
export function defaultLibraryId(jobId: string): string {
  return `job-${jobId.toLowerCase().replace(/[^a-z0-9_-]/g, '-')}`.slice(0, 64);
}

function noModels(): TroupeError {
  return invalidArgument(
    'spec.config.agent.kind',
    'model agents need models on this cluster (start it with --models <file>)',
  );
}

/** The arms a scenario runs, in order: the baseline first, so it cannot see this run's skills. */
function armsOf(input: ScenarioInput): SequenceArm[] {
  if (input.config.ablation) return ['baseline', 'library'];
  return [input.config.library.enabled ? 'library' : 'baseline'];
}

/** The run that decides a scenario's verdict: with the library when there is one. */
function primary(run: SkillSequenceRun): SequenceArmRun | undefined {
  return run.arms.find((a) => a.arm === 'library') ?? run.arms[0];
}

function armSummary(a: SequenceArmRun): Record<string, unknown> {
  return {
    goalCompleted: a.goalCompleted,
    passed: a.passed,
    tasks: a.tasks.length,
    passRate: a.tasks.length > 0 ? a.passed / a.tasks.length : 0,
    steps: a.steps,
    promptTokens: a.promptTokens,
    completionTokens: a.completionTokens,
    tokens: a.promptTokens + a.completionTokens,
    costUsd: a.costUsd,
    resumedTasks: a.resumed,
    perTask: a.tasks.map((t) => ({
      taskId: t.taskId,
      passed: t.passed,
      reason: t.reason,
      completed: t.completed,
      stopReason: t.stopReason,
      steps: t.steps,
      failedSteps: t.failedSteps,
      promptTokens: t.promptTokens,
      completionTokens: t.completionTokens,
      costUsd: t.costUsd,
      durationMs: t.durationMs,
      skills: t.skills,
    })),
  };
}

/**
 * The `skill-sequence` driver (SAGE on an app world, issue 19): one coordinator task per
 * scenario. A continuing agent visits the scenario's tasks in order; each task gets a fresh
 * world in a fresh sandbox (world package copied in, seeded, REPL started), the library's skills
 * are retrieved and checked in that world (a failing one is dropped with its reason), the agent
 * acts in a code-action loop until it completes the task or hits the step cap, the grader
 * (copied in only then) judges the world's state, and the functions of successful actions are
 * admitted under the admission policy. The scenario passes when all its tasks pass. With
 * `ablation: true` each scenario also runs without the library, side by side in the details,
 * the aggregate metrics and `report.html`. Finished tasks are journaled in JetStream KV, so a
 * retried scenario resumes at its first unfinished task.
 */
export function createSkillSequenceDriver(
  options: SkillSequenceDriverOptions = {},
): JobDriver<ScenarioInput, SkillSequenceRun> {
  const baseDir = options.baseDir ?? process.cwd();
  const openLibrary = options.openLibrary ?? openSkillLibrary;
  const extract = options.extractFunctions ?? extractSkillFunctions;

  const planOf = async (spec: JobSpec): Promise<ScenarioInput[]> => {
    const config = parseWith(SkillSequenceConfigSchema, spec.config, { prefix: 'spec.config' });
    const ref = parseWith(SequenceSuiteRefSchema, spec.tasks, { prefix: 'spec.tasks' });
    const suite = await loadSequenceSuite(ref.suite, baseDir, 'spec.tasks');
    for (const part of ['world/appworld_lite', 'grader/evaluate.py']) {
      await access(path.join(suite.dir, part)).catch(() => {
        throw invalidArgument('spec.tasks.suite', `must hold ${part}`, ref.suite);
      });
    }
    const image = resolveSequenceImage(suite.file.image);
    return selectScenarios(suite.file, config).map((scenario) => ({
      scenario,
      image,
      suiteDir: suite.dir,
      config,
    }));
  };

  const sandbox = (
    ctx: TaskContext,
    resourceId: string,
    arm: SequenceArm,
    i: number,
  ): UntypedActorRef =>
    ctx.refs
      .refOf({ kind: SANDBOX_KIND, id: sequenceSandboxId(resourceId, arm, i) })
      .withHints({ jobId: ctx.jobId });

  const destroyAll = async (
    ctx: TaskContext,
    input: ScenarioInput,
    resourceId: string,
  ): Promise<void> => {
    for (const arm of armsOf(input)) {
      for (let i = 0; i < input.scenario.tasks.length; i++) {
        await sandbox(ctx, resourceId, arm, i)
          .ask('destroy', {}, { timeoutMs: 30_000 })
          .catch(() => undefined);
      }
    }
  };

  const agentOf = (input: ScenarioInput, ctx: TaskContext): SequenceAgent => {
    switch (input.config.agent.kind) {
      case 'gold':
        return goldSequenceAgent;
      case 'none':
        return noneSequenceAgent;
      case 'model': {
        const models = options.models;
        if (!models) throw noModels();
        const budget = models.budgetFor?.({
          jobId: ctx.jobId,
          taskId: ctx.taskId,
          refs: ctx.refs,
          ...(ctx.budgetScope ? { budgetScope: ctx.budgetScope } : {}),
        });
        return modelSequenceAgent(models, {
          ...(budget ? { budget } : {}),
          metadata: { job: ctx.jobId, task: ctx.taskId },
        });
      }
    }
  };

  return {
    name: 'skill-sequence',
    description: 'SAGE task sequences on an app world with a skill library (and its ablation)',

    async validate(spec) {
      const config = parseWith(SkillSequenceConfigSchema, spec.config, { prefix: 'spec.config' });
      if (spec.agent !== undefined) {
        throw invalidArgument('spec.agent', 'skill-sequence takes its agent in spec.config.agent');
      }
      if (config.agent.kind === 'model') {
        if (!options.models) throw noModels();
        const model = config.agent.model ?? '';
        if (!options.models.models.has(model)) {
          throw invalidArgument(
            'spec.config.agent.model',
            `must be one of the cluster's models (${options.models.models.names().join(', ')})`,
            model,
          );
        }
      }
      await planOf(spec);
    },

    async plan(spec) {
      return (await planOf(spec)).map((input) => ({ id: input.scenario.id, input }));
    },

    async runTask(ctx, raw) {
      const input = parseWith(ScenarioInputSchema, raw, { prefix: 'input' });
      const { config, scenario } = input;
      for (const stale of ctx.staleResourceIds) await destroyAll(ctx, input, stale);
      const nats = ctx.nats;
      if (!nats) throw new TroupeError('UNAVAILABLE', 'this host gives drivers no NATS connection');
      const journal = await ScenarioJournal.open(nats.connection, {
        cluster: nats.cluster,
        ...(nats.replicas !== undefined ? { replicas: nats.replicas } : {}),
      });
      const library = config.library.enabled
        ? await openLibrary({
            nats,
            libraryId: config.library.id ?? defaultLibraryId(ctx.jobId),
            admission: config.library.admission,
          })
        : undefined;
      const world = await readTree(path.join(input.suiteDir, 'world'));
      const grader = await readTree(path.join(input.suiteDir, 'grader'));
      const agent = agentOf(input, ctx);
      const arms: SequenceArmRun[] = [];
      let done = 0;
      const total = armsOf(input).length * scenario.tasks.length;
      for (const arm of armsOf(input)) {
        arms.push(
          await runScenarioArm({
            input,
            arm,
            jobId: ctx.jobId,
            agent,
            ...(arm === 'library' && library ? { library } : {}),
            extract,
            journal,
            world,
            grader,
            sandbox: (i) => sandbox(ctx, ctx.resourceId, arm, i),
            signal: ctx.signal,
            log: ctx.log,
            ...(options.createTimeoutMs !== undefined
              ? { createTimeoutMs: options.createTimeoutMs }
              : {}),
            onTask: (run) => {
              done++;
              ctx.progress({
                message: `${arm}: ${run.taskId} ${run.passed ? 'passed' : 'failed'} in ${run.steps} steps`,
                step: done,
                tokens: run.promptTokens + run.completionTokens,
                costUsd: run.costUsd,
              });
            },
          }),
        );
      }
      const links: Record<string, string> = {};
      links['run'] = await ctx.artifacts.put(
        'sequence.json',
        `${JSON.stringify({ scenario: scenario.id, total, arms }, null, 2)}\n`,
        { contentType: 'application/json', signal: ctx.signal },
      );
      links['report'] = await ctx.artifacts.put(
        'report.html',
        renderSkillSequenceReport({
          jobId: ctx.jobId,
          scenario: scenario.id,
          description: scenario.description,
          arms,
        }),
        { contentType: 'text/html; charset=utf-8', signal: ctx.signal },
      );
      return { scenario: scenario.id, arms, links };
    },

    async grade(_ctx, _raw, run) {
      if (!run) return { passed: false, score: 0, stopReason: 'timeout' };
      const main = primary(run);
      const sum = (f: (a: SequenceArmRun) => number): number =>
        run.arms.reduce((s, a) => s + f(a), 0);
      const arms: Record<string, unknown> = {};
      for (const a of run.arms) arms[a.arm] = armSummary(a);
      return {
        passed: main?.goalCompleted ?? false,
        score: main && main.tasks.length > 0 ? main.passed / main.tasks.length : 0,
        stopReason: main?.goalCompleted ? 'goal_completed' : 'goal_not_completed',
        promptTokens: sum((a) => a.promptTokens),
        completionTokens: sum((a) => a.completionTokens),
        costUsd: Math.round(sum((a) => a.costUsd) * 1e6) / 1e6,
        details: { scenario: run.scenario, primaryArm: main?.arm, arms, links: run.links },
      };
    },

    async cleanup(ctx, raw) {
      const input = parseWith(ScenarioInputSchema, raw, { prefix: 'input' });
      await destroyAll(ctx, input, ctx.resourceId);
    },

    collect(_spec, tasks) {
      return collectSkillSequence(tasks.map((t) => ({ taskId: t.taskId, details: t.details })));
    },
  };
}

interface ArmTotals {
  scenarios: number;
  goalsCompleted: number;
  tasks: number;
  passed: number;
  steps: number;
  tokens: number;
  costUsd: number;
}

/**
 * The job's aggregate: per arm (library / baseline) the scenario goal completion, task pass rate,
 * steps, tokens and cost, and per scenario both arms side by side.
 */
export function collectSkillSequence(
  tasks: readonly { taskId: string; details?: Record<string, unknown> | undefined }[],
): Record<string, unknown> {
  const totals: Record<string, ArmTotals> = {};
  const scenarios: Record<string, Record<string, unknown>> = {};
  for (const t of tasks) {
    const arms = t.details?.['arms'];
    if (typeof arms !== 'object' || arms === null) continue;
    const side: Record<string, unknown> = {};
    for (const [arm, raw] of Object.entries(arms as Record<string, Record<string, unknown>>)) {
      const n = (k: string): number => (typeof raw[k] === 'number' ? raw[k] : 0);
      const tot = (totals[arm] ??= {
        scenarios: 0,
        goalsCompleted: 0,
        tasks: 0,
        passed: 0,
        steps: 0,
        tokens: 0,
        costUsd: 0,
      });
      tot.scenarios++;
      if (raw['goalCompleted'] === true) tot.goalsCompleted++;
      tot.tasks += n('tasks');
      tot.passed += n('passed');
      tot.steps += n('steps');
      tot.tokens += n('tokens');
      tot.costUsd += n('costUsd');
      side[arm] = {
        goalCompleted: raw['goalCompleted'],
        passRate: n('passRate'),
        steps: n('steps'),
        tokens: n('tokens'),
        costUsd: n('costUsd'),
      };
    }
    scenarios[t.taskId] = side;
  }
  const byArm: Record<string, unknown> = {};
  for (const [arm, x] of Object.entries(totals)) {
    byArm[arm] = {
      scenarioGoalCompletion: x.scenarios > 0 ? x.goalsCompleted / x.scenarios : 0,
      taskPassRate: x.tasks > 0 ? x.passed / x.tasks : 0,
      tasks: x.tasks,
      passed: x.passed,
      steps: x.steps,
      meanStepsPerTask: x.tasks > 0 ? x.steps / x.tasks : 0,
      tokens: x.tokens,
      costUsd: Math.round(x.costUsd * 1e6) / 1e6,
    };
  }
  return { arms: byArm, scenarios };
}
