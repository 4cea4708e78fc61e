import type { BudgetHook, ChatMessage, LlmClient } from '@troupe/llm';
import { type Phase1CurriculumTurn } from '../phases/phase1-practice';
import { runRoleSession } from './desktop-role-session';

/** Options of {@link desktopPhase1Curriculum}. */
export interface DesktopPhase1CurriculumOptions {
  /** The cluster's LLM client (the desktop roles' models are called from the driver's process). */
  llm: Pick<LlmClient, 'chat'>;
  /** Registry name of the Curriculum's model. */
  model: string;
  /** Budget of every model call (the job's ledger scope). @default the client's */
  budget?: BudgetHook;
  /** The job: part of each call's record. */
  jobId: string;
  /** Model calls per turn and wall time per turn (the suite's limits). */
  limits: { curriculumMaxSteps: number; runWallMs: number };
}

/**
 * The Phase-1 Curriculum's turns of a desktop study, for `Phase1Practice`'s `curriculumTurn`: a
 * conversation per session id kept here and run by {@link runRoleSession} against the cluster's
 * LLM client, with no tool but `finish_task` — the mechanism of the desktop roles' Curriculum, so
 * a desktop study needs no models on the agent hosts. A model call that fails for good throws.
 */
export function desktopPhase1Curriculum(o: DesktopPhase1CurriculumOptions): Phase1CurriculumTurn {
  const conversations = new Map<string, ChatMessage[]>();
  return (turn, signal) => {
    let messages = conversations.get(turn.sessionId);
    if (messages === undefined) {
      messages = [{ role: 'system', content: turn.instruction }];
      conversations.set(turn.sessionId, messages);
    }
    messages.push({ role: 'user', content: turn.task });
    return runRoleSession({
      llm: o.llm,
      model: o.model,
      messages,
      tools: [],
      maxSteps: o.limits.curriculumMaxSteps,
      wallMs: o.limits.runWallMs,
      ...(o.budget ? { budget: o.budget } : {}),
      metadata: { job: o.jobId, task: 'phase1', role: 'curriculum', session: turn.sessionId },
      ...(signal ? { signal } : {}),
    });
  };
}
