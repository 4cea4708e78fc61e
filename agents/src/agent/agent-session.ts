import { randomUUID } from 'node:crypto';
import { type Logger, type RefFactory } from '@troupe/actors';
import { parseWith } from '@troupe/proto';
import {
  AGENT_KIND,
  type AgentRunResult,
  AgentRunResultSchema,
  CancelMessageSchema,
  RunIdSchema,
  RunMessageSchema,
} from './agent-messages';
import { type AgentTemplateInput, parseAgentTemplate } from './agent-template';
import type { TrajectoryStore } from './trajectory-store';
import { RunSandboxesSchema, type SandboxGrant } from '../sandboxes/sandbox-template';

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
  /**
   * Sandbox actor id the tools act on: the `main` sandbox (create it first with the sandbox
   * actor's `create`).
   */
  sandboxId?: string;
  /**
   * Existing sandboxes by name (`[a-z][a-z0-9-]{0,31}`): an id, or `{id, image?, description?}`
   * (told to the model). The template's `sandboxes` are created by the session itself.
   * @default none
   */
  sandboxes?: Record<string, SandboxGrant>;
  /** Job the run works for: the sandboxes its template declares are labelled with it. */
  jobId?: string;
  /** Budget ledger scope the run's model calls are charged to (e.g. `job:<jobId>`). @default the host hook's */
  budgetScope?: string;
  /** Run id; posting the same run id again does not start a second run. @default a UUID */
  runId?: string;
  /**
   * Stops waiting for the result; the run itself goes on unless `cancelOnAbort` says otherwise.
   */
  signal?: AbortSignal;
  /**
   * Cancel the run when `signal` aborts: posts `cancel` (reason: the abort reason's message) so
   * the session stops spending — the run ends with CANCELLED at its next safe point, with its
   * subagents. A function decides from the abort reason (e.g. cancel on a user's cancel or a
   * final deadline, not on this process's shutdown, after which the caller's work is replayed and
   * waits for the same run again). `result` rejects once the cancel is posted (or failed to be).
   * @default false (the run goes on; cancel it with {@link AgentSessionHandle.cancel})
   */
  cancelOnAbort?: boolean | ((reason: unknown) => boolean);
  /** Where a failure to post the cancel of `cancelOnAbort` is reported. @default none */
  logger?: Logger;
}

/** A started run: its ids and its result. */
export interface AgentSessionHandle {
  sessionId: string;
  runId: string;
  /** Resolves with the run's result when it stops, whatever the stop reason. */
  result: Promise<AgentRunResult>;
  /**
   * Posts `cancel` for this run (durable, dedupe id `cancel:<runId>`): it ends with CANCELLED at
   * its next safe point, and `result` resolves with that (unless it ended first).
   * @throws TroupeError `INVALID_ARGUMENT` naming `reason` (1 to 500 characters)
   */
  cancel(reason?: string, options?: { signal?: AbortSignal }): Promise<void>;
}

/** What a caller passes to {@link cancelAgentRun}. */
export interface CancelAgentRunOptions {
  /** The actor system (or any ref factory) of the cluster. */
  system: RefFactory;
  /** Session id (the agent actor's id). */
  sessionId: string;
  /** The run to cancel (a cancel naming another run than the session's current one is ignored). */
  runId: string;
  /** Why; recorded in the result's `error` as `cancelled: <reason>`. @default none */
  reason?: string;
  /** Cancels the publish wait. */
  signal?: AbortSignal;
}

/**
 * Posts `cancel` for run `runId` of session `sessionId` (durable, dedupe id `cancel:<runId>`):
 * the run ends with CANCELLED at its next safe point and its running subagents are cancelled; its
 * `run_end` is recorded and delivered as for any stop reason. Ignored by the session when the run
 * is not its current one or already ended.
 * @throws TroupeError `INVALID_ARGUMENT` naming `runId` or `reason`
 */
export async function cancelAgentRun(options: CancelAgentRunOptions): Promise<void> {
  const msg = parseWith(
    CancelMessageSchema,
    { runId: options.runId, ...(options.reason !== undefined ? { reason: options.reason } : {}) },
    { prefix: 'cancel' },
  );
  await options.system.refOf({ kind: AGENT_KIND, id: options.sessionId }).post('cancel', msg, {
    dedupeId: `cancel:${msg.runId}`,
    ...(options.signal ? { signal: options.signal } : {}),
  });
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
  const sandboxes =
    options.sandboxes === undefined
      ? undefined
      : parseWith(RunSandboxesSchema, options.sandboxes, { prefix: 'sandboxes' });
  const jobId =
    options.jobId === undefined
      ? undefined
      : parseWith(RunMessageSchema.shape.jobId, options.jobId, { prefix: 'jobId' });
  const ref = options.system.refOf({ kind: AGENT_KIND, id: options.sessionId });
  const cancel = (reason?: string, o: { signal?: AbortSignal } = {}): Promise<void> =>
    cancelAgentRun({
      system: options.system,
      sessionId: options.sessionId,
      runId,
      ...(reason !== undefined ? { reason } : {}),
      ...(o.signal ? { signal: o.signal } : {}),
    });
  let posted: Promise<unknown> = Promise.resolve();
  let cancelPosted: Promise<void> | undefined;
  const { signal, cancelOnAbort } = options;
  const onAbort = (): void => {
    const why: unknown = signal?.reason;
    if (typeof cancelOnAbort === 'function' && !cancelOnAbort(why)) return;
    // After the run's own post settles: the session takes its inbox in order, and a run post that
    // the abort interrupted may still have landed.
    cancelPosted = posted
      .catch(() => undefined)
      .then(() => cancel(abortText(why), { signal: AbortSignal.timeout(30_000) }))
      .catch((err: unknown) => {
        options.logger?.warn(
          { err, sessionId: options.sessionId, runId },
          'could not cancel the agent run',
        );
      });
  };
  if (signal && cancelOnAbort) signal.addEventListener('abort', onAbort, { once: true });
  const result = options.trajectories
    .waitForRunEnd(options.sessionId, runId, signal ? { signal } : {})
    .then(
      (r) => AgentRunResultSchema.parse(r),
      async (err: unknown) => {
        await cancelPosted;
        throw err;
      },
    )
    .finally(() => signal?.removeEventListener('abort', onAbort));
  result.catch(() => undefined); // the caller awaits it; do not report it unhandled meanwhile
  posted = ref.post(
    'run',
    {
      runId,
      task: options.task,
      ...(template ? { template } : {}),
      ...(options.sandboxId ? { sandboxId: options.sandboxId } : {}),
      ...(sandboxes ? { sandboxes } : {}),
      ...(jobId ? { jobId } : {}),
      ...(options.budgetScope ? { budgetScope: options.budgetScope } : {}),
    },
    { dedupeId: `run:${runId}`, ...(options.signal ? { signal: options.signal } : {}) },
  );
  await posted;
  return { sessionId: options.sessionId, runId, result, cancel };
}

/** {@link startAgentSession}, then waits for the result. */
export async function runAgentSession(options: AgentSessionOptions): Promise<AgentRunResult> {
  return (await startAgentSession(options)).result;
}

/** The text of an abort reason, as a cancel reason (1 to 500 characters). */
function abortText(reason: unknown): string {
  const text = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : '';
  return text.slice(0, 500) || 'aborted';
}
