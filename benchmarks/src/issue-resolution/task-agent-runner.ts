import { type Logger, type RefFactory } from '@troupe/actors';
import { type NatsConnection } from '@nats-io/transport-node';
import { type AgentConfig } from './agent-config';
import { type IssueTaskFile } from './issue-task-spec';
import { type WorkspaceSandbox } from './workspace-sandbox';

/** Why an agent stopped. */
export type TaskAgentStopReason =
  'finished' | 'idle' | 'max_steps' | 'budget' | 'timeout' | 'cancelled' | 'error';

/** Model usage of one agent run. */
export interface TaskAgentUsage {
  promptTokens: number;
  completionTokens: number;
}

/** What an agent run returns (the driver grades the workspace, not this). */
export interface TaskAgentRunResult {
  stopReason: TaskAgentStopReason;
  /** The agent's last message (for the report). */
  finalText: string;
  /** Steps (model turns, or actions of a scripted agent). */
  steps: number;
  usage: TaskAgentUsage;
  costUsd: number;
  /** Model name, when a model worked the task. */
  model?: string;
  /** Trajectory events (JSON objects), kept as the artifact `trajectory.jsonl`. */
  trajectory?: Record<string, unknown>[];
}

/** What an agent run gets. */
export interface TaskAgentRunContext {
  jobId: string;
  taskId: string;
  /** The task (instruction, workdir, limits). */
  task: IssueTaskFile;
  /** The task's reference patch (only the gold agent may read it). */
  solutionPatch?: string;
  /** The instance's predicted patch (`model_patch`; only the predictions agent reads it). */
  predictionPatch?: string;
  /** The sandbox holding the repository at `task.workdir`. */
  sandbox: WorkspaceSandbox;
  /** Actor id of that sandbox (for agents that act on it as an actor). */
  sandboxId: string;
  /** Ref factory of the task's turn (to reach agent sessions and the budget ledger). */
  refs: RefFactory;
  /** The host's NATS connection, cluster and stream replicas, when the host gives them (trajectories). */
  nats?: { connection: NatsConnection; cluster: string; replicas?: number };
  /** Attempt number of the task, from 1 (a retried attempt starts a fresh session). */
  attempt: number;
  /** `spec.agent` of the job (model kind only). */
  agent?: AgentConfig;
  /** Budget ledger scope of the job, when it has a budget. */
  budgetScope?: string;
  /**
   * Aborted at the agent's time limit (reason `TIMEOUT`), the task's, or on cancellation. On a
   * timeout a runner returns what it has with `stopReason: 'timeout'`; its workspace is graded.
   */
  signal: AbortSignal;
  log: Logger;
}

/**
 * An agent that works one issue-resolution task in its sandbox. Selected by the job's
 * `config.agent.kind`; the driver owns the sandbox, grading and collection, the runner only
 * changes the workspace. Throwing is an infrastructure failure (the task is retried).
 */
export interface TaskAgentRunner {
  /** The kind users write in `config.agent.kind`. */
  readonly kind: string;
  /** Checks the job's agent settings at submit; throws `INVALID_ARGUMENT` naming the field. */
  validate?(agent: AgentConfig | undefined): void;
  run(ctx: TaskAgentRunContext): Promise<TaskAgentRunResult>;
}
