import { type ActorContext, defineActor, type Logger, noopLogger } from '@troupe/actors';
import type { BudgetHook } from '../llm/budget-hook';
import type { LlmClient } from '../llm/llm-client';
import { ActorSandboxPort } from './actor-sandbox-port';
import { AGENT_KIND, AgentMessages } from './agent-messages';
import {
  type AgentSessionState,
  AgentSessionStateSchema,
  initialAgentSessionState,
} from './agent-state';
import { AgentTurn, type AgentTurnDeps } from './agent-turn';
import type { SandboxPort } from './sandbox-port';
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
  /** Longest a sync `call_subagent` waits for the child's result. @default 3600000 */
  subagentTimeoutMs?: number;
  /** Passivate a session after this long without a message. @default 60000 */
  idleTimeoutMs?: number;
  /** Logger. @default none */
  logger?: Logger;
  /** Clock. @default Date.now */
  now?: () => number;
}

/**
 * Defines the `agent` actor kind: one actor per session id, whose template is its role. Messages:
 * `run` (posted; starts or resumes a run, result as a `run_end` trajectory event and, for async
 * subagent calls, a `subagentResult` post to the caller), `message` (posted; text delivered at
 * the next tool boundary, waking a session that waits for async results), `subagentResult`
 * (posted by children), `status` (ask). Runs checkpoint after every model reply and tool result
 * (`trackRunning`: a running session refuses `requireIdle` asks with BUSY).
 */
export function createAgentActor(options: AgentActorOptions) {
  const deps: AgentTurnDeps = {
    llm: options.llm,
    trajectories: options.trajectories,
    budget: options.budget,
    sandbox:
      options.sandbox ?? ((ctx, sandboxId) => new ActorSandboxPort({ refs: ctx.refs, sandboxId })),
    log: (options.logger ?? noopLogger).child({ component: 'agent' }),
    subagentTimeoutMs: options.subagentTimeoutMs ?? 3_600_000,
    now: options.now ?? Date.now,
  };
  const turn = (ctx: ActorContext<AgentSessionState>, state: AgentSessionState): AgentTurn =>
    new AgentTurn(ctx, structuredClone(state), deps);
  return defineActor({
    kind: AGENT_KIND,
    state: AgentSessionStateSchema,
    initialState: initialAgentSessionState,
    messages: AgentMessages,
    trackRunning: true,
    idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
    handlers: {
      run: async (ctx, msg, state) => {
        const t = turn(ctx, state);
        await t.run(msg);
        return { state: t.s };
      },
      message: async (ctx, msg, state) => {
        const t = turn(ctx, state);
        await t.inbound('message', msg);
        return { state: t.s };
      },
      subagentResult: async (ctx, msg, state) => {
        const t = turn(ctx, state);
        await t.inbound('subagentResult', msg);
        return { state: t.s };
      },
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
