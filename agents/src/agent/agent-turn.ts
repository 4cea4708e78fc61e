import { type ActorContext, type Logger } from '@troupe/actors';
import {
  CancelReason,
  cancelledError,
  ErrorCode,
  type TroupeError,
  toTroupeError,
} from '@troupe/proto';
import { type z } from 'zod';
import type { BudgetHook, LlmClient } from '@troupe/llm';
import {
  type AgentRunResult,
  type CancelMessageSchema,
  InvalidRunIdentitySchema,
  type RunMessage,
  type RunMessageSchema,
} from './agent-messages';
import {
  type AgentRunState,
  type AgentSessionState,
  type RunningSession,
  runningSession,
  type StoredMessage,
} from './agent-state';
import { AgentStopReason } from './agent-stop-reason';
import { heldToolDefinitions } from './agent-tool-args';
import { Checkpointer } from './checkpointer';
import { ContextFitter } from './context-fitter';
import { buildMiddlewareChain, type MiddlewarePlugins } from './middleware/build-chain';
import { continuationPrompt } from './middleware/continuation';
import type { MiddlewareContext, RunMiddleware } from './middleware/middleware';
import { modelStep, toChat } from './model-step';
import { skillCatalogue } from '../skills/skill-catalogue';
import type { SkillSource } from '../skills/skill-store';
import type { MemoryStore } from '../memory/memory-store';
import { memoryPrompt } from '../memory/memory-tools';
import { type McpSessions, type SessionMcp, sessionMcp } from '../mcp/mcp-sessions';
import { limitReached, modelFailureStop } from './run-limits';
import { runResult } from './run-result';
import { startRun } from './run-start';
import type { SandboxPort } from './sandbox-port';
import type { SandboxProvisioner } from '../sandboxes/sandbox-provisioner';
import { SessionSandboxes } from '../sandboxes/session-sandboxes';
import { MAIN_SANDBOX } from '../sandboxes/sandbox-template';
import { SessionBudget } from './session-budget';
import { SubagentCalls } from './subagent-calls';
import { ToolBatch } from './tool-batch';
import { isEffectFree } from './tools/agent-tools';
import { TrajectoryEventType } from './trajectory-event';
import type { TrajectoryStore } from './trajectory-store';
import { TurnInbox } from './turn-inbox';

/** What every turn of an agent needs (from {@link createAgentActor}). */
export interface AgentTurnDeps {
  llm: LlmClient;
  trajectories: TrajectoryStore;
  sandbox: (ctx: ActorContext<AgentSessionState>, sandboxId: string) => SandboxPort;
  /** Creates and destroys the sandboxes templates declare. */
  provisioner: (ctx: ActorContext<AgentSessionState>) => SandboxProvisioner;
  budget: BudgetHook | undefined;
  log: Logger;
  subagentTimeoutMs: number;
  now: () => number;
  /** Serialized session state size above which the context is shrunk (see ContextFitter). */
  maxStateBytes: number;
  /** Middleware plugins this host offers to templates (`{use: plugin, name}`). */
  plugins: MiddlewarePlugins;
  /** The cluster's skills (templates' `skills`, `load_skill`). */
  skills: SkillSource | undefined;
  /** The cluster's memory store (templates' `memory`, the memory tools). */
  memory: MemoryStore | undefined;
  /** The sessions' MCP connections on this host (templates' `mcp`). */
  mcp?: McpSessions | undefined;
}

/**
 * One handler turn of an agent session: the run's lifecycle (start, resume, refuse, cancel, end)
 * and its step loop, on a working copy of the state. Its parts: the {@link Checkpointer}
 * (trajectory events and checkpoints), the {@link TurnInbox} (messages taken mid-run), the
 * {@link ContextFitter} (compaction and the state's size), {@link SubagentCalls}, and the
 * {@link ToolBatch} running the tools (`tools/`, one file each).
 */
export class AgentTurn {
  /** An end was recorded in the working copy but its commit failed. */
  private endUncommitted = false;
  /** Aborted when this turn takes a `cancel` of its run: stops the model call, tool or wait. */
  private readonly cancelled = new AbortController();
  private signalCache: AbortSignal | undefined;
  private readonly events: Checkpointer<AgentSessionState>;
  private readonly inbox: TurnInbox;
  private readonly subagents: SubagentCalls;
  private readonly fitter: ContextFitter;
  private readonly tools: ToolBatch;
  private readonly sandboxes: SessionSandboxes;

  constructor(
    private readonly ctx: ActorContext<AgentSessionState>,
    readonly s: AgentSessionState,
    private readonly deps: AgentTurnDeps,
  ) {
    const sessionId = ctx.self.id;
    const signal = () => this.signal;
    this.events = new Checkpointer({
      state: s,
      sessionId,
      epoch: ctx.epoch,
      now: deps.now,
      append: (e) => deps.trajectories.append(e),
      checkpoint: (state) => ctx.checkpoint(state),
    });
    const events = this.events;
    const log = deps.log;
    this.inbox = new TurnInbox({
      ctx,
      session: s,
      sessionId,
      checkpointer: events,
      log,
      onCancel: (msg) => this.takeCancel(msg),
      onRun: (msg, runId) => this.refuseBusy(msg, runId),
    });
    this.sandboxes = new SessionSandboxes({
      session: s,
      sessionId,
      port: (sandboxId) => deps.sandbox(ctx, sandboxId),
      provisioner: deps.provisioner(ctx),
      commit: () => events.commit(),
      halt: ctx.signal,
      log,
    });
    this.subagents = new SubagentCalls({
      session: s,
      sandboxes: this.sandboxes,
      sessionId,
      refs: ctx.refs,
      trajectories: deps.trajectories,
      timeoutMs: deps.subagentTimeoutMs,
      signal,
      turnSignal: ctx.signal,
      commit: () => events.commit(),
    });
    this.fitter = new ContextFitter({
      sessionId,
      llm: deps.llm,
      log,
      maxStateBytes: deps.maxStateBytes,
      checkpointer: events,
      signal,
    });
    this.tools = new ToolBatch({
      sessionId,
      checkpointer: events,
      drain: (runId) => this.inbox.drain(runId),
      signal,
      halt: ctx.signal,
      sandboxes: this.sandboxes,
      refs: ctx.refs,
      models: deps.llm.registry,
      subagents: this.subagents,
      skills: deps.skills,
      memory: deps.memory,
      mcp: (s) => this.mcp(s),
    });
  }

  /** The session's MCP tools for this turn (trajectory events go to its run). */
  private mcp(s: RunningSession): SessionMcp | undefined {
    return sessionMcp(this.deps.mcp, this.sessionId, {
      config: s.template.mcp,
      // A session with stdio servers holds `main` (refused at run start otherwise).
      sandbox: () => this.sandboxes.port(MAIN_SANDBOX, { signal: this.signal }),
      signal: this.signal,
      onEvent: (e) =>
        this.events.emit(s.run.runId, TrajectoryEventType.MCP_SERVER, undefined, { ...e }),
    });
  }

  private get sessionId(): string {
    return this.ctx.self.id;
  }

  /** The turn's signal, also aborted once the turn takes a `cancel` of its run. */
  private get signal(): AbortSignal {
    return (this.signalCache ??= AbortSignal.any([this.ctx.signal, this.cancelled.signal]));
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
      await this.refuseBusy(msg, s.run.runId);
      return;
    }
    const requested = msg.template ?? s.template;
    const skills = await skillCatalogue(requested, this.deps.skills);
    if (!skills.ok) return this.reject(msg, skills.code, skills.why);
    if (requested?.memory && !this.deps.memory) {
      const why = '`run.template.memory`: this agent host has no memory store';
      return this.reject(msg, ErrorCode.INVALID_ARGUMENT, why);
    }
    const extra = [skills.text, requested?.memory ? memoryPrompt(requested.memory) : undefined];
    const start = startRun(s, msg, {
      sessionId: this.sessionId,
      models: this.deps.llm.registry,
      now: this.deps.now,
      plugins: this.deps.plugins,
      promptExtra: extra.filter((t) => t !== undefined).join('\n\n') || undefined,
    });
    if (!start.ok) return this.reject(msg, start.code, start.why);
    const { template, added } = start;
    this.events.emit(msg.runId, TrajectoryEventType.RUN_START, added, {
      template: template.name,
      model: template.model,
      tools: heldToolDefinitions(template).map((d) => ({ type: 'function', function: d })),
      ...(s.sandboxes ? { sandboxes: structuredClone(s.sandboxes) } : {}),
    });
    await this.events.commit();
    await this.loop();
  }

  /** Handles a posted text message or subagent result outside a run's turn. */
  async inbound(type: string, payload: unknown): Promise<void> {
    // A replay after a checkpoint of this turn (crash, or a retry after a failure): the state
    // already holds the message; accepting it again would deliver (and roll up) it twice.
    if (!this.ctx.resumed) this.inbox.accept({ type, payload });
    const run = this.s.run;
    // Any message wakes a session that waits for async results; with nothing to do it waits again.
    if (run && run.status === 'waiting') run.status = 'running';
    if (run && run.status !== 'done') this.inbox.flush(run.runId);
    await this.events.commit();
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
    else await this.events.commit();
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
    this.events.emit(run.runId, TrajectoryEventType.CANCEL, undefined, {
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
    this.tools.answerUnrun(this.s, run.runId, AgentStopReason.CANCELLED);
    const why = `parent session ${this.sessionId} was cancelled${reason ? `: ${reason}` : ''}`;
    await this.subagents.cancelAll(why);
    await this.end(
      run,
      AgentStopReason.CANCELLED,
      undefined,
      `cancelled${reason ? `: ${reason}` : ''}`,
    );
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

  /** Refuses a run while run `runId` is in progress (BUSY). */
  private refuseBusy(msg: Pick<RunMessage, 'runId' | 'replyTo'>, runId: string): Promise<void> {
    return this.reject(
      msg,
      ErrorCode.BUSY,
      `session ${this.sessionId} has run ${runId} in progress`,
    );
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
    this.events.emit(msg.runId, TrajectoryEventType.RUN_END, undefined, { result });
    await this.events.commit();
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
    // The failed attempt's publishes (their errors were the failure) and its checkpoint in flight
    // (awaited when the attempt failed; maybe what failed) are over.
    await this.events.abandon();
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
      this.tools.answerUnrun(this.s, run.runId, AgentStopReason.INTERNAL_ERROR);
      await this.end(run, AgentStopReason.INTERNAL_ERROR, '', why);
      return true;
    }
    // No run to end, or this run already ended (its end is recorded; delivering it failed).
    if (!runMsg || run?.runId === runMsg.runId) return false;
    await this.reject(runMsg, ErrorCode.INTERNAL, why, AgentStopReason.INTERNAL_ERROR);
    return true;
  }

  /**
   * {@link steps}, listening for mail hints meanwhile (see {@link TurnInbox}); a turn that fails
   * first waits for its checkpoint in flight.
   */
  private async loop(): Promise<void> {
    for (;;) {
      this.inbox.watch();
      try {
        await this.steps(runningSession(this.s));
        await this.inbox.stopWatching();
      } catch (err) {
        await this.inbox.stopWatching().catch(() => undefined);
        await this.events.quiesce();
        throw err;
      }
      const run = this.s.run;
      // A drain on a mail hint took a message (or a cancel) after the loop decided to wait for
      // async results: nothing else would wake the run for it.
      if (
        run?.status === 'waiting' &&
        ((this.s.inbound?.length ?? 0) > 0 ||
          run.cancelRequested ||
          !this.subagents.awaitingAsync())
      ) {
        run.status = 'running';
        continue;
      }
      break;
    }
    // Events of a drain on a mail hint after the run's last commit.
    if (this.events.uncommitted) await this.events.commit();
  }

  /** The loop: pending tool calls, inbox, limits, compaction, model call; until stop or wait. */
  private async steps(s: RunningSession): Promise<void> {
    const { run, template } = s;
    const limits = template.limits;
    const budget = new SessionBudget(run.costUsd, limits.maxCostUsd, this.deps.budget);
    const middleware = this.runMiddleware(s, budget);
    for (;;) {
      // Tool results drain the inbox after each call; otherwise drain here (first step, waking).
      if (!(await this.tools.runPending(s, middleware))) await this.inbox.drain(run.runId);
      if (run.finishSummary !== undefined) {
        return this.end(run, AgentStopReason.FINISHED, run.finishSummary);
      }
      if (run.cancelRequested) return this.endCancelled(run);
      if (run.middlewareStop) return this.endStoppedByMiddleware(run, run.middlewareStop);
      this.inbox.flush(run.runId);
      const elapsed = this.deps.now() - run.startedAtMs;
      const limit = limitReached(run, limits, elapsed);
      if (limit) return this.end(run, limit);
      try {
        await this.fitter.fit(s, budget);
        let messages;
        if (middleware) {
          const before = await middleware.chain.beforeModel(middleware.ctx, s.messages.map(toChat));
          middleware.record(run.runId, before.actions);
          if (before.stop) return this.endStoppedByMiddleware(run, before.stop);
          messages = before.messages;
        }
        const extraTools = await this.mcp(s)?.definitions();
        const reply = await modelStep(s, {
          llm: this.deps.llm,
          sessionId: this.sessionId,
          checkpointer: this.events,
          signal: this.signal,
          budget,
          elapsedMs: elapsed,
          ...(messages ? { messages } : {}),
          ...(extraTools ? { extraTools } : {}),
        });
        if (middleware) {
          const after = await middleware.chain.afterModel(middleware.ctx, reply);
          middleware.record(run.runId, after.actions);
          if (after.stop) return this.endStoppedByMiddleware(run, after.stop);
          // Hints reach the model after the reply's tool results (or at once, without any).
          for (const hint of after.hints) (s.inbound ??= []).push({ role: 'user', content: hint });
        }
        const calls = reply.toolCalls ?? [];
        if (calls.length === 0) {
          // Messages taken during the call (a drain on a mail hint): the model answers them.
          if ((s.inbound?.length ?? 0) > 0) {
            await this.events.commit();
            continue;
          }
          if (this.subagents.awaitingAsync()) {
            run.status = 'waiting';
            await this.events.commit();
            return;
          }
          if (run.continues < template.maxAutoContinues) {
            run.continues++;
            const text = await continuationPrompt(
              template.continuation,
              s.messages,
              middleware?.ctx ?? this.middlewareContext(s, budget),
            );
            const prompt: StoredMessage = { role: 'user', content: text };
            s.messages.push(prompt);
            this.events.emit(run.runId, TrajectoryEventType.MESSAGE, [prompt], {
              from: 'continue',
            });
            await this.events.commit();
            continue;
          }
          return this.end(run, AgentStopReason.NO_TOOL_CALLS, reply.content ?? '');
        }
        // A tool with an external effect runs only once the reply that asked for it is committed:
        // after a crash it is repeated only if its own result was not. Effect-free tools run at
        // once, and the reply is committed with their results.
        if (!calls.every((c) => isEffectFree(template, c.name))) {
          await this.events.commit();
        }
      } catch (err) {
        if (this.ctx.signal.aborted) throw err; // shutdown or fenced: the runtime replays the run
        if (run.cancelRequested) return this.endCancelled(run); // the call was aborted
        const stop = modelFailureStop(err, limits);
        if (!stop) throw toTroupeError(err);
        return this.end(run, stop.reason, undefined, stop.error);
      }
    }
  }

  /** The run's middleware chain, or undefined when its template has none. */
  private runMiddleware(s: RunningSession, budget: SessionBudget): RunMiddleware | undefined {
    if (!s.template.middleware?.length) return undefined;
    return {
      chain: buildMiddlewareChain(s.template, this.deps.plugins),
      ctx: this.middlewareContext(s, budget),
      record: (runId, actions) => {
        for (const a of actions) {
          this.events.emit(runId, TrajectoryEventType.MIDDLEWARE, undefined, { ...a });
        }
      },
    };
  }

  /** What middleware hooks (and the continuation policy) see: the session and a charged model. */
  private middlewareContext(s: RunningSession, budget: SessionBudget): MiddlewareContext {
    const { run, template } = s;
    return {
      session: s,
      signal: this.signal,
      chat: async ({ model, messages, maxTokens, purpose }) => {
        const result = await this.deps.llm.chat({
          model: model ?? template.model,
          messages,
          ...(maxTokens !== undefined ? { maxTokens } : {}),
          signal: this.signal,
          budget,
          metadata: {
            session: this.sessionId,
            run: run.runId,
            purpose,
            ...(run.budgetScope ? { budgetScope: run.budgetScope } : {}),
          },
        });
        run.inputTokens += result.usage.promptTokens;
        run.outputTokens += result.usage.completionTokens;
        run.costUsd += result.costUsd;
        return result.message.content ?? '';
      },
    };
  }

  /** Ends a run a middleware stopped: its unrun tool calls are answered, then the end recorded. */
  private async endStoppedByMiddleware(
    run: AgentRunState,
    stop: { by: string; reason: string },
  ): Promise<void> {
    this.tools.answerUnrun(this.s, run.runId, AgentStopReason.STOPPED_BY_MIDDLEWARE);
    await this.end(
      run,
      AgentStopReason.STOPPED_BY_MIDDLEWARE,
      undefined,
      `stopped by ${stop.by}: ${stop.reason}`,
    );
  }

  private async end(
    run: AgentRunState,
    reason: AgentStopReason,
    finalText?: string,
    error?: string,
  ): Promise<void> {
    // Before the end is recorded: whoever waits for it finds the run's own sandboxes gone. MCP
    // connections go first: a stdio server runs in `main`, which may be one of them.
    if (Object.values(this.sandboxes.held()).some((h) => h.owned && h.created)) {
      await this.deps.mcp?.closeSession(this.sessionId);
    }
    await this.sandboxes.destroyOwned();
    run.status = 'done';
    run.stopReason = reason;
    run.finalText = finalText ?? lastAssistantText(this.s.messages);
    if (error !== undefined) run.error = error;
    run.endedAtMs = this.deps.now();
    if (!this.endUncommitted) this.s.runsDone++;
    this.endUncommitted = true;
    this.inbox.flush(run.runId);
    this.events.emit(run.runId, TrajectoryEventType.RUN_END, undefined, {
      result: runResult(this.sessionId, run),
    });
    await this.events.commit();
    this.endUncommitted = false;
    await this.deliverResult(run);
  }

  private async deliverResult(run: AgentRunState): Promise<void> {
    if (run.replyTo) await this.postResult(run.replyTo, runResult(this.sessionId, run));
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
}

function lastAssistantText(messages: readonly StoredMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role === 'assistant' && m.content) return m.content;
  }
  return '';
}
