import { NamePattern } from '@troupe/proto';
import { z } from 'zod';
import { AgentStopReason } from './agent-stop-reason';
import { ReplyToSchema, StoredMessageSchema } from './agent-state';
import { AgentTemplateSchema } from './agent-template';
import { RunSandboxesSchema } from '../sandboxes/sandbox-template';

/** Actor kind of agent sessions. */
export const AGENT_KIND = 'agent';

/** A run id: `[A-Za-z0-9_.:-]{1,200}`. */
export const RunIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,200}$/, 'must match [A-Za-z0-9_.:-]{1,200}');

/** `run` (posted): start a run of the session on `task`. */
export const RunMessageSchema = z.strictObject({
  /** Id of this run; the result's `run_end` event carries it. Posting the same id twice runs once. */
  runId: RunIdSchema,
  /** The task, as the first user message of the run (pinned: compaction keeps it verbatim). */
  task: z.string().min(1, 'must not be empty'),
  /** The role. Required on the session's first run; later runs reuse the stored one. */
  template: AgentTemplateSchema.optional(),
  /** Sandbox actor id the tools act on. Required when the template holds a sandbox tool. */
  sandboxId: z.string().regex(NamePattern.ACTOR_ID, 'must match [A-Za-z0-9_-]{1,128}').optional(),
  /**
   * Existing sandboxes by name (`sandboxId` is `main`), kept for later runs like `sandboxId`. A
   * parent agent gives its subagents the ones it grants this way.
   */
  sandboxes: RunSandboxesSchema.optional(),
  /** Job the run works for: the sandboxes the template declares are labelled with it. */
  jobId: z.string().regex(NamePattern.JOB_ID, 'must match [A-Za-z0-9_-]{1,128}').optional(),
  /** Set by a parent agent on its subagents. */
  parentSessionId: z.string().optional(),
  /** Set by a parent agent: the names of its other subagents, which `send_message` may address. */
  siblings: z.array(z.string()).optional(),
  /**
   * Budget ledger scope the run's model calls are charged to (e.g. `job:<jobId>`), passed to the
   * host's budget hook as call metadata `budgetScope`; subagents inherit it. @default the hook's
   */
  budgetScope: z
    .string()
    .regex(/^[\x21-\x7e]{1,200}$/, 'must be 1 to 200 printable ASCII characters')
    .optional(),
  /** Post the result there as `subagentResult` (async subagent calls). */
  replyTo: ReplyToSchema.optional(),
  /** Conversation to start from (a parent's history, `useParentHistory`). */
  history: z.array(StoredMessageSchema).optional(),
  /** Extra texts kept verbatim through compaction. */
  pinned: z.array(z.string()).optional(),
});
/** Payload of `run`. */
export type RunMessage = z.input<typeof RunMessageSchema>;

/**
 * What is read from a `run` payload that failed validation: its id and, when valid, where to post
 * the result — enough to record the run's refusal (unknown and invalid other fields ignored).
 */
export const InvalidRunIdentitySchema = z.object({
  runId: RunIdSchema,
  replyTo: ReplyToSchema.optional().catch(undefined),
});

/** `message` (posted): a text for the agent, delivered at its next tool boundary. */
export const AgentTextMessageSchema = z.strictObject({
  /** Who sent it (a session id, `user`, …). */
  from: z.string().min(1).max(200),
  text: z.string(),
  /** Keep verbatim through compaction. @default false */
  pinned: z.boolean().optional(),
});

/**
 * `cancel` (posted, dedupe id `cancel:<runId>`): stop run `runId` of the session. The run ends
 * with CANCELLED at its next safe point (see {@link AgentStopReason.CANCELLED}), and the running
 * subagents it called (sync or async) are cancelled in turn. A cancel naming another run than the
 * session's current one, or a run that already ended, is ignored (recorded as a `cancel`
 * trajectory event); a session that never ran ignores it.
 */
export const CancelMessageSchema = z.strictObject({
  /** The run to stop. */
  runId: RunIdSchema,
  /** Why (recorded in the run's `error` as `cancelled: <reason>`). @default none */
  reason: z
    .string()
    .min(1, 'must not be empty')
    .max(500, 'must be at most 500 characters')
    .optional(),
});
/** Payload of `cancel`. */
export type CancelMessage = z.input<typeof CancelMessageSchema>;

/** The outcome of one run. */
export const AgentRunResultSchema = z.object({
  sessionId: z.string(),
  runId: z.string(),
  stopReason: z.enum(AgentStopReason),
  /** `finish_task`'s summary, or the model's last text. */
  finalText: z.string(),
  /** Model calls made. */
  steps: z.int(),
  /** Tokens of the run's own model calls plus those its subagents reported. */
  usage: z.object({ inputTokens: z.int(), outputTokens: z.int() }),
  /** Cost of the run's own model calls plus what its subagents reported (sync and async). */
  costUsd: z.number(),
  /** The subagents' share of `usage` and `costUsd`, when they spent anything. */
  subagents: z
    .object({ costUsd: z.number(), inputTokens: z.int(), outputTokens: z.int() })
    .optional(),
  /**
   * The error behind MODEL_ERROR, BUDGET_EXHAUSTED, REJECTED or INTERNAL_ERROR; for CANCELLED,
   * `cancelled: <reason>`.
   */
  error: z.string().optional(),
});
/** The outcome of one run. */
export type AgentRunResult = z.infer<typeof AgentRunResultSchema>;

/** `subagentResult` (posted by a child to its parent): an async call's outcome. */
export const SubagentResultMessageSchema = z.strictObject({
  callId: z.string(),
  result: AgentRunResultSchema,
});

/** Every message of the agent actor, by type. */
export const AgentMessages = {
  run: RunMessageSchema,
  message: AgentTextMessageSchema,
  subagentResult: SubagentResultMessageSchema,
  cancel: CancelMessageSchema,
  status: z.strictObject({}),
} as const;
