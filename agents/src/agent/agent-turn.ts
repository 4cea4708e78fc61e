import { type ActorContext, type InboxMessage, type Logger } from '@troupe/actors';
import {
  CancelReason,
  cancelledError,
  ErrorCode,
  errorCode,
  fromZodError,
  hasErrorCode,
  TroupeError,
  toTroupeError,
} from '@troupe/proto';
import { type z } from 'zod';
import type { BudgetHook, ChatMessage, ToolCall, LlmClient } from '@troupe/llm';
import type { AgentSessionState, AgentRunState, StoredMessage } from './agent-state';
import { AgentStopReason } from './agent-stop-reason';
import { type AgentTemplate, holdsTool } from './agent-template';
import { AgentToolArgs, toolDefinition } from './agent-tool-args';
import {
  AGENT_TOOL_NAMES,
  type AgentToolName,
  AgentToolName as T,
  SANDBOX_TOOLS,
} from './agent-tool-name';
import {
  AGENT_KIND,
  type AgentRunResult,
  AgentRunResultSchema,
  AgentTextMessageSchema,
  CancelMessageSchema,
  type RunMessage,
  InvalidRunIdentitySchema,
  RunMessageSchema,
  SubagentResultMessageSchema,
} from './agent-messages';
import {
  applyCompaction,
  conversationChars,
  findCompactionWindow,
  summaryPrompt,
} from './compact-history';
import {
  elideOlderMessages,
  growingChars,
  MAX_JSON_BYTES_PER_CHAR,
  stateBytes,
} from './elide-older-messages';
import { headTail, replaceExact } from './replace-exact';
import type { SandboxPort } from './sandbox-port';
import { SessionBudget } from './session-budget';
import { TrajectoryEventType, type TrajectoryEvent } from './trajectory-event';
import type { TrajectoryStore } from './trajectory-store';

/** What every turn of an agent needs (from {@link createAgentActor}). */
export interface AgentTurnDeps {
  llm: LlmClient;
  trajectories: TrajectoryStore;
  sandbox: (ctx: ActorContext<AgentSessionState>, sandboxId: string) => SandboxPort;
  budget: BudgetHook | undefined;
  log: Logger;
  subagentTimeoutMs: number;
  now: () => number;
  /** Serialized session state size above which the context is shrunk (see fitState). */
  maxStateBytes: number;
}

const CONTINUE_PROMPT =
  'Continue working on the task. When it is done, call finish_task with a summary.';

/**
 * Tools with no effect outside the session's own state: running one again after a crash repeats
 * nothing anyone could observe. A model reply whose tool calls are all of these is committed
 * together with their results (one checkpoint per step instead of two).
 */
const EFFECT_FREE_TOOLS: ReadonlySet<string> = new Set<AgentToolName>([
  T.VIEW_FILE,
  T.LIST_AGENTS,
  T.FINISH_TASK,
  T.CREATE_SUBAGENT,
]);

/** A tool's outcome as text for the model; `finish` ends the run with it as final text. */
interface ToolOutcome {
  content: string;
  ok: boolean;
  finish?: string;
}

/**
 * One handler turn of an agent session: owns a working copy of the state, emits trajectory
 * events, checkpoints each tool result (and a model reply before a tool with an external effect
 * runs) and runs the loop until the run stops or waits for async subagent results.
 */
export class AgentTurn {
  private pending: Promise<void>[] = [];
  /** An end was recorded in the working copy but its commit failed. */
  private endUncommitted = false;
  /** Events emitted with `defer`, not yet published. */
  private readonly deferred: TrajectoryEvent[] = [];
  /** The checkpoint started by {@link commitSoon} and not yet waited for. */
  private inflight: Promise<void> | undefined;
  /** The state's exact serialized size at its last measurement, and its growing text then. */
  private sized: { bytes: number; chars: number } | undefined;
  /** Aborted when this turn takes a `cancel` of its run: stops the model call, tool or wait. */
  private readonly cancelled = new AbortController();
  private signalCache: AbortSignal | undefined;
  /** The turn's inbox drains, one after the other (the runtime's drain position is not shared). */
  private drainChain: Promise<void> = Promise.resolve();
  /** A drain asked for by a mail hint has not started yet. */
  private mailDrainQueued = false;
  /** Stops listening for mail hints (set while the loop runs). */
  private unwatch: (() => void) | undefined;
  /** A drain started by a mail hint failed: thrown at the next safe point. */
  private mailDrainError: unknown;

  constructor(
    private readonly ctx: ActorContext<AgentSessionState>,
    readonly s: AgentSessionState,
    private readonly deps: AgentTurnDeps,
  ) {}

  private get sessionId(): string {
    return this.ctx.self.id;
  }

  /** The turn's signal, also aborted once the turn takes a `cancel` of its run. */
  private get signal(): AbortSignal {
    return (this.signalCache ??= AbortSignal.any([this.ctx.signal, this.cancelled.signal]));
  }

  /**
   * Appends a trajectory event: published now — or, with `defer`, with the next commit or the
   * next event that is not deferred (so the stream keeps seq order), which saves a socket write
   * per step — and awaited at the next commit.
   */
  emit(
    runId: string,
    type: TrajectoryEvent['type'],
    messages: StoredMessage[] | undefined,
    data: Record<string, unknown> = {},
    options: { defer?: boolean } = {},
  ): number {
    const seq = ++this.s.eventSeq;
    const event: TrajectoryEvent = {
      sessionId: this.sessionId,
      seq,
      epoch: this.ctx.epoch,
      runId,
      atMs: this.deps.now(),
      type,
      ...(messages ? { messages } : {}),
      data,
    };
    if (options.defer) {
      this.deferred.push(event);
      return seq;
    }
    this.publishDeferred();
    this.publish(event);
    return seq;
  }

  private publish(event: TrajectoryEvent): void {
    const p = this.deps.trajectories.append(event);
    p.catch(() => undefined); // awaited (and its error surfaced) by commit
    this.pending.push(p);
  }

  private publishDeferred(): void {
    for (const e of this.deferred.splice(0)) this.publish(e);
  }

  /** Waits for the events emitted so far and checkpoints the state. */
  async commit(): Promise<void> {
    await this.commitSoon();
    await this.settle();
  }

  /**
   * Starts checkpointing the state (with the events emitted so far) and returns without waiting
   * for it: the next model call overlaps it. Whatever must follow it — the next checkpoint, a tool
   * with an external effect, the end of the turn — waits for it ({@link settle}).
   */
  private async commitSoon(): Promise<void> {
    // Checkpoints are compare-and-sets on the revision the last one returned: one at a time (a
    // drain on a mail hint may commit while the loop waits: wait until none is in flight).
    while (this.inflight) await this.settle();
    // Deferred events and the checkpoint leave in the same tick: one socket write.
    this.publishDeferred();
    const pending = this.pending;
    this.pending = [];
    // checkpoint() encodes the state and the drain position before it first yields, so what is
    // written is this point of the turn even though the turn goes on while it is written.
    const done = Promise.all([...pending, this.ctx.checkpoint(this.s)]).then(() => undefined);
    done.catch(() => undefined); // surfaced by settle()
    this.inflight = done;
  }

  /** Waits for the checkpoint in flight, if any; throws its error. */
  private async settle(): Promise<void> {
    const inflight = this.inflight;
    if (!inflight) return;
    await inflight;
    if (this.inflight === inflight) this.inflight = undefined;
  }

  /** True when a tool call can run before the model reply that made it is committed. */
  private effectFree(call: ToolCall): boolean {
    const template = this.s.template as AgentTemplate;
    // A tool the agent does not hold is refused without running anything.
    return EFFECT_FREE_TOOLS.has(call.name) || !holdsTool(template, call.name);
  }

  /** Handles a `run` message: starts, resumes, or refuses it. */
  async run(msg: z.output<typeof RunMessageSchema>): Promise<void> {
    const { s } = this;
    if (s.run && s.run.runId === msg.runId) {
      if (s.run.status === 'running') await this.loop();
      else if (s.run.status === 'done') await this.deliverResult(s.run);
      return;
    }
    if (s.run && s.run.status !== 'done') {
      await this.reject(
        msg,
        ErrorCode.BUSY,
        `session ${this.sessionId} has run ${s.run.runId} in progress`,
      );
      return;
    }
    const template = msg.template ?? s.template;
    if (!template) {
      await this.reject(
        msg,
        ErrorCode.INVALID_ARGUMENT,
        '`run.template`: required on the first run of a session',
      );
      return;
    }
    if (!this.deps.llm.registry.has(template.model)) {
      await this.reject(
        msg,
        ErrorCode.INVALID_ARGUMENT,
        `\`run.template.model\`: '${template.model}' is not in the model registry (registered: ${this.deps.llm.registry.names().join(', ')})`,
      );
      return;
    }
    const sandboxId = msg.sandboxId ?? s.sandboxId;
    const needsSandbox = template.tools.filter((t) => SANDBOX_TOOLS.has(t));
    if (needsSandbox.length > 0 && !sandboxId) {
      await this.reject(
        msg,
        ErrorCode.INVALID_ARGUMENT,
        `\`run.sandboxId\`: required because the template holds ${needsSandbox.join(', ')}`,
      );
      return;
    }
    s.template = template;
    if (sandboxId) s.sandboxId = sandboxId;
    if (msg.parentSessionId) s.parentSessionId = msg.parentSessionId;
    if (msg.siblings) s.siblings = msg.siblings;
    const added: StoredMessage[] = [];
    if (s.messages.length === 0) {
      added.push({ role: 'system', content: template.instruction, pinned: true });
      for (const m of msg.history ?? []) if (m.role !== 'system') added.push(m);
    }
    for (const p of msg.pinned ?? []) added.push({ role: 'user', content: p, pinned: true });
    added.push({ role: 'user', content: msg.task, pinned: true });
    s.messages.push(...added);
    s.run = {
      runId: msg.runId,
      status: 'running',
      startedAtMs: this.deps.now(),
      steps: 0,
      inputTokens: 0,
      outputTokens: 0,
      costUsd: 0,
      continues: 0,
      ...(msg.replyTo ? { replyTo: msg.replyTo } : {}),
      ...(msg.budgetScope ? { budgetScope: msg.budgetScope } : {}),
    };
    this.emit(msg.runId, TrajectoryEventType.RUN_START, added, {
      template: template.name,
      model: template.model,
      tools: this.toolDefs().map((d) => ({ type: 'function', function: d })),
    });
    await this.commit();
    await this.loop();
  }

  /** Handles a posted text message or subagent result outside a run's turn. */
  async inbound(type: string, payload: unknown): Promise<void> {
    // A replay after a checkpoint of this turn (crash, or a retry after a failure): the state
    // already holds the message; accepting it again would deliver (and roll up) it twice.
    if (!this.ctx.resumed) this.accept({ type, payload, seq: 0 });
    const run = this.s.run;
    // Any message wakes a session that waits for async results; with nothing to do it waits again.
    if (run && run.status === 'waiting') run.status = 'running';
    if (run && run.status !== 'done') this.flushInbound(run.runId);
    await this.commit();
    if (run && run.status === 'running') await this.loop();
  }

  /**
   * Handles a `cancel` outside a run's turn: a run waiting for async subagent results ends at once
   * (see {@link endCancelled}); a cancel naming another run, or a run that ended, is recorded and
   * ignored; a session without a run ignores it.
   */
  async cancel(msg: z.output<typeof CancelMessageSchema>): Promise<void> {
    const run = this.s.run;
    if (run && this.ctx.resumed && run.runId === msg.runId && run.status === 'done') {
      // A replay after this cancel ended the run: its end is recorded; deliver it again.
      await this.deliverResult(run);
      return;
    }
    this.takeCancel(msg);
    if (!run) return;
    if (run.status !== 'done' && run.cancelRequested) await this.endCancelled(run);
    else await this.commit();
  }

  /**
   * Takes a `cancel`: for the current run (not ended), marks it to end with CANCELLED and aborts
   * whatever the turn waits for; otherwise records that it was ignored.
   */
  private takeCancel(msg: { runId: string; reason?: string | undefined }): void {
    const run = this.s.run;
    if (!run) {
      this.deps.log.info(
        { session: this.sessionId, runId: msg.runId },
        'cancel of a session without a run ignored',
      );
      return;
    }
    const why =
      run.runId !== msg.runId
        ? `it names run ${msg.runId}; the session's run is ${run.runId}`
        : run.status === 'done'
          ? `run ${run.runId} already ended (${run.stopReason ?? 'unknown'})`
          : undefined;
    if (run.cancelRequested && !why) return; // a second cancel of a run already stopping
    this.emit(run.runId, TrajectoryEventType.CANCEL, undefined, {
      cancelRunId: msg.runId,
      ...(msg.reason !== undefined ? { reason: msg.reason } : {}),
      outcome: why ? 'ignored' : 'accepted',
      ...(why ? { why } : {}),
    });
    if (why) {
      this.deps.log.info({ session: this.sessionId, runId: msg.runId, why }, 'cancel ignored');
      return;
    }
    run.cancelRequested = msg.reason !== undefined ? { reason: msg.reason } : {};
    this.cancelled.abort(cancelledError(msg.reason ?? CancelReason.USER));
  }

  /**
   * Ends a cancelled run: the tool calls it did not run are answered with an error (a later run
   * does not execute them), its running subagents (sync and async) get a `cancel` of their call's
   * run, then CANCELLED is recorded and delivered. The run does not wait for the subagents: their
   * spend after this point is charged to the ledger but not rolled into this run's result.
   */
  private async endCancelled(run: AgentRunState): Promise<void> {
    const reason = run.cancelRequested?.reason;
    this.answerUnrunTools(run, AgentStopReason.CANCELLED);
    const why = `parent session ${this.sessionId} was cancelled${reason ? `: ${reason}` : ''}`;
    for (const child of Object.values(this.s.subagents)) {
      if (child.activeCallId === undefined) continue;
      const runId = child.activeRunId ?? this.subagentRunId(child.activeCallId);
      await this.ctx.refs
        .refOf({ kind: AGENT_KIND, id: child.sessionId })
        .post(
          'cancel',
          { runId, reason: why.slice(0, 500) },
          { dedupeId: `cancel:${runId}`, signal: this.ctx.signal },
        );
      delete child.activeCallId;
      delete child.activeRunId;
      delete child.activeMode;
    }
    await this.end(
      run,
      AgentStopReason.CANCELLED,
      undefined,
      `cancelled${reason ? `: ${reason}` : ''}`,
    );
  }

  /** Answers the last model reply's tool calls that have no result with an error. */
  private answerUnrunTools(run: AgentRunState, reason: AgentStopReason): void {
    const assistant = this.s.messages.findLast((m) => m.role === 'assistant');
    const last = assistant ? this.s.messages.lastIndexOf(assistant) : -1;
    const answered = new Set(
      this.s.messages.slice(last + 1).flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])),
    );
    for (const call of assistant?.role === 'assistant' ? (assistant.toolCalls ?? []) : []) {
      if (answered.has(call.id)) continue;
      const message: StoredMessage = {
        role: 'tool',
        toolCallId: call.id,
        content: `error: not run: the run ended (${reason})`,
      };
      this.s.messages.push(message);
      this.emit(run.runId, TrajectoryEventType.TOOL_RESULT, [message], {
        toolCallId: call.id,
        name: call.name,
        ok: false,
      });
    }
  }

  /** Run id of a subagent call made by tool call `callId`. */
  private subagentRunId(callId: string): string {
    return `${this.sessionId}.${callId}`.replace(/[^A-Za-z0-9_.:-]/g, '_').slice(0, 200);
  }

  /**
   * A `run` whose payload failed validation, which the runtime dead-letters: records its refusal
   * (`run_end` REJECTED with the validation error, and a reply to `replyTo`) when the payload
   * names a valid run id other than the session's current run, so whoever waits for that run's
   * end hears why at once instead of at its deadline. False when there is nothing to record.
   */
  async refuseInvalidRun(payload: unknown, error: TroupeError): Promise<boolean> {
    const identity = InvalidRunIdentitySchema.safeParse(payload);
    if (!identity.success || this.s.run?.runId === identity.data.runId) return false;
    await this.reject(identity.data, ErrorCode.INVALID_ARGUMENT, error.message);
    return true;
  }

  /** Refuses a run: a `run_end` with REJECTED (or `reason`) for its id, and a reply to its caller. */
  private async reject(
    msg: Pick<RunMessage, 'runId' | 'replyTo'>,
    code: ErrorCode,
    why: string,
    reason: AgentStopReason = AgentStopReason.REJECTED,
  ): Promise<void> {
    const result: AgentRunResult = {
      sessionId: this.sessionId,
      runId: msg.runId,
      stopReason: reason,
      finalText: '',
      steps: 0,
      usage: { inputTokens: 0, outputTokens: 0 },
      costUsd: 0,
      error: `${code}: ${why}`,
    };
    this.emit(msg.runId, TrajectoryEventType.RUN_END, undefined, { result });
    await this.commit();
    if (msg.replyTo) await this.postResult(msg.replyTo, result);
  }

  /**
   * Ends the run after its turn failed on every attempt (the actor runtime would dead-letter the
   * message and the run would never end): unanswered tool calls get an error result (so a later
   * run does not execute them), then a `run_end` with INTERNAL_ERROR is recorded and delivered.
   * For a `run` message that never started, records a refusal with INTERNAL_ERROR instead.
   * False when there is no run to end.
   */
  async endAfterFailure(why: string, runMsg?: RunMessage): Promise<boolean> {
    this.pending = []; // the failed attempt's publishes: their errors were the failure
    // Its checkpoint in flight (awaited when the attempt failed; maybe what failed) is over too.
    await this.inflight?.catch(() => undefined);
    this.inflight = undefined;
    const run = this.s.run;
    const open = run && (run.status !== 'done' || this.endUncommitted);
    if (run && open && (!runMsg || run.runId === runMsg.runId)) {
      if (this.endUncommitted) {
        // Reopen the end this attempt recorded but could not commit.
        this.endUncommitted = false;
        this.s.runsDone--;
        run.status = 'running';
        delete run.stopReason;
        delete run.finalText;
        delete run.endedAtMs;
        delete run.error;
      }
      // Publish nothing unless this state can be written (else the caller retries from the last
      // committed state): the run's end event and its state must agree.
      await this.ctx.checkpoint(this.s);
      this.answerUnrunTools(run, AgentStopReason.INTERNAL_ERROR);
      await this.end(run, AgentStopReason.INTERNAL_ERROR, '', why);
      return true;
    }
    // No run to end, or this run already ended (its end is recorded; delivering it failed).
    if (!runMsg || run?.runId === runMsg.runId) return false;
    await this.reject(runMsg, ErrorCode.INTERNAL, why, AgentStopReason.INTERNAL_ERROR);
    return true;
  }

  private toolDefs() {
    const t = this.s.template;
    if (!t) return [];
    return AGENT_TOOL_NAMES.filter((n) => holdsTool(t, n)).map((n) => toolDefinition(n));
  }

  private awaitingAsync(): boolean {
    return Object.values(this.s.subagents).some((a) => a.activeMode === 'async');
  }

  /**
   * {@link steps}, listening for mail hints meanwhile (see {@link onMailHint}); a turn that fails
   * first waits for its checkpoint in flight.
   */
  private async loop(): Promise<void> {
    for (;;) {
      this.unwatch = this.ctx.onMail(() => this.onMailHint());
      try {
        await this.steps();
        await this.stopWatching();
      } catch (err) {
        await this.stopWatching().catch(() => undefined);
        await this.inflight?.catch(() => undefined);
        throw err;
      }
      const run = this.s.run;
      // A drain on a mail hint took a message (or a cancel) after the loop decided to wait for
      // async results: nothing else would wake the run for it.
      if (
        run?.status === 'waiting' &&
        ((this.s.inbound?.length ?? 0) > 0 || run.cancelRequested || !this.awaitingAsync())
      ) {
        run.status = 'running';
        continue;
      }
      break;
    }
    // Events of a drain on a mail hint after the run's last commit.
    if (this.pending.length > 0 || this.deferred.length > 0) await this.commit();
  }

  /**
   * A message was posted to this session while its loop runs: drain the inbox now rather than at
   * the next tool boundary, so a `cancel` stops a model call, a tool or a sync subagent wait in
   * flight. Other messages wait in `inbound` for the next tool boundary, as usual.
   */
  private onMailHint(): void {
    const run = this.s.run;
    if (!this.unwatch || this.mailDrainQueued || !run || run.status === 'done') return;
    this.mailDrainQueued = true;
    this.drain(run.runId).catch((err: unknown) => {
      this.mailDrainError ??= err;
      this.deps.log.warn({ err, session: this.sessionId }, 'drain on a mail hint failed');
    });
  }

  /** Stops listening for mail hints and waits for a drain they started. */
  private async stopWatching(): Promise<void> {
    this.unwatch?.();
    this.unwatch = undefined;
    await this.drainChain;
    this.throwMailDrainError();
  }

  private throwMailDrainError(): void {
    const err = this.mailDrainError;
    if (err === undefined) return;
    this.mailDrainError = undefined;
    throw toTroupeError(err);
  }

  /** The loop: pending tool calls, inbox, limits, compaction, model call; until stop or wait. */
  private async steps(): Promise<void> {
    const { s } = this;
    const run = s.run as AgentRunState;
    const template = s.template as AgentTemplate;
    const limits = template.limits;
    const budget = new SessionBudget(run.costUsd, limits.maxCostUsd, this.deps.budget);
    for (;;) {
      // Tool results drain the inbox after each call; otherwise drain here (first step, waking).
      if (!(await this.runPendingTools(run))) await this.drain(run.runId);
      if (run.finishSummary !== undefined) {
        return this.end(run, AgentStopReason.FINISHED, run.finishSummary);
      }
      if (run.cancelRequested) return this.endCancelled(run);
      this.flushInbound(run.runId);
      if (run.steps >= limits.maxSteps) return this.end(run, AgentStopReason.MAX_STEPS);
      if (
        limits.maxTokens !== undefined &&
        run.inputTokens + run.outputTokens >= limits.maxTokens
      ) {
        return this.end(run, AgentStopReason.MAX_TOKENS);
      }
      const elapsed = this.deps.now() - run.startedAtMs;
      if (limits.maxWallMs !== undefined && elapsed >= limits.maxWallMs) {
        return this.end(run, AgentStopReason.WALL_TIME);
      }
      try {
        await this.fitState(run, budget);
        await this.maybeCompact(run, budget);
        const result = await this.deps.llm.chat({
          model: template.model,
          messages: s.messages.map(toChat),
          tools: this.toolDefs(),
          ...(template.maxTokensPerCall ? { maxTokens: template.maxTokensPerCall } : {}),
          signal: this.signal,
          budget,
          requestId: `${this.sessionId}.${run.runId}.${run.steps + 1}`.slice(0, 200),
          metadata: {
            session: this.sessionId,
            run: run.runId,
            step: run.steps + 1,
            ...(run.budgetScope ? { budgetScope: run.budgetScope } : {}),
          },
          ...(limits.maxWallMs !== undefined ? { totalTimeoutMs: limits.maxWallMs - elapsed } : {}),
        });
        run.steps++;
        run.inputTokens += result.usage.promptTokens;
        run.outputTokens += result.usage.completionTokens;
        run.costUsd += result.costUsd;
        const reply: StoredMessage = {
          role: 'assistant',
          content: result.message.content,
          ...(result.message.toolCalls.length > 0 ? { toolCalls: result.message.toolCalls } : {}),
        };
        s.messages.push(reply);
        this.emit(
          run.runId,
          TrajectoryEventType.MODEL_CALL,
          [reply],
          {
            model: result.model,
            requestId: result.requestId,
            usage: result.usage,
            costUsd: result.costUsd,
            latencyMs: result.latencyMs,
            attempts: result.attempts,
            finishReason: result.finishReason,
          },
          { defer: true },
        );
        if (result.message.toolCalls.length === 0) {
          // Messages taken during the call (a drain on a mail hint): the model answers them.
          if ((s.inbound?.length ?? 0) > 0) {
            await this.commit();
            continue;
          }
          if (this.awaitingAsync()) {
            run.status = 'waiting';
            await this.commit();
            return;
          }
          if (run.continues < template.maxAutoContinues) {
            run.continues++;
            const prompt: StoredMessage = { role: 'user', content: CONTINUE_PROMPT };
            s.messages.push(prompt);
            this.emit(run.runId, TrajectoryEventType.MESSAGE, [prompt], { from: 'continue' });
            await this.commit();
            continue;
          }
          return this.end(run, AgentStopReason.NO_TOOL_CALLS, result.message.content ?? '');
        }
        // A tool with an external effect runs only once the reply that asked for it is committed:
        // after a crash it is repeated only if its own result was not. Effect-free tools run at
        // once, and the reply is committed with their results.
        if (!result.message.toolCalls.every((c) => this.effectFree(c))) await this.commit();
      } catch (err) {
        if (this.ctx.signal.aborted) throw err; // shutdown or fenced: the runtime replays the run
        if (run.cancelRequested) return this.endCancelled(run); // the call was aborted
        const e = toTroupeError(err);
        if (hasErrorCode(e, ErrorCode.BUDGET_EXHAUSTED)) {
          return this.end(run, AgentStopReason.BUDGET_EXHAUSTED, undefined, e.message);
        }
        if (hasErrorCode(e, ErrorCode.TIMEOUT) && limits.maxWallMs !== undefined) {
          return this.end(run, AgentStopReason.WALL_TIME, undefined, e.message);
        }
        if (e.retryable && errorCode(e) !== ErrorCode.UNAVAILABLE) throw e;
        return this.end(run, AgentStopReason.MODEL_ERROR, undefined, `${e.code}: ${e.message}`);
      }
    }
  }

  /**
   * Runs the tool calls of the last assistant message that have no result yet, draining the
   * inbox after each; true when it ran any.
   */
  private async runPendingTools(run: AgentRunState): Promise<boolean> {
    const { s } = this;
    let last = -1;
    for (let i = s.messages.length - 1; i >= 0; i--) {
      if (s.messages[i]?.role === 'assistant') {
        last = i;
        break;
      }
    }
    const assistant = s.messages[last];
    if (!assistant || assistant.role !== 'assistant' || !assistant.toolCalls) return false;
    const answered = new Set(
      s.messages.slice(last + 1).flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])),
    );
    let ran = false;
    for (const call of assistant.toolCalls) {
      if (answered.has(call.id)) continue;
      // A safe point: a cancel posted during the model call stops the run before any tool runs.
      if (!ran) await this.drain(run.runId);
      ran = true;
      if (run.cancelRequested) return ran;
      // Everything before an external effect is committed first (see steps()).
      if (!this.effectFree(call)) await this.settle();
      // Watchers see a tool with an external effect before it runs; an effect-free one (fast,
      // no sandbox change) is published with its result.
      this.emit(
        run.runId,
        TrajectoryEventType.TOOL_CALL,
        undefined,
        { toolCallId: call.id, name: call.name, argumentsText: call.argumentsText },
        { defer: this.effectFree(call) },
      );
      const outcome = await this.execute(call, last);
      const template = s.template as AgentTemplate;
      const message: StoredMessage = {
        role: 'tool',
        toolCallId: call.id,
        content: headTail(outcome.content, template.maxToolOutputChars),
      };
      s.messages.push(message);
      this.emit(
        run.runId,
        TrajectoryEventType.TOOL_RESULT,
        [message],
        {
          toolCallId: call.id,
          name: call.name,
          ok: outcome.ok,
          ...(message.content.length < outcome.content.length
            ? { fullContent: outcome.content }
            : {}),
        },
        { defer: true }, // published with the checkpoint that follows
      );
      if (outcome.finish !== undefined) run.finishSummary ??= outcome.finish;
      await this.drain(run.runId);
      await this.commitSoon();
    }
    return ran;
  }

  /**
   * Takes posted messages that arrived during the turn (a tool boundary, or a mail hint) into
   * `inbound`; a `cancel` of the run marks it (see {@link takeCancel}). One drain at a time.
   */
  private drain(runId: string): Promise<void> {
    const next = this.drainChain.then(() => {
      this.mailDrainQueued = false;
      return this.drainNow(runId);
    });
    this.drainChain = next.catch(() => undefined);
    return next.then(() => this.throwMailDrainError());
  }

  private async drainNow(runId: string): Promise<void> {
    const got: InboxMessage[] = await this.ctx.drainInbox();
    for (const m of got) {
      if (m.type === 'cancel') {
        const parsed = CancelMessageSchema.safeParse(m.payload);
        if (parsed.success) this.takeCancel(parsed.data);
        continue;
      }
      if (m.type === 'run') {
        const parsed = RunMessageSchema.safeParse(m.payload);
        if (parsed.success) {
          await this.reject(
            parsed.data,
            ErrorCode.BUSY,
            `session ${this.sessionId} has run ${runId} in progress`,
          );
        }
        continue;
      }
      this.accept(m);
    }
  }

  /** Turns an inbound message or subagent result into a pending user message. */
  private accept(m: InboxMessage): void {
    const { s } = this;
    const template = s.template;
    const runId = s.run?.runId ?? 'none';
    if (m.type === 'message') {
      const parsed = AgentTextMessageSchema.safeParse(m.payload);
      if (!parsed.success) return;
      const { from, text, pinned } = parsed.data;
      const max = template?.maxMessageChars ?? 8_000;
      let content = `[message from ${from}]\n${text}`;
      const seq = s.eventSeq + 1;
      if (content.length > max) {
        content = `[message from ${from}]\n${text.slice(0, max)}\n…[message truncated: ${max} of ${text.length} characters shown; the full text is in trajectory event ${this.sessionId}#${seq}]`;
      }
      const message: StoredMessage = { role: 'user', content, ...(pinned ? { pinned } : {}) };
      s.inbound = [...(s.inbound ?? []), message];
      this.emit(runId, TrajectoryEventType.MESSAGE, undefined, {
        from,
        fullText: text,
        truncated: content.length < text.length,
      });
    } else if (m.type === 'subagentResult') {
      const parsed = SubagentResultMessageSchema.safeParse(m.payload);
      if (!parsed.success) return;
      const { callId, result } = parsed.data;
      if (s.run && s.run.status !== 'done') addSubagentSpend(s.run, result);
      const child = Object.values(s.subagents).find((a) => a.activeCallId === callId);
      if (child) {
        delete child.activeCallId;
        delete child.activeRunId;
        delete child.activeMode;
      }
      const message: StoredMessage = {
        role: 'user',
        content: `[async result of subagent ${child?.name ?? result.sessionId} (call ${callId})]\n${formatResult(result)}`,
      };
      s.inbound = [...(s.inbound ?? []), message];
      this.emit(runId, TrajectoryEventType.MESSAGE, undefined, {
        from: result.sessionId,
        callId,
        stopReason: result.stopReason,
      });
    }
  }

  /** Moves pending inbound messages into the conversation (only between tool batches). */
  private flushInbound(runId: string): void {
    const { s } = this;
    if (!s.inbound || s.inbound.length === 0) return;
    const moved = s.inbound;
    s.inbound = [];
    s.messages.push(...moved);
    this.emit(runId, TrajectoryEventType.MESSAGE, moved, { delivered: moved.length });
  }

  /**
   * Keeps the serialized state — one KV value, bounded by the NATS server's `max_payload` — under
   * `maxStateBytes`. Above it: compaction is forced when the template configures one; whatever
   * is still above half the limit is shrunk by replacing older messages' text with a reference to
   * the trajectory, which keeps every message in full. Measured exactly only when a cheap bound on
   * the growth since the last measurement says the limit may be near.
   */
  private async fitState(run: AgentRunState, budget: BudgetHook): Promise<void> {
    const limit = this.deps.maxStateBytes;
    const { sized } = this;
    const chars = growingChars(this.s);
    if (sized && sized.bytes + (chars - sized.chars) * MAX_JSON_BYTES_PER_CHAR <= limit) return;
    const beforeBytes = this.measureState();
    if (beforeBytes <= limit) return;
    const target = Math.floor(limit / 2);
    let bytes = beforeBytes;
    if ((this.s.template as AgentTemplate).compaction) {
      await this.maybeCompact(run, budget, true);
      bytes = this.measureState();
      if (bytes <= target) return;
    }
    const { elided } = elideOlderMessages(this.s.messages, this.sessionId, bytes - target);
    bytes = this.measureState();
    // Elided messages still cost their structure: a long enough session then drops an older
    // window from the context altogether (a compaction without a model; pinned messages stay).
    let removed = 0;
    const window =
      bytes > target ? findCompactionWindow(this.s.messages, Math.floor(target / 4)) : undefined;
    if (window) {
      removed = window.end - window.start;
      this.s.messages = applyCompaction(
        this.s.messages,
        window,
        `[removed from the context to keep the session state under ${limit} bytes; the full text is in the trajectory of session ${this.sessionId}]`,
      );
    }
    const afterBytes = removed > 0 ? this.measureState() : bytes;
    if (afterBytes > limit) {
      this.deps.log.warn(
        { session: this.sessionId, bytes: afterBytes, maxStateBytes: limit },
        'session state stays above maxStateBytes after eliding older messages',
      );
    }
    this.emit(run.runId, TrajectoryEventType.COMPACTION, undefined, {
      strategy: 'elide',
      reason: 'state_size',
      elidedMessages: elided,
      removedMessages: removed,
      beforeBytes,
      afterBytes,
      maxStateBytes: limit,
    });
    await this.commit();
  }

  private measureState(): number {
    const bytes = stateBytes(this.s);
    this.sized = { bytes, chars: growingChars(this.s) };
    return bytes;
  }

  /** Summarises an older window above the template's budget (or at once: `force`). */
  private async maybeCompact(run: AgentRunState, budget: BudgetHook, force = false): Promise<void> {
    const { s } = this;
    const cfg = (s.template as AgentTemplate).compaction;
    if (!cfg) return;
    const before = conversationChars(s.messages);
    if (before <= cfg.maxChars && !force) return;
    const window = findCompactionWindow(
      s.messages,
      cfg.keepRecentChars ?? Math.floor(cfg.maxChars / 4),
    );
    if (!window) return;
    const model = cfg.model ?? (s.template as AgentTemplate).model;
    const result = await this.deps.llm.chat({
      model,
      messages: summaryPrompt(s.messages.slice(window.start, window.end)),
      signal: this.signal,
      budget,
      metadata: {
        session: this.sessionId,
        run: run.runId,
        purpose: 'compaction',
        ...(run.budgetScope ? { budgetScope: run.budgetScope } : {}),
      },
    });
    run.inputTokens += result.usage.promptTokens;
    run.outputTokens += result.usage.completionTokens;
    run.costUsd += result.costUsd;
    const summary = result.message.content ?? '';
    s.messages = applyCompaction(s.messages, window, summary);
    this.emit(run.runId, TrajectoryEventType.COMPACTION, undefined, {
      model,
      removedMessages: window.end - window.start,
      beforeChars: before,
      afterChars: conversationChars(s.messages),
      summary,
      costUsd: result.costUsd,
      ...(force ? { reason: 'state_size' } : {}),
    });
    await this.commit();
  }

  private async end(
    run: AgentRunState,
    reason: AgentStopReason,
    finalText?: string,
    error?: string,
  ): Promise<void> {
    run.status = 'done';
    run.stopReason = reason;
    run.finalText = finalText ?? lastAssistantText(this.s.messages);
    if (error !== undefined) run.error = error;
    run.endedAtMs = this.deps.now();
    if (!this.endUncommitted) this.s.runsDone++;
    this.endUncommitted = true;
    this.flushInbound(run.runId);
    this.emit(run.runId, TrajectoryEventType.RUN_END, undefined, { result: this.resultOf(run) });
    await this.commit();
    this.endUncommitted = false;
    await this.deliverResult(run);
  }

  private resultOf(run: AgentRunState): AgentRunResult {
    return {
      sessionId: this.sessionId,
      runId: run.runId,
      stopReason: run.stopReason ?? AgentStopReason.MODEL_ERROR,
      finalText: run.finalText ?? '',
      steps: run.steps,
      // Subagents' spend is reported here (their calls were charged to the ledger already).
      usage: {
        inputTokens: run.inputTokens + (run.subagentInputTokens ?? 0),
        outputTokens: run.outputTokens + (run.subagentOutputTokens ?? 0),
      },
      costUsd: run.costUsd + (run.subagentCostUsd ?? 0),
      ...(run.subagentCostUsd !== undefined
        ? {
            subagents: {
              costUsd: run.subagentCostUsd,
              inputTokens: run.subagentInputTokens ?? 0,
              outputTokens: run.subagentOutputTokens ?? 0,
            },
          }
        : {}),
      ...(run.error !== undefined ? { error: run.error } : {}),
    };
  }

  private async deliverResult(run: AgentRunState): Promise<void> {
    if (run.replyTo) await this.postResult(run.replyTo, this.resultOf(run));
  }

  private async postResult(
    replyTo: { kind: string; id: string; callId: string },
    result: AgentRunResult,
  ): Promise<void> {
    await this.ctx.refs
      .refOf({ kind: replyTo.kind, id: replyTo.id })
      .post(
        'subagentResult',
        { callId: replyTo.callId, result },
        { dedupeId: `result:${result.runId}` },
      );
  }

  // ---- tools ---------------------------------------------------------------------------------

  private async execute(call: ToolCall, assistantIndex: number): Promise<ToolOutcome> {
    const template = this.s.template as AgentTemplate;
    if (
      !(AGENT_TOOL_NAMES as readonly string[]).includes(call.name) ||
      !holdsTool(template, call.name)
    ) {
      const held = AGENT_TOOL_NAMES.filter((n) => holdsTool(template, n));
      return {
        ok: false,
        content: `error: unknown tool '${call.name}'; your tools: ${held.join(', ')}`,
      };
    }
    const name = call.name as AgentToolName;
    let raw: unknown;
    try {
      raw = call.argumentsText.trim() === '' ? {} : JSON.parse(call.argumentsText);
    } catch (err) {
      return {
        ok: false,
        content: `error: the arguments of ${name} are not valid JSON (${(err as Error).message}); send a JSON object`,
      };
    }
    const parsed = AgentToolArgs[name].safeParse(raw);
    if (!parsed.success) {
      return {
        ok: false,
        content: `error: ${fromZodError(parsed.error, { prefix: 'arguments' }).message}`,
      };
    }
    try {
      return await this.dispatch(name, parsed.data, call, assistantIndex);
    } catch (err) {
      if (this.ctx.signal.aborted) throw err;
      const e = toTroupeError(err);
      return { ok: false, content: `error: ${e.code}: ${e.message}` };
    }
  }

  private port(): SandboxPort {
    const id = this.s.sandboxId;
    if (!id) throw new TroupeError(ErrorCode.INVALID_ARGUMENT, 'this session has no sandbox');
    return this.deps.sandbox(this.ctx, id);
  }

  private async dispatch(
    name: AgentToolName,
    args: unknown,
    call: ToolCall,
    assistantIndex: number,
  ): Promise<ToolOutcome> {
    const signal = this.signal;
    switch (name) {
      case T.RUN_TERMINAL_COMMAND: {
        const a = args as {
          command?: string;
          action: string;
          background: boolean;
          job_id?: string;
          timeout_s: number;
        };
        const port = this.port();
        if (a.action === 'poll' || a.action === 'kill') {
          const job =
            a.action === 'poll'
              ? await port.poll(a.job_id as string, { signal })
              : await port.kill(a.job_id as string, { signal });
          return {
            ok: true,
            content: `job ${job.jobId}: ${job.state}${job.exitCode !== undefined ? `, exit code ${job.exitCode}` : ''}${section('stdout', job.stdout)}${section('stderr', job.stderr)}`,
          };
        }
        if (a.background) {
          const jobId = await port.startBackground(a.command as string, { signal });
          return {
            ok: true,
            content: `started background job ${jobId}; use action "poll" or "kill" with job_id "${jobId}"`,
          };
        }
        const r = await port.exec(a.command as string, { timeoutMs: a.timeout_s * 1000, signal });
        return {
          ok: r.exitCode === 0 && !r.timedOut,
          content: `exit code: ${r.exitCode}${r.timedOut ? ` (timed out after ${a.timeout_s} s, killed)` : ''}${section('stdout', r.stdout)}${section('stderr', r.stderr)}`,
        };
      }
      case T.VIEW_FILE: {
        const a = args as { path: string; start_line?: number; end_line?: number };
        const text = await this.port().readFile(a.path, { signal });
        const lines = text.split('\n');
        if (lines.at(-1) === '') lines.pop();
        const from = a.start_line ?? 1;
        const to = Math.min(a.end_line ?? lines.length, lines.length);
        if (from > Math.max(lines.length, 1)) {
          return {
            ok: false,
            content: `error: \`arguments.start_line\`: ${a.path} has ${lines.length} lines`,
          };
        }
        const shown = lines
          .slice(from - 1, to)
          .map((l, i) => `${String(from + i).padStart(6)}\t${l}`);
        return {
          ok: true,
          content: `${a.path} (lines ${from}-${to} of ${lines.length})\n${shown.join('\n')}`,
        };
      }
      case T.EDIT_FILE: {
        const a = args as { path: string; old_text: string; new_text: string };
        const port = this.port();
        const text = await port.readFile(a.path, { signal });
        const next = replaceExact(text, a.old_text, a.new_text, a.path);
        await port.writeFile(a.path, next, { signal });
        return { ok: true, content: `edited ${a.path}: replaced 1 occurrence` };
      }
      case T.WRITE_FILE: {
        const a = args as { path: string; content: string };
        await this.port().writeFile(a.path, a.content, { signal });
        return { ok: true, content: `wrote ${Buffer.byteLength(a.content)} bytes to ${a.path}` };
      }
      case T.FINISH_TASK: {
        const a = args as { summary: string };
        return { ok: true, content: 'task finished', finish: a.summary };
      }
      case T.CREATE_SUBAGENT:
        return this.createSubagent(
          args as { name: string; instruction: string; model: string; tools: AgentToolName[] },
        );
      case T.CALL_SUBAGENT:
        return this.callSubagent(
          args as {
            target: string;
            request: string;
            mode: 'sync' | 'async';
            use_parent_history: boolean;
          },
          call,
          assistantIndex,
        );
      case T.SEND_MESSAGE: {
        const a = args as { to: string; text: string };
        const { parentSessionId, siblings = [] } = this.s;
        const target =
          a.to === 'parent'
            ? parentSessionId
            : (this.s.subagents[a.to]?.sessionId ??
              (parentSessionId && siblings.includes(a.to)
                ? `${parentSessionId}__${a.to}`
                : undefined));
        if (!target) {
          const known = [
            ...(parentSessionId ? ['parent'] : []),
            ...Object.keys(this.s.subagents),
            ...(parentSessionId ? siblings : []),
          ];
          return {
            ok: false,
            content: `error: \`arguments.to\`: no agent '${a.to}' (known: ${known.join(', ') || 'none'})`,
          };
        }
        await this.ctx.refs
          .refOf({ kind: AGENT_KIND, id: target })
          .post(
            'message',
            { from: this.sessionId, text: a.text },
            { dedupeId: `msg:${this.sessionId}:${call.id}`, signal },
          );
        return { ok: true, content: `message sent to ${a.to}` };
      }
      case T.LIST_AGENTS: {
        const rows = Object.values(this.s.subagents).map(
          (a) =>
            `- ${a.name} (session ${a.sessionId}, model ${a.model}, tools [${a.tools.join(', ')}])${a.activeCallId ? ' BUSY' : ''}`,
        );
        const parent = this.s.parentSessionId ? `parent: ${this.s.parentSessionId}\n` : '';
        const siblings = this.s.siblings?.length ? `siblings: ${this.s.siblings.join(', ')}\n` : '';
        return {
          ok: true,
          content: `${parent}${siblings}subagents:\n${rows.join('\n') || '(none)'}`,
        };
      }
    }
  }

  private createSubagent(a: {
    name: string;
    instruction: string;
    model: string;
    tools: AgentToolName[];
  }): ToolOutcome {
    const template = this.s.template as AgentTemplate;
    const lacking = a.tools.filter((t) => !holdsTool(template, t));
    if (lacking.length > 0) {
      return {
        ok: false,
        content: `error: PERMISSION_DENIED: \`arguments.tools\`: a subagent may only get tools you hold; you lack ${lacking.join(', ')}`,
      };
    }
    if (new Set(a.tools).size !== a.tools.length) {
      return { ok: false, content: 'error: `arguments.tools`: must not repeat a tool' };
    }
    const model = a.model === 'inherit' ? template.model : a.model;
    if (!this.deps.llm.registry.has(model)) {
      return {
        ok: false,
        content: `error: \`arguments.model\`: '${model}' is not a registered model (registered: ${this.deps.llm.registry.names().join(', ')}, or inherit)`,
      };
    }
    if (this.s.subagents[a.name]) {
      return {
        ok: false,
        content: `error: ALREADY_EXISTS: \`arguments.name\`: a subagent '${a.name}' exists`,
      };
    }
    const sessionId = `${this.sessionId}__${a.name}`;
    if (sessionId.length > 128) {
      return {
        ok: false,
        content: `error: \`arguments.name\`: the subagent's session id would exceed 128 characters`,
      };
    }
    this.s.subagents[a.name] = {
      name: a.name,
      sessionId,
      instruction: a.instruction,
      model,
      tools: a.tools,
    };
    return {
      ok: true,
      content: `created subagent ${a.name} (session ${sessionId}, model ${model}, tools [${a.tools.join(', ')}])`,
    };
  }

  private async callSubagent(
    a: { target: string; request: string; mode: 'sync' | 'async'; use_parent_history: boolean },
    call: ToolCall,
    assistantIndex: number,
  ): Promise<ToolOutcome> {
    const { s } = this;
    const child = s.subagents[a.target];
    if (!child) {
      return {
        ok: false,
        content: `error: NOT_FOUND: \`arguments.target\`: no subagent '${a.target}' (yours: ${Object.keys(s.subagents).join(', ') || 'none'})`,
      };
    }
    const ref = this.ctx.refs.refOf({ kind: AGENT_KIND, id: child.sessionId });
    const runId = this.subagentRunId(call.id);
    const resuming = child.activeCallId === call.id;
    if (!resuming) {
      if (child.activeCallId) {
        return {
          ok: false,
          content: `error: BUSY: subagent ${a.target} is running (call ${child.activeCallId}); wait for its result`,
        };
      }
      try {
        await ref.ask('status', {}, { requireIdle: true, timeoutMs: 15_000, signal: this.signal });
      } catch (err) {
        if (hasErrorCode(err, ErrorCode.BUSY)) {
          return {
            ok: false,
            content: `error: BUSY: subagent ${a.target} is running; wait for its result`,
          };
        }
        throw err;
      }
      child.activeCallId = call.id;
      child.activeRunId = runId;
      child.activeMode = a.mode;
      // Remember the call before starting it, so a resumed turn waits instead of calling again.
      await this.commit();
    }
    const parent = this.s.template as AgentTemplate;
    const history = a.use_parent_history
      ? s.messages.slice(0, assistantIndex).filter((m) => m.role !== 'system')
      : undefined;
    await ref.post(
      'run',
      {
        runId,
        task: a.request,
        template: {
          ...parent,
          name: child.name,
          instruction: child.instruction,
          model: child.model,
          tools: child.tools,
          compaction: parent.compaction,
        },
        ...(s.sandboxId ? { sandboxId: s.sandboxId } : {}),
        parentSessionId: this.sessionId,
        siblings: Object.keys(s.subagents).filter((n) => n !== child.name),
        ...(s.run?.budgetScope ? { budgetScope: s.run.budgetScope } : {}),
        ...(a.mode === 'async'
          ? { replyTo: { kind: AGENT_KIND, id: this.sessionId, callId: call.id } }
          : {}),
        ...(history ? { history } : {}),
      },
      { dedupeId: `run:${runId}`, signal: this.signal },
    );
    if (a.mode === 'async') {
      return {
        ok: true,
        content: `subagent ${a.target} started (call ${call.id}, session ${child.sessionId}); its result will arrive as a message`,
      };
    }
    const signal = AbortSignal.any([this.signal, AbortSignal.timeout(this.deps.subagentTimeoutMs)]);
    let result: AgentRunResult;
    try {
      result = AgentRunResultSchema.parse(
        await this.deps.trajectories.waitForRunEnd(child.sessionId, runId, { signal }),
      );
    } finally {
      // Cancelled: the call stays recorded, so the run's end cancels the child too.
      if (!this.signal.aborted) {
        delete child.activeCallId;
        delete child.activeRunId;
        delete child.activeMode;
      }
    }
    if (s.run) addSubagentSpend(s.run, result);
    return {
      ok:
        result.stopReason !== AgentStopReason.REJECTED &&
        result.stopReason !== AgentStopReason.MODEL_ERROR &&
        result.stopReason !== AgentStopReason.INTERNAL_ERROR,
      content: `subagent ${a.target} (session ${result.sessionId}) ${formatResult(result)}`,
    };
  }
}

/** A stored message as the LLM client takes it (the `pinned` mark stays behind). */
function toChat(m: StoredMessage): ChatMessage {
  switch (m.role) {
    case 'assistant':
      return {
        role: 'assistant',
        content: m.content,
        ...(m.toolCalls ? { toolCalls: m.toolCalls } : {}),
      };
    case 'tool':
      return { role: 'tool', toolCallId: m.toolCallId, content: m.content };
    default:
      return { role: m.role, content: m.content };
  }
}

/** Adds what a subagent's run reported (its own calls and its subagents') to the caller's run. */
function addSubagentSpend(run: AgentRunState, result: AgentRunResult): void {
  run.subagentCostUsd = (run.subagentCostUsd ?? 0) + result.costUsd;
  run.subagentInputTokens = (run.subagentInputTokens ?? 0) + result.usage.inputTokens;
  run.subagentOutputTokens = (run.subagentOutputTokens ?? 0) + result.usage.outputTokens;
}

function section(name: string, text: string): string {
  return text.length > 0 ? `\n--- ${name} ---\n${text}` : '';
}

function lastAssistantText(messages: readonly StoredMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role === 'assistant' && m.content) return m.content;
  }
  return '';
}

function formatResult(r: AgentRunResult): string {
  const head = `finished: ${r.stopReason} after ${r.steps} steps`;
  return r.error ? `${head} (${r.error})\n${r.finalText}` : `${head}\n${r.finalText}`;
}
