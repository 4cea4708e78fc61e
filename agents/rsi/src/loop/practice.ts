import { isGrounded, routeVerdict, type VerifierReport } from './verdict';
import type { ActorRun, BankHandle, ProjectOutcome, RsiRoles, Work } from './rsi-roles';

// The two steps a target's Curriculum search and a Phase-1 practice branch share: learning
// admission, and one practice project in its own environment. Kept out of the target loop so
// Phase 1 (no target) runs exactly the same steps.

/** What learning admission did to a bank. */
export interface LearnedOutcome<B> {
  /** The bank after admission (the input when nothing was installed). */
  bank: B;
  before: string;
  after: string;
  /** Why the proposal was refused, if it was. */
  refused?: string;
}

/**
 * RSIAgent's learning admission: the same Actor proposes lessons from its active context and the
 * Verifier's report; the host refuses a proposal that names another target, another bank or
 * another verdict, and `install` refuses boundary-breaking content, with the reason kept.
 */
export async function admitLessons<Env, B extends BankHandle, P>(
  roles: RsiRoles<Env, B, P>,
  input: {
    targetId: string;
    work: Work<P>;
    run: ActorRun;
    report: VerifierReport;
    verdict: 'PASS' | 'FAIL';
    bank: B;
  },
  signal?: AbortSignal,
): Promise<LearnedOutcome<B>> {
  const { targetId, bank, verdict } = input;
  const proposal = await roles.proposeLessons(
    { work: input.work, run: input.run, report: input.report, verdict, bank },
    signal,
  );
  let refused: string | undefined;
  let out = bank;
  if (proposal.targetId !== targetId) {
    refused = `the proposal names target ${JSON.stringify(proposal.targetId)}, not ${JSON.stringify(targetId)}`;
  } else if (proposal.baseHash !== bank.hash) {
    refused = `the proposal was made against bank ${proposal.baseHash}, not the installed ${bank.hash}`;
  } else if (proposal.verdict !== verdict) {
    refused = `the proposal says ${proposal.verdict}, the routed verdict is ${verdict}`;
  } else {
    const admission = await roles.install(proposal, bank, signal);
    if (admission.installed) out = admission.bank;
    else refused = admission.reason;
  }
  return {
    bank: out,
    before: bank.hash,
    after: out.hash,
    ...(refused !== undefined ? { refused } : {}),
  };
}

/** Input of {@link practiseProject}. */
export interface PracticeInput<B, P> {
  /** The target (or Phase-1 wave) the project serves: lesson proposals must name it. */
  targetId: string;
  /** An accepted publication (the host's check passed). */
  publication: P;
  /** The project's number within its search or wave (1-based): part of its environment's ids. */
  index: number;
  /** The target attempt whose search ran it, for the report. */
  attempt?: number;
  bank: B;
  /** Called after the verdict is routed, before learning. */
  onVerdict?: (outcome: ProjectOutcome<P>) => void;
  /** Called after learning admission. */
  onLearned?: (learned: LearnedOutcome<B>) => void;
}

/**
 * One practice project: a separate environment with the publication's fixtures and `bank`, a
 * fresh Actor and Verifier, the verdict routed from both, and — for a grounded verdict only —
 * learning admission while the environment is live. An unverified outcome is returned but never
 * learned from. The environment is released on every path; infrastructure failures propagate.
 * @returns the outcome and the bank after learning
 */
export async function practiseProject<Env, B extends BankHandle, P>(
  roles: RsiRoles<Env, B, P>,
  input: PracticeInput<B, P>,
  signal?: AbortSignal,
): Promise<{ outcome: ProjectOutcome<P>; bank: B }> {
  const { targetId, publication, index, bank } = input;
  const work: Work<P> & { kind: 'practice' } = {
    kind: 'practice',
    targetId,
    project: publication,
    index,
  };
  const env = await roles.openPractice(work, bank, signal);
  try {
    const run = await roles.act(env, work, bank, signal);
    const report = await roles.verify(env, work, signal);
    const verdict = routeVerdict(run.ending, report);
    const outcome: ProjectOutcome<P> = {
      index,
      ...(input.attempt !== undefined ? { attempt: input.attempt } : {}),
      publication,
      verdict,
      report: report.report,
      bankBefore: bank.hash,
      bankAfter: bank.hash,
    };
    input.onVerdict?.(outcome);
    if (!isGrounded(verdict)) return { outcome, bank };
    const learned = await admitLessons(
      roles,
      { targetId, work, run, report, verdict, bank },
      signal,
    );
    input.onLearned?.(learned);
    outcome.bankAfter = learned.after;
    if (learned.refused !== undefined) outcome.learningRefused = learned.refused;
    return { outcome, bank: learned.bank };
  } finally {
    await roles.release(env);
  }
}
