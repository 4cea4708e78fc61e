import { createHash } from 'node:crypto';
import {
  AgentStopReason,
  AgentToolName,
  type AgentTemplateInput,
  type McpConfig,
  McpConfigSchema,
  startAgentSession,
  TrajectoryStore,
  trajectoryToRecord,
} from '@troupe/agents';
import type { ModelRegistry } from '@troupe/llm';
import {
  CancelReason,
  ErrorCode,
  hasErrorCode,
  invalidArgument,
  parseWith,
  TroupeError,
} from '@troupe/proto';
import {
  type TaskAgentRunContext,
  type TaskAgentRunResult,
  type TaskAgentRunner,
  type TaskAgentStopReason,
} from './task-agent-runner';
import { type AgentConfig } from './agent-config';

/** Options of {@link createModelAgentRunner}. */
export interface ModelAgentRunnerOptions {
  /** The cluster's models (a job's `spec.agent.model` must name one). */
  models: Pick<ModelRegistry, 'has' | 'names'>;
}

/** The system instruction of the issue-solving agent (its role: `issue-solver`). */
export const ISSUE_SOLVER_INSTRUCTION = [
  'You are a software engineer fixing an issue in a repository.',
  'The repository is in your working directory. Use the tools to read the code, reproduce the',
  'problem, change the code and run the tests. Keep changes minimal and do not weaken or delete',
  'tests. When the issue is fixed, call finish_task with a short summary of the change.',
].join(' ');

const STOP_REASONS: Record<AgentStopReason, TaskAgentStopReason> = {
  [AgentStopReason.FINISHED]: 'finished',
  [AgentStopReason.NO_TOOL_CALLS]: 'idle',
  [AgentStopReason.STOPPED_BY_MIDDLEWARE]: 'idle',
  [AgentStopReason.MAX_STEPS]: 'max_steps',
  [AgentStopReason.MAX_TOKENS]: 'budget',
  [AgentStopReason.BUDGET_EXHAUSTED]: 'budget',
  [AgentStopReason.WALL_TIME]: 'timeout',
  [AgentStopReason.MODEL_ERROR]: 'error',
  [AgentStopReason.REJECTED]: 'error',
  [AgentStopReason.INTERNAL_ERROR]: 'error',
  [AgentStopReason.CANCELLED]: 'cancelled',
};

/**
 * Whether an abort of the run context's signal cancels the agent session: a user's cancel of the
 * job, and a timeout (the agent's or the task's deadline is final: the driver grades what the
 * workspace holds, and the session must not go on spending). Not this host's shutdown or a fenced
 * task activation: the task is replayed and waits for the same run again.
 */
export function cancelsAgentSession(reason: unknown): boolean {
  if (hasErrorCode(reason, ErrorCode.TIMEOUT)) return true;
  if (!hasErrorCode(reason, ErrorCode.CANCELLED)) return false;
  const details = (reason as { details?: { reason?: unknown } }).details;
  return details?.reason === CancelReason.USER;
}

/** The agent session id of a task attempt: `ir-<hash of job, task, attempt>`. */
export function issueSessionId(jobId: string, taskId: string, attempt: number): string {
  const h = createHash('sha256').update(`${jobId}\n${taskId}\n${attempt}`).digest('hex');
  return `ir-${h.slice(0, 32)}`;
}

/**
 * The MCP servers a job gives its agents (`spec.agent.params.mcp`, the template's `mcp` field),
 * or undefined. @throws TroupeError `INVALID_ARGUMENT` naming the field
 */
export function jobMcp(agent: AgentConfig): McpConfig | undefined {
  const raw = agent.params?.['mcp'];
  if (raw === undefined) return undefined;
  return parseWith(McpConfigSchema, raw, { prefix: 'spec.agent.params.mcp' });
}

/**
 * The `model` agent kind: an agent session (the `agent` actor of `@troupe/agents`, hosted by an
 * agent host of the cluster) with the terminal and file tools on the task's sandbox, the job's
 * model and limits, charged to the job's budget scope. Its trajectory becomes the task's
 * `trajectory.jsonl`. A retried attempt starts a fresh session. When the job is cancelled or the
 * agent's time is up, the session's run is cancelled too ({@link cancelsAgentSession}): it stops
 * at its next safe point (an in-flight model call is aborted) instead of spending until a limit.
 */
export function createModelAgentRunner(options: ModelAgentRunnerOptions): TaskAgentRunner {
  return {
    kind: 'model',
    validate(agent: AgentConfig | undefined) {
      if (!agent)
        throw invalidArgument('spec.agent', 'is required for model agents (model, limits)');
      if (!options.models.has(agent.model)) {
        throw invalidArgument(
          'spec.agent.model',
          `must name a model of the cluster's registry (${options.models.names().join(', ') || 'none configured: start the cluster with --models'})`,
          agent.model,
        );
      }
      jobMcp(agent);
    },
    async run(ctx: TaskAgentRunContext): Promise<TaskAgentRunResult> {
      const agent = ctx.agent;
      if (!agent) throw invalidArgument('spec.agent', 'is required for model agents');
      const { task } = ctx;
      const mcp = jobMcp(agent);
      return runTaskAgentSession(ctx, {
        name: agent.template ?? 'issue-solver',
        instruction: ISSUE_SOLVER_INSTRUCTION,
        model: agent.model,
        tools: ISSUE_SOLVER_TOOLS,
        limits: {
          maxSteps: agent.maxSteps ?? task.limits.maxSteps,
          maxWallMs: task.timeouts.agentMs,
          ...(task.limits.maxCostUsd !== undefined ? { maxCostUsd: task.limits.maxCostUsd } : {}),
        },
        ...(agent.maxTokens !== undefined ? { maxTokensPerCall: agent.maxTokens } : {}),
        ...(mcp ? { mcp } : {}),
      });
    },
  };
}

/** The tools of the issue-solving agent: terminal and file tools on the task's sandbox. */
export const ISSUE_SOLVER_TOOLS = [
  AgentToolName.RUN_TERMINAL_COMMAND,
  AgentToolName.VIEW_FILE,
  AgentToolName.EDIT_FILE,
  AgentToolName.WRITE_FILE,
];

/**
 * Runs one agent session with `template` on the task's sandbox (the `agent` actor of
 * `@troupe/agents`, hosted by an agent host of the cluster), charged to the job's budget scope,
 * and returns its result with its trajectory (one JSONL record). What the `model` and `rollout`
 * agent kinds share.
 */
export async function runTaskAgentSession(
  ctx: TaskAgentRunContext,
  template: AgentTemplateInput,
): Promise<TaskAgentRunResult> {
  if (!ctx.nats) {
    throw new TroupeError('UNAVAILABLE', 'this host gives drivers no NATS connection');
  }
  const trajectories = new TrajectoryStore({
    connection: ctx.nats.connection,
    cluster: ctx.nats.cluster,
    ...(ctx.nats.replicas !== undefined ? { replicas: ctx.nats.replicas } : {}),
  });
  const { task } = ctx;
  const sessionId = issueSessionId(ctx.jobId, ctx.taskId, ctx.attempt);
  const handle = await startAgentSession({
    system: ctx.refs,
    trajectories,
    sessionId,
    runId: sessionId,
    template,
    task: `Working directory: ${task.workdir}\n\n${task.instruction}`,
    sandboxId: ctx.sandboxId,
    ...(ctx.budgetScope ? { budgetScope: ctx.budgetScope } : {}),
    signal: ctx.signal,
    cancelOnAbort: cancelsAgentSession,
    logger: ctx.log,
  });
  const r = await handle.result;
  const events = await trajectories.read(sessionId, { signal: AbortSignal.timeout(30_000) });
  const record = trajectoryToRecord(sessionId, events);
  ctx.log.info(
    { taskId: ctx.taskId, sessionId, stopReason: r.stopReason, steps: r.steps },
    'model agent stopped',
  );
  return {
    stopReason: STOP_REASONS[r.stopReason],
    finalText: r.error ? `${r.finalText}\n${r.error}`.trim() : r.finalText,
    steps: r.steps,
    usage: { promptTokens: r.usage.inputTokens, completionTokens: r.usage.outputTokens },
    costUsd: r.costUsd,
    model: template.model,
    trajectory: [record as unknown as Record<string, unknown>],
  };
}
