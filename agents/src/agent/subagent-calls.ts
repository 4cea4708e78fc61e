import type { RefFactory } from '@troupe/actors';
import { ErrorCode, hasErrorCode } from '@troupe/proto';
import { AGENT_KIND, type AgentRunResult, AgentRunResultSchema } from './agent-messages';
import {
  type AgentRunState,
  type AgentSessionState,
  runningSession,
  type SubagentRecord,
} from './agent-state';
import { AgentStopReason } from './agent-stop-reason';
import type { TrajectoryStore } from './trajectory-store';
import type { SessionSandboxes } from '../sandboxes/session-sandboxes';
import { type ToolOutcome, toolError } from './tools/tool-outcome';
import type { McpConfig } from '../mcp/mcp-config';

/** What {@link SubagentCalls} works with (from its agent turn). */
export interface SubagentCallsOptions {
  /** The calling session's working state (its subagents, conversation, run). */
  session: AgentSessionState;
  /** The calling session's sandboxes (granted to its subagents by name). */
  sandboxes: Pick<SessionSandboxes, 'grant'>;
  sessionId: string;
  refs: RefFactory;
  /** Where a sync call waits for the child's `run_end`. */
  trajectories: Pick<TrajectoryStore, 'waitForRunEnd'>;
  /** Longest a sync call waits for the child's result. */
  timeoutMs: number;
  /** The turn's signal, also aborted when it takes a `cancel` of its run. */
  signal: () => AbortSignal;
  /** Aborted only when the turn itself must stop (shutdown, fenced): for the cancels it sends. */
  turnSignal: AbortSignal;
  /** Commits the calling session's state. */
  commit: () => Promise<void>;
}

/** A `call_subagent` request, validated. */
export interface SubagentRequest {
  /** The subagent's name. */
  target: string;
  request: string;
  mode: 'sync' | 'async';
  /** Give the child the caller's conversation before the call (not its instruction). */
  useParentHistory: boolean;
}

/**
 * The subagent calls of one session: starting them (sync and async), receiving async results,
 * cancelling the ones in progress. A call is recorded in the caller's state (`activeCallId`)
 * and committed before the child's run is posted, so a resumed turn waits for it instead of
 * calling again, and the run id derives from the tool call id, so a repeated post runs once.
 */
export class SubagentCalls {
  constructor(private readonly o: SubagentCallsOptions) {}

  /** Run id of the subagent call made by tool call `callId`. */
  runIdOf(callId: string): string {
    return `${this.o.sessionId}.${callId}`.replace(/[^A-Za-z0-9_.:-]/g, '_').slice(0, 200);
  }

  /**
   * Runs subagent `target` on a request. Sync: waits for the child's result (its stop reason,
   * final text and spend, rolled into the caller's run). Async: returns at once; the result is
   * posted to the caller's inbox ({@link acceptSubagentResult}). A subagent with a call in progress, or
   * whose session runs, answers BUSY.
   */
  async call(
    a: SubagentRequest,
    site: { callId: string; assistantIndex: number },
  ): Promise<ToolOutcome> {
    const { sessionId } = this.o;
    const s = runningSession(this.o.session);
    const child = s.subagents[a.target];
    if (!child) {
      return toolError(
        `NOT_FOUND: \`arguments.target\`: no subagent '${a.target}' (yours: ${Object.keys(s.subagents).join(', ') || 'none'})`,
      );
    }
    const ref = this.o.refs.refOf({ kind: AGENT_KIND, id: child.sessionId });
    const runId = this.runIdOf(site.callId);
    // The granted sandboxes, created first when this session owns them and has not used them yet
    // (a name the session no longer holds, or a failed creation, is this call's error).
    const sandboxes = await this.o.sandboxes.grant(child.sandboxes, {
      field: `subagent ${child.name}'s sandboxes`,
      signal: this.o.signal(),
    });
    if (child.activeCallId !== site.callId) {
      if (child.activeCallId) {
        return toolError(
          `BUSY: subagent ${a.target} is running (call ${child.activeCallId}); wait for its result`,
        );
      }
      try {
        await ref.ask(
          'status',
          {},
          { requireIdle: true, timeoutMs: 15_000, signal: this.o.signal() },
        );
      } catch (err) {
        if (hasErrorCode(err, ErrorCode.BUSY)) {
          return toolError(`BUSY: subagent ${a.target} is running; wait for its result`);
        }
        throw err;
      }
      child.activeCallId = site.callId;
      child.activeRunId = runId;
      child.activeMode = a.mode;
      // Remember the call before starting it, so a resumed turn waits instead of calling again.
      await this.o.commit();
    }
    // The child's own template declares no sandboxes: it uses the ones granted, shared.
    const { sandboxes: _declared, ...parent } = s.template;
    const history = a.useParentHistory
      ? s.messages.slice(0, site.assistantIndex).filter((m) => m.role !== 'system')
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
          skills: child.skills ?? [],
          // Only the servers it was given, never more than the parent holds.
          mcp: childMcp(parent.mcp, child.mcp),
        },
        ...(Object.keys(sandboxes).length > 0 ? { sandboxes } : {}),
        parentSessionId: sessionId,
        siblings: Object.keys(s.subagents).filter((n) => n !== child.name),
        ...(s.run.budgetScope ? { budgetScope: s.run.budgetScope } : {}),
        ...(a.mode === 'async'
          ? { replyTo: { kind: AGENT_KIND, id: sessionId, callId: site.callId } }
          : {}),
        ...(history ? { history } : {}),
      },
      { dedupeId: `run:${runId}`, signal: this.o.signal() },
    );
    if (a.mode === 'async') {
      return {
        ok: true,
        content: `subagent ${a.target} started (call ${site.callId}, session ${child.sessionId}); its result will arrive as a message`,
      };
    }
    const signal = AbortSignal.any([this.o.signal(), AbortSignal.timeout(this.o.timeoutMs)]);
    let result: AgentRunResult;
    try {
      result = AgentRunResultSchema.parse(
        await this.o.trajectories.waitForRunEnd(child.sessionId, runId, { signal }),
      );
    } finally {
      // Cancelled: the call stays recorded, so the run's end cancels the child too.
      if (!this.o.signal().aborted) clearCall(child);
    }
    addSubagentSpend(s.run, result);
    return {
      ok:
        result.stopReason !== AgentStopReason.REJECTED &&
        result.stopReason !== AgentStopReason.MODEL_ERROR &&
        result.stopReason !== AgentStopReason.INTERNAL_ERROR,
      content: `subagent ${a.target} (session ${result.sessionId}) ${formatResult(result)}`,
    };
  }

  /**
   * Posts a `cancel` of its call's run to every subagent with a call in progress (sync or async)
   * and forgets the calls; does not wait for the children to stop.
   */
  async cancelAll(why: string): Promise<void> {
    for (const child of Object.values(this.o.session.subagents)) {
      if (child.activeCallId === undefined) continue;
      const runId = child.activeRunId ?? this.runIdOf(child.activeCallId);
      await this.o.refs
        .refOf({ kind: AGENT_KIND, id: child.sessionId })
        .post(
          'cancel',
          { runId, reason: why.slice(0, 500) },
          { dedupeId: `cancel:${runId}`, signal: this.o.turnSignal },
        );
      clearCall(child);
    }
  }

  /** True while an async call's result has not arrived. */
  awaitingAsync(): boolean {
    return Object.values(this.o.session.subagents).some((a) => a.activeMode === 'async');
  }
}

/**
 * Takes an async call's result into `s`: rolls its spend into the run (while it goes on) and ends
 * the call; returns the text that tells the model.
 */
export function acceptSubagentResult(
  s: AgentSessionState,
  callId: string,
  result: AgentRunResult,
): string {
  if (s.run && s.run.status !== 'done') addSubagentSpend(s.run, result);
  const child = Object.values(s.subagents).find((a) => a.activeCallId === callId);
  if (child) clearCall(child);
  return `[async result of subagent ${child?.name ?? result.sessionId} (call ${callId})]\n${formatResult(result)}`;
}

/** Adds what a subagent's run reported (its own calls and its subagents') to the caller's run. */
function addSubagentSpend(run: AgentRunState, result: AgentRunResult): void {
  run.subagentCostUsd = (run.subagentCostUsd ?? 0) + result.costUsd;
  run.subagentInputTokens = (run.subagentInputTokens ?? 0) + result.usage.inputTokens;
  run.subagentOutputTokens = (run.subagentOutputTokens ?? 0) + result.usage.outputTokens;
}

function clearCall(child: SubagentRecord): void {
  delete child.activeCallId;
  delete child.activeRunId;
  delete child.activeMode;
}

function formatResult(r: AgentRunResult): string {
  const head = `finished: ${r.stopReason} after ${r.steps} steps`;
  return r.error ? `${head} (${r.error})\n${r.finalText}` : `${head}\n${r.finalText}`;
}

/** The parent's `mcp` cut to the servers a subagent was given (undefined for none). */
function childMcp(parent: McpConfig | undefined, names: readonly string[] | undefined) {
  const given = new Set(names ?? []);
  const servers = parent?.servers.filter((m) => given.has(m.name)) ?? [];
  return parent && servers.length > 0 ? { ...parent, servers } : undefined;
}
