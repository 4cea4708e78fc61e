import {
  type JobDriver,
  type JobSpec,
  MAX_TASKS_PER_JOB,
  ROLLOUT_JOB_KIND,
  RolloutConfigSchema,
  rolloutTaskId,
  type TaskContext,
} from '@troupe/coordinator';
import { invalidArgument, parseWith } from '@troupe/proto';
import {
  createIssueResolutionDriver,
  type IssueResolutionDriverOptions,
  type IssueRun,
} from '../issue-resolution/issue-resolution-driver';
import { type IssueTaskInput } from '../issue-resolution/issue-task-spec';
import {
  createRolloutAgentRunner,
  ROLLOUT_AGENT_KIND,
  ROLLOUT_PARAMS_KEY,
} from './rollout-agent-runner';

/** The message a rollout job gets when no agent host runs in the cluster. */
export const ROLLOUT_UNAVAILABLE =
  'rollouts need an agent host: start the cluster with a models file (troupe run|dev|coordinator --models models.yaml)';

/** Options of {@link createRolloutDriver}. */
export interface RolloutDriverOptions {
  /**
   * Whether the cluster hosts agents (an agent host runs the episodes); without one every
   * rollout job is refused at submit with {@link ROLLOUT_UNAVAILABLE}. @default false
   */
  agentHosts?: boolean;
  /** Options of the wrapped issue-resolution driver (`cwd`, `environments`). @default {} */
  issueResolution?: Omit<IssueResolutionDriverOptions, 'agentRunners'>;
}

/** Input of one episode: the issue-resolution task input and its sample index. */
interface RolloutTaskInput {
  task: IssueTaskInput;
  sampleIndex: number;
}

/**
 * The `rollout` job kind (RL rollouts): `tasks` names issue-resolution suite tasks
 * (`{suite, include}`), `config` the trainer's policy endpoint, sampling and episodes per task
 * ({@link RolloutConfigSchema}). Each episode is an issue-resolution task worked by the
 * `rollout` agent kind — the issue-solving agent whose model calls go to the endpoint — and
 * graded by the task's hidden grader in a fresh container: the grade's score is the reward, the
 * agent's `trajectory.jsonl` (with per-token logprobs when asked for) the trajectory, and
 * `details.rollout` the usage. The episodes of one task are `<task>.s0`, `<task>.s1`, …
 */
export function createRolloutDriver(
  options: RolloutDriverOptions = {},
): JobDriver<RolloutTaskInput, IssueRun> {
  const inner = createIssueResolutionDriver({
    ...options.issueResolution,
    agentRunners: [createRolloutAgentRunner()],
  });

  /** The issue-resolution spec the episodes of `spec` run as. */
  const innerSpec = (spec: JobSpec): JobSpec => {
    const config = parseWith(RolloutConfigSchema, spec.config, { prefix: 'spec.config' });
    return {
      ...spec,
      kind: 'issue-resolution',
      config: { agent: { kind: ROLLOUT_AGENT_KIND } },
      agent: {
        model: config.endpoint.model,
        ...(config.maxSteps !== undefined ? { maxSteps: config.maxSteps } : {}),
        params: { [ROLLOUT_PARAMS_KEY]: config },
      },
    };
  };
  const innerCtx = (ctx: TaskContext): TaskContext => ({ ...ctx, spec: innerSpec(ctx.spec) });

  return {
    name: ROLLOUT_JOB_KIND,
    description:
      "RL rollouts: issue-resolution episodes against a trainer's policy endpoint, rewarded by the hidden grader",
    storesPayloads: inner.storesPayloads,

    async validate(spec) {
      if (spec.agent !== undefined) {
        throw invalidArgument(
          'spec.agent',
          'must be absent: a rollout names its endpoint in spec.config.endpoint',
        );
      }
      const wrapped = innerSpec(spec);
      if (!options.agentHosts) throw invalidArgument('spec.kind', ROLLOUT_UNAVAILABLE, spec.kind);
      await inner.validate(wrapped);
    },

    async plan(spec, pctx) {
      const config = parseWith(RolloutConfigSchema, spec.config, { prefix: 'spec.config' });
      const tasks = await inner.plan(innerSpec(spec), pctx);
      const total = tasks.length * config.samplesPerTask;
      if (total > MAX_TASKS_PER_JOB) {
        throw invalidArgument(
          'spec.config.samplesPerTask',
          `gives ${total} episodes (${tasks.length} tasks × ${config.samplesPerTask}); a job holds at most ${MAX_TASKS_PER_JOB}`,
        );
      }
      return tasks.flatMap((t) =>
        Array.from({ length: config.samplesPerTask }, (_, i) => ({
          id: rolloutTaskId(t.id, i),
          input: { task: t.input as IssueTaskInput, sampleIndex: i } satisfies RolloutTaskInput,
        })),
      );
    },

    runTask: (ctx, input) => inner.runTask(innerCtx(ctx), input.task),

    async grade(ctx, input, run) {
      const grade = await inner.grade(innerCtx(ctx), input.task, run);
      return {
        ...grade,
        details: {
          ...(grade.details ?? {}),
          rollout: {
            sampleIndex: input.sampleIndex,
            promptTokens: run?.promptTokens ?? 0,
            completionTokens: run?.completionTokens ?? 0,
            steps: run?.steps ?? 0,
          },
        },
      };
    },

    cleanup: (ctx, input) => inner.cleanup?.(innerCtx(ctx), input.task) ?? Promise.resolve(),

    async collect(spec, tasks) {
      const config = parseWith(RolloutConfigSchema, spec.config, { prefix: 'spec.config' });
      const rewards = tasks.flatMap((t) => (t.score !== undefined ? [t.score] : []));
      return {
        endpoint: config.endpoint,
        samplesPerTask: config.samplesPerTask,
        meanReward: rewards.length > 0 ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null,
      };
    },
  };
}
