import type { Logger } from '@troupe/actors';
import type { BudgetHook, LlmClient } from '@troupe/llm';
import type { AgentSessionState, RunningSession } from './agent-state';
import type { Checkpointer } from './checkpointer';
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
import { TrajectoryEventType } from './trajectory-event';

/** What a {@link ContextFitter} works with (from its agent turn). */
export interface ContextFitterOptions {
  sessionId: string;
  /** Summarises windows for compaction. */
  llm: Pick<LlmClient, 'chat'>;
  log: Logger;
  /** Serialized session state size above which the context is shrunk. */
  maxStateBytes: number;
  /** Records the compaction events and commits the shrunk state. */
  checkpointer: Pick<Checkpointer<AgentSessionState>, 'emit' | 'commit'>;
  /** The turn's signal (aborted by a cancel too), for the summarising call. */
  signal: () => AbortSignal;
}

/**
 * Keeps a session's context within its limits before each model call: the template's compaction
 * budget (`compaction.maxChars`, summarised by a model) and the size of the serialized state (one
 * KV value). Every shrink is a `compaction` event; the trajectory keeps the full history.
 */
export class ContextFitter {
  /** The state's exact serialized size at its last measurement, and its growing text then. */
  private sized: { bytes: number; chars: number } | undefined;

  constructor(private readonly o: ContextFitterOptions) {}

  /** {@link fitState}, then {@link maybeCompact}. */
  async fit(s: RunningSession, budget: BudgetHook): Promise<void> {
    await this.fitState(s, budget);
    await this.maybeCompact(s, budget);
  }

  /**
   * Keeps the serialized state — one KV value, bounded by the NATS server's `max_payload` — under
   * `maxStateBytes`. Above it: compaction is forced when the template configures one; whatever
   * is still above half the limit is shrunk by replacing older messages' text with a reference to
   * the trajectory, which keeps every message in full. Measured exactly only when a cheap bound on
   * the growth since the last measurement says the limit may be near.
   */
  async fitState(s: RunningSession, budget: BudgetHook): Promise<void> {
    const limit = this.o.maxStateBytes;
    const { sized } = this;
    const chars = growingChars(s);
    if (sized && sized.bytes + (chars - sized.chars) * MAX_JSON_BYTES_PER_CHAR <= limit) return;
    const beforeBytes = this.measure(s);
    if (beforeBytes <= limit) return;
    const target = Math.floor(limit / 2);
    let bytes = beforeBytes;
    if (s.template.compaction) {
      await this.maybeCompact(s, budget, true);
      bytes = this.measure(s);
      if (bytes <= target) return;
    }
    const { elided } = elideOlderMessages(s.messages, this.o.sessionId, bytes - target);
    bytes = this.measure(s);
    // Elided messages still cost their structure: a long enough session then drops an older
    // window from the context altogether (a compaction without a model; pinned messages stay).
    let removed = 0;
    const window =
      bytes > target ? findCompactionWindow(s.messages, Math.floor(target / 4)) : undefined;
    if (window) {
      removed = window.end - window.start;
      s.messages = applyCompaction(
        s.messages,
        window,
        `[removed from the context to keep the session state under ${limit} bytes; the full text is in the trajectory of session ${this.o.sessionId}]`,
      );
    }
    const afterBytes = removed > 0 ? this.measure(s) : bytes;
    if (afterBytes > limit) {
      this.o.log.warn(
        { session: this.o.sessionId, bytes: afterBytes, maxStateBytes: limit },
        'session state stays above maxStateBytes after eliding older messages',
      );
    }
    this.o.checkpointer.emit(s.run.runId, TrajectoryEventType.COMPACTION, undefined, {
      strategy: 'elide',
      reason: 'state_size',
      elidedMessages: elided,
      removedMessages: removed,
      beforeBytes,
      afterBytes,
      maxStateBytes: limit,
    });
    await this.o.checkpointer.commit();
  }

  /** Summarises an older window above the template's budget (or at once: `force`). */
  async maybeCompact(s: RunningSession, budget: BudgetHook, force = false): Promise<void> {
    const { run, template } = s;
    const cfg = template.compaction;
    if (!cfg) return;
    const before = conversationChars(s.messages);
    if (before <= cfg.maxChars && !force) return;
    const window = findCompactionWindow(
      s.messages,
      cfg.keepRecentChars ?? Math.floor(cfg.maxChars / 4),
    );
    if (!window) return;
    const model = cfg.model ?? template.model;
    const result = await this.o.llm.chat({
      model,
      messages: summaryPrompt(s.messages.slice(window.start, window.end)),
      signal: this.o.signal(),
      budget,
      metadata: {
        session: this.o.sessionId,
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
    this.o.checkpointer.emit(run.runId, TrajectoryEventType.COMPACTION, undefined, {
      model,
      removedMessages: window.end - window.start,
      beforeChars: before,
      afterChars: conversationChars(s.messages),
      summary,
      costUsd: result.costUsd,
      ...(force ? { reason: 'state_size' } : {}),
    });
    await this.o.checkpointer.commit();
  }

  private measure(s: RunningSession): number {
    const bytes = stateBytes(s);
    this.sized = { bytes, chars: growingChars(s) };
    return bytes;
  }
}
