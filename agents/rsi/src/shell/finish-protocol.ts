import { AgentStopReason } from '@troupe/agents';
import { ErrorCode, TroupeError } from '@troupe/proto';
import { type ActorEnding, type VerifierReport } from '../loop/verdict';

/** What the roles read from an agent run's result. */
export interface RoleRunResult {
  stopReason: AgentStopReason;
  /** `finish_task`'s summary, or the model's last text. */
  finalText: string;
  /** The error behind an infrastructure stop. */
  error?: string;
}

/** The Actor's first line when it claims the task is finished. */
export const ACTOR_DONE = 'DONE';
/** The Actor's first line when it could not do the task and asks for practice. */
export const ACTOR_EVOLVE = 'EVOLVE';
/** The Verifier's first line when the machine shows the task done. */
export const VERIFIER_HANDOFF = 'HANDOFF';
/** The Verifier's first line when the machine shows it not done. */
export const VERIFIER_EVOLVE = 'EVOLVE';

// Stop reasons that say the infrastructure (model provider, agent host, configuration) failed
// rather than the role: they raise, and never become a verdict.
const INFRASTRUCTURE: Partial<Record<AgentStopReason, ErrorCode>> = {
  [AgentStopReason.MODEL_ERROR]: ErrorCode.UNAVAILABLE,
  [AgentStopReason.INTERNAL_ERROR]: ErrorCode.INTERNAL,
  [AgentStopReason.REJECTED]: ErrorCode.INVALID_ARGUMENT,
  [AgentStopReason.CANCELLED]: ErrorCode.CANCELLED,
};

/**
 * Throws when a role's run stopped for an infrastructure reason (the model provider failed for
 * good, the run's turn failed, the run was refused or cancelled): such a stop is never a claim
 * about the task.
 * @throws TroupeError `UNAVAILABLE` (model error), `INTERNAL`, `INVALID_ARGUMENT` (refused run)
 *   or `CANCELLED`, with the role, session and error in `details`
 */
export function throwIfInfrastructure(role: string, sessionId: string, r: RoleRunResult): void {
  const code = INFRASTRUCTURE[r.stopReason];
  if (code === undefined) return;
  throw new TroupeError(
    code,
    `the ${role} run of session ${sessionId} stopped with ${r.stopReason}${r.error ? `: ${r.error}` : ''}`,
    {
      details: {
        role,
        sessionId,
        stopReason: r.stopReason,
        ...(r.error ? { error: r.error } : {}),
      },
    },
  );
}

/** A summary's first line (surrounding whitespace removed) and the rest (trimmed). */
export function splitFirstLine(text: string): { first: string; rest: string } {
  const nl = text.search(/\r?\n/);
  if (nl < 0) return { first: text.trim(), rest: '' };
  return {
    first: text.slice(0, nl).trim(),
    rest: text
      .slice(nl)
      .replace(/^\r?\n/, '')
      .trim(),
  };
}

/**
 * The Actor's ending from its run: `finish_task` whose summary's first line is exactly `DONE`
 * → `done`, exactly `EVOLVE` → `evolve`. Any other ending — another first line, no
 * `finish_task`, a step, token, cost or time limit — is a reason string, which routes
 * UNVERIFIED. Infrastructure stops throw (see {@link throwIfInfrastructure}).
 */
export function actorEnding(sessionId: string, r: RoleRunResult): ActorEnding {
  throwIfInfrastructure('Actor', sessionId, r);
  if (r.stopReason !== AgentStopReason.FINISHED) return `actor stopped: ${r.stopReason}`;
  const { first } = splitFirstLine(r.finalText);
  if (first === ACTOR_DONE) return 'done';
  if (first === ACTOR_EVOLVE) return 'evolve';
  return `actor finished without ${ACTOR_DONE} or ${ACTOR_EVOLVE} as its first line: ${JSON.stringify(first.slice(0, 200))}`;
}

/**
 * The Verifier's route and report from its run, parsed strictly: `finish_task` whose summary's
 * first line is exactly `HANDOFF` or `EVOLVE`; the rest of the summary is the report. Anything
 * else has no route (and routes UNVERIFIED), with a report saying what the Verifier did instead.
 * Infrastructure stops throw.
 */
export function verifierReport(sessionId: string, r: RoleRunResult): VerifierReport {
  throwIfInfrastructure('Verifier', sessionId, r);
  if (r.stopReason !== AgentStopReason.FINISHED) {
    return {
      route: undefined,
      report: `the Verifier committed no route: its run stopped with ${r.stopReason}`,
    };
  }
  const { first, rest } = splitFirstLine(r.finalText);
  if (first === VERIFIER_HANDOFF || first === VERIFIER_EVOLVE)
    return { route: first, report: rest };
  return {
    route: undefined,
    report: `the Verifier committed no route: its summary's first line was ${JSON.stringify(first.slice(0, 200))}, not ${VERIFIER_HANDOFF} or ${VERIFIER_EVOLVE}`,
  };
}
