import type { ActorContext, InboxMessage, Logger } from '@troupe/actors';
import { toTroupeError } from '@troupe/proto';
import type { z } from 'zod';
import {
  AgentTextMessageSchema,
  CancelMessageSchema,
  RunMessageSchema,
  SubagentResultMessageSchema,
} from './agent-messages';
import type { AgentSessionState, StoredMessage } from './agent-state';
import type { Checkpointer } from './checkpointer';
import { acceptSubagentResult } from './subagent-calls';
import { TrajectoryEventType } from './trajectory-event';

/** What a {@link TurnInbox} works with (from its agent turn). */
export interface TurnInboxOptions {
  ctx: Pick<ActorContext<AgentSessionState>, 'drainInbox' | 'onMail'>;
  /** The working state: messages wait in its `inbound` queue. */
  session: AgentSessionState;
  sessionId: string;
  checkpointer: Pick<Checkpointer<AgentSessionState>, 'emit'>;
  log: Logger;
  /** A valid `cancel` was drained. */
  onCancel: (msg: z.output<typeof CancelMessageSchema>) => void;
  /** A valid `run` was drained while run `runId` is in progress: it is to be refused (BUSY). */
  onRun: (msg: z.output<typeof RunMessageSchema>, runId: string) => Promise<void>;
}

/**
 * The messages a turn takes from its inbox while its run goes on: at safe points (tool
 * boundaries), and at once on the runtime's "you have mail" hints while the loop is watching, so
 * a `cancel` aborts what the turn waits for. Text messages and async subagent results wait in the
 * state's `inbound` queue until {@link flush} moves them into the conversation.
 */
export class TurnInbox {
  /** The turn's drains, one after the other (the runtime's drain position is not shared). */
  private chain: Promise<void> = Promise.resolve();
  /** A drain asked for by a mail hint has not started yet. */
  private hintQueued = false;
  /** Stops listening for mail hints (set while the loop runs). */
  private unwatch: (() => void) | undefined;
  /** A drain started by a mail hint failed: thrown at the next safe point. */
  private hintError: unknown;

  constructor(private readonly o: TurnInboxOptions) {}

  /** Listens for mail hints until {@link stopWatching}. */
  watch(): void {
    this.unwatch = this.o.ctx.onMail(() => this.onMailHint());
  }

  /** Stops listening for mail hints and waits for a drain they started; throws its error. */
  async stopWatching(): Promise<void> {
    this.unwatch?.();
    this.unwatch = undefined;
    await this.chain;
    this.throwHintError();
  }

  /**
   * Takes posted messages that arrived during the turn (a tool boundary, or a mail hint) into
   * `inbound`; a `cancel` or a `run` goes to its callback. One drain at a time; a failed drain of
   * a mail hint is thrown here.
   */
  drain(runId: string): Promise<void> {
    const next = this.chain.then(() => {
      this.hintQueued = false;
      return this.drainNow(runId);
    });
    this.chain = next.catch(() => undefined);
    return next.then(() => this.throwHintError());
  }

  /** Turns an inbound message or async subagent result into a pending user message. */
  accept(m: Pick<InboxMessage, 'type' | 'payload'>): void {
    const s = this.o.session;
    const runId = s.run?.runId ?? 'none';
    if (m.type === 'message') {
      const parsed = AgentTextMessageSchema.safeParse(m.payload);
      if (!parsed.success) return;
      const { from, text, pinned } = parsed.data;
      const max = s.template?.maxMessageChars ?? 8_000;
      let content = `[message from ${from}]\n${text}`;
      const seq = s.eventSeq + 1;
      if (content.length > max) {
        content = `[message from ${from}]\n${text.slice(0, max)}\n…[message truncated: ${max} of ${text.length} characters shown; the full text is in trajectory event ${this.o.sessionId}#${seq}]`;
      }
      const message: StoredMessage = { role: 'user', content, ...(pinned ? { pinned } : {}) };
      s.inbound = [...(s.inbound ?? []), message];
      this.o.checkpointer.emit(runId, TrajectoryEventType.MESSAGE, undefined, {
        from,
        fullText: text,
        truncated: content.length < text.length,
      });
    } else if (m.type === 'subagentResult') {
      const parsed = SubagentResultMessageSchema.safeParse(m.payload);
      if (!parsed.success) return;
      const { callId, result } = parsed.data;
      const message: StoredMessage = {
        role: 'user',
        content: acceptSubagentResult(s, callId, result),
      };
      s.inbound = [...(s.inbound ?? []), message];
      this.o.checkpointer.emit(runId, TrajectoryEventType.MESSAGE, undefined, {
        from: result.sessionId,
        callId,
        stopReason: result.stopReason,
      });
    }
  }

  /** Moves pending inbound messages into the conversation (only between tool batches). */
  flush(runId: string): void {
    const s = this.o.session;
    if (!s.inbound || s.inbound.length === 0) return;
    const moved = s.inbound;
    s.inbound = [];
    s.messages.push(...moved);
    this.o.checkpointer.emit(runId, TrajectoryEventType.MESSAGE, moved, {
      delivered: moved.length,
    });
  }

  /**
   * A message was posted to this session while its loop runs: drain the inbox now rather than at
   * the next tool boundary, so a `cancel` stops a model call, a tool or a sync subagent wait in
   * flight. Other messages wait in `inbound` for the next tool boundary, as usual.
   */
  private onMailHint(): void {
    const run = this.o.session.run;
    if (!this.unwatch || this.hintQueued || !run || run.status === 'done') return;
    this.hintQueued = true;
    this.drain(run.runId).catch((err: unknown) => {
      this.hintError ??= err;
      this.o.log.warn({ err, session: this.o.sessionId }, 'drain on a mail hint failed');
    });
  }

  private async drainNow(runId: string): Promise<void> {
    const got = await this.o.ctx.drainInbox();
    for (const m of got) {
      if (m.type === 'cancel') {
        const parsed = CancelMessageSchema.safeParse(m.payload);
        if (parsed.success) this.o.onCancel(parsed.data);
        continue;
      }
      if (m.type === 'run') {
        const parsed = RunMessageSchema.safeParse(m.payload);
        if (parsed.success) await this.o.onRun(parsed.data, runId);
        continue;
      }
      this.accept(m);
    }
  }

  private throwHintError(): void {
    const err = this.hintError;
    if (err === undefined) return;
    this.hintError = undefined;
    throw toTroupeError(err);
  }
}
