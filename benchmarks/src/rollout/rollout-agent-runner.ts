import { parseWith, invalidArgument } from '@troupe/proto';
import { type RolloutConfig, RolloutConfigSchema } from '@troupe/coordinator';
import { type AgentConfig } from '../issue-resolution/agent-config';
import {
  ISSUE_SOLVER_INSTRUCTION,
  ISSUE_SOLVER_TOOLS,
  runTaskAgentSession,
} from '../issue-resolution/model-agent-runner';
import {
  type TaskAgentRunContext,
  type TaskAgentRunner,
  type TaskAgentRunResult,
} from '../issue-resolution/task-agent-runner';

/** The agent kind of rollout episodes inside the wrapped issue-resolution driver. */
export const ROLLOUT_AGENT_KIND = 'rollout';

/** Where the rollout driver hands its validated config to the runner: `spec.agent.params`. */
export const ROLLOUT_PARAMS_KEY = 'rollout';

/** The rollout config a wrapped spec's agent carries. @throws TroupeError `INVALID_ARGUMENT` */
export function rolloutConfigOf(agent: AgentConfig | undefined): RolloutConfig {
  const raw = agent?.params?.[ROLLOUT_PARAMS_KEY];
  if (raw === undefined) throw invalidArgument('spec.config', 'is not a rollout config');
  return parseWith(RolloutConfigSchema, raw, { prefix: 'spec.config' });
}

/**
 * The `rollout` agent kind: the issue-solving agent (same instruction and tools as the `model`
 * kind) whose own model calls go to the trainer's endpoint with the rollout's sampling settings
 * (the agent template's `endpoint` and `sampling`), never the cluster's registry or keys.
 */
export function createRolloutAgentRunner(): TaskAgentRunner {
  return {
    kind: ROLLOUT_AGENT_KIND,
    validate(agent) {
      rolloutConfigOf(agent);
    },
    async run(ctx: TaskAgentRunContext): Promise<TaskAgentRunResult> {
      const config = rolloutConfigOf(ctx.agent);
      const { task } = ctx;
      const { maxTokens, ...sampling } = config.sampling;
      return runTaskAgentSession(ctx, {
        name: 'issue-solver',
        instruction: ISSUE_SOLVER_INSTRUCTION,
        model: config.endpoint.model,
        endpoint: config.endpoint,
        sampling,
        tools: ISSUE_SOLVER_TOOLS,
        limits: {
          maxSteps: config.maxSteps ?? task.limits.maxSteps,
          maxWallMs: task.timeouts.agentMs,
        },
        ...(maxTokens !== undefined ? { maxTokensPerCall: maxTokens } : {}),
      });
    },
  };
}
