import { z } from 'zod';

/**
 * How the Actor ended its run: `done` (it claims the task is finished), `evolve` (it asks for
 * practice: it could not do the task) or anything else (a step cap, no tool call, a crash of
 * the model loop), which is never a claim about the task.
 */
export type ActorEnding = 'done' | 'evolve' | (string & {});

/** The Verifier's committed route: hand the result off, or send the target to practice. */
export const VerifierRouteSchema = z.enum(['HANDOFF', 'EVOLVE']);
/** One of {@link VerifierRouteSchema}'s values. */
export type VerifierRoute = z.infer<typeof VerifierRouteSchema>;

/** What the Verifier returns: its route (none when it never committed one) and its report. */
export interface VerifierReport {
  route: VerifierRoute | undefined;
  /** The Verifier's findings from machine evidence; an empty report is no verdict. */
  report: string;
}

/**
 * A target's local verdict. `PASS` and `FAIL` are grounded (Actor and Verifier agree); anything
 * else is `UNVERIFIED`, which is never learned from and ends the target with an error status.
 */
export type Verdict = 'PASS' | 'FAIL' | 'UNVERIFIED';

/**
 * Routes a cycle exactly as RSIAgent does: Actor `done` + Verifier `HANDOFF` → PASS; Actor
 * `evolve` + Verifier `EVOLVE` → FAIL; every other combination — disagreement, a missing route,
 * an Actor that ended any other way, or an empty report — → UNVERIFIED.
 */
export function routeVerdict(ending: ActorEnding, verifier: VerifierReport): Verdict {
  if (verifier.report.trim() === '') return 'UNVERIFIED';
  if (ending === 'done' && verifier.route === 'HANDOFF') return 'PASS';
  if (ending === 'evolve' && verifier.route === 'EVOLVE') return 'FAIL';
  return 'UNVERIFIED';
}

/** Whether a verdict may be learned from (only grounded ones). */
export function isGrounded(verdict: Verdict): verdict is 'PASS' | 'FAIL' {
  return verdict === 'PASS' || verdict === 'FAIL';
}
