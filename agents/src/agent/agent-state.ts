import { ErrorCode, TroupeError } from '@troupe/proto';
import { z } from 'zod';
import { AGENT_TOOL_NAMES, type AgentToolName } from './agent-tool-name';
import { AgentStopReason } from './agent-stop-reason';
import { type AgentTemplate, AgentTemplateSchema } from './agent-template';
import { HeldSandboxSchema } from '../sandboxes/sandbox-template';

const ToolCallSchema = z.object({ id: z.string(), name: z.string(), argumentsText: z.string() });

/** A conversation message as the agent keeps it: a chat message, maybe pinned. */
export const StoredMessageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string(), pinned: z.boolean().optional() }),
  z.object({ role: z.literal('user'), content: z.string(), pinned: z.boolean().optional() }),
  z.object({
    role: z.literal('assistant'),
    content: z.string().nullable(),
    toolCalls: z.array(ToolCallSchema).optional(),
    pinned: z.boolean().optional(),
  }),
  z.object({
    role: z.literal('tool'),
    toolCallId: z.string(),
    content: z.string(),
    pinned: z.boolean().optional(),
  }),
]);
/** A conversation message as the agent keeps it. */
export type StoredMessage = z.infer<typeof StoredMessageSchema>;

/** An address to post a run's result to. */
export const ReplyToSchema = z.strictObject({
  /** Actor kind of the caller (an agent). */
  kind: z.string(),
  /** Session id of the caller. */
  id: z.string(),
  /** The caller's tool call id, echoed in the result. */
  callId: z.string(),
});
/** Where a run's result goes. */
export type ReplyTo = z.infer<typeof ReplyToSchema>;

/** Progress and outcome of the current (or last) run of a session. */
export const AgentRunStateSchema = z.object({
  runId: z.string(),
  /** `running`; `waiting` for async subagent results (asleep until one arrives); `done`. */
  status: z.enum(['running', 'waiting', 'done']),
  startedAtMs: z.number(),
  steps: z.int(),
  inputTokens: z.int(),
  outputTokens: z.int(),
  costUsd: z.number(),
  /** What this run's subagents (sync and async calls, recursively) reported spending. */
  subagentCostUsd: z.number().optional(),
  /** Prompt tokens of this run's subagents. */
  subagentInputTokens: z.int().optional(),
  /** Completion tokens of this run's subagents. */
  subagentOutputTokens: z.int().optional(),
  /** Automatic "continue" prompts used. */
  continues: z.int(),
  replyTo: ReplyToSchema.optional(),
  /** Budget ledger scope of the run's model calls (from the `run` message). */
  budgetScope: z.string().optional(),
  /** Job of the run (from the `run` message): the label of the sandboxes it creates. */
  jobId: z.string().optional(),
  stopReason: z.enum(AgentStopReason).optional(),
  finalText: z.string().optional(),
  /** `finish_task`'s summary, once its result is committed (the run ends at the next check). */
  finishSummary: z.string().optional(),
  /**
   * A `cancel` of this run was taken (its reason, if any): the run ends with CANCELLED at its
   * next safe point, also after a crash.
   */
  cancelRequested: z.object({ reason: z.string().optional() }).optional(),
  /**
   * A middleware stopped the run after a tool result (committed with it): the run ends with
   * STOPPED_BY_MIDDLEWARE at its next check, also after a crash.
   */
  middlewareStop: z.object({ by: z.string(), reason: z.string() }).optional(),
  /** The error behind MODEL_ERROR / BUDGET_EXHAUSTED / INTERNAL_ERROR / CANCELLED / STOPPED_BY_MIDDLEWARE. */
  error: z.string().optional(),
  endedAtMs: z.number().optional(),
});
/** Progress and outcome of a run. */
export type AgentRunState = z.infer<typeof AgentRunStateSchema>;

/** A subagent the session created with `create_subagent` (persisted, rebuilt after restarts). */
export const SubagentRecordSchema = z.object({
  name: z.string(),
  sessionId: z.string(),
  instruction: z.string(),
  model: z.string(),
  tools: z.array(z.enum(AGENT_TOOL_NAMES as [AgentToolName, ...AgentToolName[]])),
  /** Skills it may load (a subset of the creator's). @default none */
  skills: z.array(z.string()).optional(),
  /** MCP servers it gets (a subset of the creator's, by name). @default none */
  mcp: z.array(z.string()).optional(),
  /** Sandboxes it is granted by name (shared, not copied). @default the creator's `main` */
  sandboxes: z.array(z.string()).optional(),
  /** The call in progress (sync or async), until its result arrived. */
  activeCallId: z.string().optional(),
  /** Run id of the call in progress. */
  activeRunId: z.string().optional(),
  /** Whether the call in progress is sync or async. */
  activeMode: z.enum(['sync', 'async']).optional(),
});
/** A subagent record. */
export type SubagentRecord = z.infer<typeof SubagentRecordSchema>;

/** Persisted state of an agent session actor. */
export const AgentSessionStateSchema = z.object({
  /** The role, set by the first run. */
  template: AgentTemplateSchema.optional(),
  /** The session that created this one (subagents). */
  parentSessionId: z.string().optional(),
  /** The parent's other subagents (by name) as of the parent's last call: `send_message` targets. */
  siblings: z.array(z.string()).optional(),
  /** The `main` sandbox of sessions from before named sandboxes (read as a given `main`). */
  sandboxId: z.string().optional(),
  /** The sandboxes the session holds, by name (the sandbox tools' `sandbox` argument). */
  sandboxes: z.record(z.string(), HeldSandboxSchema).optional(),
  /** The conversation as the model sees it (compacted; the full one is in the trajectory). */
  messages: z.array(StoredMessageSchema),
  /** Sequence number of the last trajectory event. */
  eventSeq: z.int(),
  run: AgentRunStateSchema.optional(),
  /** Messages received at tool boundaries, moved into `messages` after the current tool batch. */
  inbound: z.array(StoredMessageSchema).optional(),
  subagents: z.record(z.string(), SubagentRecordSchema),
  /** Runs finished by this session. */
  runsDone: z.int(),
});
/** Persisted state of an agent session actor. */
export type AgentSessionState = z.infer<typeof AgentSessionStateSchema>;

/** State of a session that never ran. */
export function initialAgentSessionState(): AgentSessionState {
  return { messages: [], eventSeq: 0, subagents: {}, runsDone: 0 };
}

/** A session with a run: its template and run are set (what a run's loop and its tools see). */
export type RunningSession = AgentSessionState & { template: AgentTemplate; run: AgentRunState };

/** `s` as a {@link RunningSession}; throws INTERNAL when it has no template or no run. */
export function runningSession(s: AgentSessionState): RunningSession {
  if (!s.template || !s.run) {
    throw new TroupeError(ErrorCode.INTERNAL, 'the session has no run in progress');
  }
  return s as RunningSession;
}
