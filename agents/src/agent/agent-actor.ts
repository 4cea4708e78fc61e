import { type ActorContext, defineActor, type Logger, noopLogger } from '@troupe/actors';
import { ErrorCode, ErrorReason, hasReason, invalidArgument, toTroupeError } from '@troupe/proto';
import type { BudgetHook, LlmClient } from '@troupe/llm';
import { ActorSandboxPort } from './actor-sandbox-port';
import { AGENT_KIND, AgentMessages, type RunMessage } from './agent-messages';
import {
  type AgentSessionState,
  AgentSessionStateSchema,
  initialAgentSessionState,
} from './agent-state';
import { AgentTurn, type AgentTurnDeps } from './agent-turn';
import type { MiddlewarePlugins } from './middleware/build-chain';
import type { SkillSource } from '../skills/skill-store';
import type { MemoryStore } from '../memory/memory-store';
import { McpSessions } from '../mcp/mcp-sessions';
import type { SandboxPort } from './sandbox-port';
import { ActorSandboxProvisioner, type SandboxProvisioner } from '../sandboxes/sandbox-provisioner';
import type { TrajectoryStore } from './trajectory-store';

/** What a host passes to {@link createAgentActor}. */
export interface AgentActorOptions {
  /** The LLM client every model call goes through (registry, retries, rate limits). */
  llm: LlmClient;
  /** Where trajectories go (and where sync callers wait for results). */
  trajectories: TrajectoryStore;
  /**
   * The cluster budget ledger every model call reserves against, after the run's own
   * `limits.maxCostUsd`. @default none (only the run's limit applies)
   */
  budget?: BudgetHook;
  /**
   * Builds the sandbox port for a session's `sandboxId`.
   * @default an {@link ActorSandboxPort} to the node agent's `sandbox` actor, over NATS
   */
  sandbox?: (ctx: ActorContext<AgentSessionState>, sandboxId: string) => SandboxPort;
  /**
   * Creates and destroys the sandboxes a template declares (`template.sandboxes`).
   * @default an {@link ActorSandboxProvisioner} to the node agent's `sandbox` actor, over NATS
   */
  provisioner?: (ctx: ActorContext<AgentSessionState>) => SandboxProvisioner;
  /** Longest a sync `call_subagent` waits for the child's result. @default 3600000 */
  subagentTimeoutMs?: number;
  /** Passivate a session after this long without a message. @default 60000 */
  idleTimeoutMs?: number;
  /**
   * Attempts of a turn (`run`, `message`, `subagentResult`) that throws, before its run ends with
   * `INTERNAL_ERROR` (rather than being dead-lettered by the actor runtime). @default 3
   */
  maxAttempts?: number;
  /**
   * Middleware this host offers to templates by name (`middleware: [{use: plugin, name,
   * options}]`); a run naming one the host lacks is refused. @default none
   */
  plugins?: MiddlewarePlugins;
  /**
   * The cluster's skills (a `SkillStore`): templates name them, `load_skill` reads them. A
   * run whose template names skills is refused on a host without one. @default none
   */
  skills?: SkillSource;
  /**
   * The cluster's memory store: templates with `memory` get the memory tools on it. A run whose
   * template has memory is refused on a host without one. @default none
   */
  memory?: MemoryStore;
  /** Logger. @default none */
  logger?: Logger;
  /** Clock. @default Date.now */
  now?: () => number;
  /**
   * A session's whole state (its context included) is one KV value, which the NATS server's
   * `max_payload` bounds (1 MiB by default). Above this many bytes, before a model call, the
   * session forces a compaction if its template configures one and otherwise replaces older
   * messages' text with references to the trajectory (which keeps it in full), down to half of
   * it, recording a `compaction` event. Keep it below `max_payload` with room for one step.
   * @default 524288
   */
  maxStateBytes?: number;
}

/**
 * Defines the `agent` actor kind: one actor per session id, whose template is its role. Messages:
 * `run` (posted; starts or resumes a run, result as a `run_end` trajectory event and, for async
 * subagent calls, a `subagentResult` post to the caller), `message` (posted; text delivered at
 * the next tool boundary, waking a session that waits for async results), `subagentResult`
 * (posted by children), `cancel` (posted; ends the run with CANCELLED at its next safe point and
 * cancels its running subagents — a mail hint aborts a model call, tool or sync subagent wait in
 * flight), `status` (ask). Runs checkpoint after every tool result, and after a model
 * reply before any tool with an external effect runs (`trackRunning`: a running session refuses
 * `requireIdle` asks with BUSY). A turn that throws on its last attempt ends its run with
 * `INTERNAL_ERROR` instead of being dead-lettered; a `run` whose payload is invalid is
 * dead-lettered, with a `run_end` (REJECTED, naming the field) recorded for its id first.
 * @throws TroupeError `INVALID_ARGUMENT` naming `maxAttempts`
 */
export function createAgentActor(options: AgentActorOptions) {
  const log = (options.logger ?? noopLogger).child({ component: 'agent' });
  // Per session, lazily opened; closed when the session is passivated (onDeactivate).
  const mcp = new McpSessions(log.child({ component: 'mcp' }));
  const deps: AgentTurnDeps = {
    llm: options.llm,
    trajectories: options.trajectories,
    budget: options.budget,
    sandbox:
      options.sandbox ?? ((ctx, sandboxId) => new ActorSandboxPort({ refs: ctx.refs, sandboxId })),
    provisioner: options.provisioner ?? ((ctx) => new ActorSandboxProvisioner({ refs: ctx.refs })),
    log,
    subagentTimeoutMs: options.subagentTimeoutMs ?? 3_600_000,
    now: options.now ?? Date.now,
    maxStateBytes: options.maxStateBytes ?? 512 * 1024,
    plugins: options.plugins ?? {},
    skills: options.skills,
    memory: options.memory,
    mcp,
  };
  const turn = (ctx: ActorContext<AgentSessionState>, state: AgentSessionState): AgentTurn =>
    new AgentTurn(ctx, structuredClone(state), deps);
  const maxAttempts = options.maxAttempts ?? 3;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw invalidArgument('maxAttempts', 'must be an integer ≥ 1', options.maxAttempts);
  }
  // Failed attempts per (session, inbox message) on this host. The runtime counts per activation,
  // so this count is never below the runtime's: the run ends before the runtime dead-letters.
  const failures = new Map<string, number>();
  /** Runs a turn; on its last failed attempt, ends the run with INTERNAL_ERROR instead. */
  const guarded = async (
    ctx: ActorContext<AgentSessionState>,
    state: AgentSessionState,
    body: (t: AgentTurn) => Promise<void>,
    runMsg?: RunMessage,
  ): Promise<{ state: AgentSessionState }> => {
    const key = `${ctx.self.id}#${ctx.message.seq ?? ''}`;
    const t = turn(ctx, state);
    try {
      await body(t);
      failures.delete(key);
      return { state: t.s };
    } catch (err) {
      // A store out of reach (its state, its trajectory) is infrastructure trouble: the runtime
      // retries the turn without counting an attempt, and so does this count.
      if (
        ctx.signal.aborted ||
        hasReason(err, ErrorReason.FENCED) ||
        hasReason(err, ErrorReason.STORE_UNAVAILABLE)
      )
        throw err;
      const e = toTroupeError(err);
      const attempts = (failures.get(key) ?? 0) + 1;
      failures.delete(key);
      // The same rule as the runtime's dead-lettering: out of attempts, or a permanent bad input.
      if (attempts < maxAttempts && !(e.code === ErrorCode.INVALID_ARGUMENT && !e.retryable)) {
        failures.set(key, attempts);
        if (failures.size > 10_000) failures.delete(failures.keys().next().value as string);
        throw err;
      }
      const why = `${e.code}: ${e.message} (the turn failed ${attempts} attempts)`;
      deps.log.error({ err, session: ctx.self.id, attempts }, 'agent turn failed; ending the run');
      // First from the working copy (it has the attempt's committed steps); if that state is what
      // cannot be written, from the state this attempt started with (last committed by the runtime).
      for (const base of [t.s, { ...state, eventSeq: Math.max(state.eventSeq, t.s.eventSeq) }]) {
        const ending = base === t.s ? t : turn(ctx, base);
        try {
          if (!(await ending.endAfterFailure(why, runMsg))) throw err;
          return { state: ending.s };
        } catch (endErr) {
          if (ctx.signal.aborted || hasReason(endErr, ErrorReason.FENCED) || endErr === err)
            throw endErr;
          deps.log.warn({ err: endErr, session: ctx.self.id }, 'could not record the run end');
        }
      }
      throw err;
    }
  };
  return defineActor({
    kind: AGENT_KIND,
    state: AgentSessionStateSchema,
    initialState: initialAgentSessionState,
    messages: AgentMessages,
    trackRunning: true,
    maxAttempts,
    // Checkpoints (one per step) write state assembled from validated parts; the runtime still
    // validates it at the end of every turn and on load.
    validateCheckpoints: false,
    idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
    // A session's MCP servers live with its activation (stdio ones are killed in the sandbox).
    onDeactivate: (ctx) => mcp.closeSession(ctx.self.id),
    // A `run` with an invalid payload is dead-lettered by the runtime; record its refusal first,
    // or whoever waits for its `run_end` (waitForRunEnd, a parent agent) waits until its deadline.
    onInvalid: async (ctx, { type, payload, error }, state) => {
      if (type !== 'run') return;
      const t = turn(ctx, state);
      return (await t.refuseInvalidRun(payload, error)) ? { state: t.s } : undefined;
    },
    handlers: {
      run: (ctx, msg, state) => guarded(ctx, state, (t) => t.run(msg), msg),
      message: (ctx, msg, state) => guarded(ctx, state, (t) => t.inbound('message', msg)),
      subagentResult: (ctx, msg, state) =>
        guarded(ctx, state, (t) => t.inbound('subagentResult', msg)),
      cancel: (ctx, msg, state) => guarded(ctx, state, (t) => t.cancel(msg)),
      status: (_ctx, _msg, state) => ({
        reply: {
          template: state.template?.name,
          run: state.run,
          subagents: Object.values(state.subagents).map((a) => ({
            name: a.name,
            sessionId: a.sessionId,
            busy: a.activeCallId !== undefined,
          })),
          messages: state.messages.length,
          runsDone: state.runsDone,
        },
      }),
    },
  });
}

/** The agent actor definition type. */
export type AgentActorDefinition = ReturnType<typeof createAgentActor>;
