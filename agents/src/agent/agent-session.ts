import { randomUUID } from 'node:crypto';
import { type RefFactory } from '@troupe/actors';
import { parseWith } from '@troupe/proto';
import {
  AGENT_KIND,
  type AgentRunResult,
  AgentRunResultSchema,
  RunIdSchema,
} from './agent-messages';
import { type AgentTemplateInput, parseAgentTemplate } from './agent-template';
import type { TrajectoryStore } from './trajectory-store';

/** What a caller passes to {@link startAgentSession}. */
export interface AgentSessionOptions {
  /** The actor system (or any ref factory) of the cluster that hosts `agent` actors. */
  system: RefFactory;
  /** The cluster's trajectory store (where the result is read from). */
  trajectories: TrajectoryStore;
  /** Session id (the agent actor's id), `[A-Za-z0-9_-]{1,128}`. */
  sessionId: string;
  /** The role. Required on a session's first run. */
  template?: AgentTemplateInput;
  /** The task text. */
  task: string;
  /** Sandbox actor id the tools act on (create it first with the sandbox actor's `create`). */
  sandboxId?: string;
  /** Budget ledger scope the run's model calls are charged to (e.g. `job:<jobId>`). @default the host hook's */
  budgetScope?: string;
  /** Run id; posting the same run id again does not start a second run. @default a UUID */
  runId?: string;
  /** Stops waiting for the result (the run itself goes on). */
  signal?: AbortSignal;
}

/** A started run: its ids and its result. */
export interface AgentSessionHandle {
  sessionId: string;
  runId: string;
  /** Resolves with the run's result when it stops, whatever the stop reason. */
  result: Promise<AgentRunResult>;
}

/**
 * Starts a run of agent session `sessionId` and returns at once: posts `run` to the session's
 * inbox (durable — the run survives the crash of any process, including this one) and waits for
 * the run's `run_end` trajectory event. A bad template or id is refused here with
 * `INVALID_ARGUMENT` naming the field.
 */
export async function startAgentSession(options: AgentSessionOptions): Promise<AgentSessionHandle> {
  const template =
    options.template === undefined ? undefined : parseAgentTemplate(options.template);
  const runId = parseWith(RunIdSchema, options.runId ?? randomUUID(), { prefix: 'runId' });
  const ref = options.system.refOf({ kind: AGENT_KIND, id: options.sessionId });
  const result = options.trajectories
    .waitForRunEnd(options.sessionId, runId, options.signal ? { signal: options.signal } : {})
    .then((r) => AgentRunResultSchema.parse(r));
  result.catch(() => undefined); // the caller awaits it; do not report it unhandled meanwhile
  await ref.post(
    'run',
    {
      runId,
      task: options.task,
      ...(template ? { template } : {}),
      ...(options.sandboxId ? { sandboxId: options.sandboxId } : {}),
      ...(options.budgetScope ? { budgetScope: options.budgetScope } : {}),
    },
    { dedupeId: `run:${runId}`, ...(options.signal ? { signal: options.signal } : {}) },
  );
  return { sessionId: options.sessionId, runId, result };
}

/** {@link startAgentSession}, then waits for the result. */
export async function runAgentSession(options: AgentSessionOptions): Promise<AgentRunResult> {
  return (await startAgentSession(options)).result;
}
