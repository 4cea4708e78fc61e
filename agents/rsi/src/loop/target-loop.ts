import { throwIfAborted } from '@troupe/proto';
import {
  type ActorEnding,
  isGrounded,
  routeVerdict,
  type Verdict,
  type VerifierReport,
} from './verdict';

// RSIAgent's target state machine (seed 004, "core/self_evolving_loop.py" and its OSWorld
// adapter), free of any model, environment or store: the roles and the host's admission steps
// are injected, so every routing branch is a plain function of what they return. The driver
// binds the roles to agent actors and environments; the tests bind them to scripts.

/** A memory bank as the loop sees it: its identity. */
export interface BankHandle {
  /** The bank's tree hash (`sha256:`-less hex or any stable identity string). */
  readonly hash: string;
}

/** The work an Actor does in one environment: the target itself, or a practice project. */
export type Work<P> =
  | { kind: 'target'; targetId: string; attempt: number; final: boolean }
  | { kind: 'practice'; targetId: string; project: P; index: number };

/** What an Actor run hands back: how it ended and the active context learning starts from. */
export interface ActorRun {
  ending: ActorEnding;
  /** The Actor's active context (its conversation), kept for the same Actor's lesson proposal. */
  context: unknown;
}

/** Lessons the Actor proposes after a grounded outcome, addressed to one target and one bank. */
export interface LessonProposal {
  /** The target the lessons were learned on. */
  targetId: string;
  /** The bank the Actor worked with; the host refuses a proposal against any other. */
  baseHash: string;
  /** The verdict the Actor was told; the host refuses one that disagrees with the routed one. */
  verdict: 'PASS' | 'FAIL';
  /** The proposed edits, checked against the bank's boundaries by {@link RsiRoles.install}. */
  changes: unknown;
}

/** What installing a proposal did: a new bank, or the reason it was refused. */
export type Admission<B> = { installed: true; bank: B } | { installed: false; reason: string };

/** The Curriculum's answer: a project to practise, READY (try the target again) or STALLED. */
export type CurriculumReply<P> =
  { kind: 'project'; publication: P } | { kind: 'READY' } | { kind: 'STALLED'; reason?: string };

/** One practice project's outcome, kept and fed to the next Curriculum round. */
export interface ProjectOutcome<P> {
  index: number;
  publication: P;
  verdict: Verdict;
  /** The Verifier's report on the practice machine. */
  report: string;
  /** Bank before and after learning from this project (equal when nothing was installed). */
  bankBefore: string;
  bankAfter: string;
  /** Why a lesson proposal was refused, if one was. */
  learningRefused?: string;
}

/** What the Curriculum is asked: the target's situation and every project outcome so far. */
export interface CurriculumRequest<B, P> {
  targetId: string;
  /** `review`: the target passed and may still prompt practice (`curriculum_review`). */
  mode: 'review' | 'practice';
  /** The target verdict that opened this search. */
  verdict: 'PASS' | 'FAIL';
  /** The Verifier's full report on the target. */
  report: string;
  bank: B;
  outcomes: readonly ProjectOutcome<P>[];
  /** The corrective message when the last publication was refused. */
  correction?: string;
}

/** The roles and environment operations the loop drives. Infrastructure failures throw. */
export interface RsiRoles<Env, B extends BankHandle, P> {
  /** A fresh target environment with `bank` installed (and checked installed). */
  openTarget(work: Work<P> & { kind: 'target' }, bank: B, signal?: AbortSignal): Promise<Env>;
  /** A separate practice environment, the publication's fixtures replayed into it. */
  openPractice(work: Work<P> & { kind: 'practice' }, bank: B, signal?: AbortSignal): Promise<Env>;
  /** Releases an environment (also after failures; must not throw for a gone one). */
  release(env: Env): Promise<void>;
  /** A fresh Actor works `work` on `env` with read access to `bank`. */
  act(env: Env, work: Work<P>, bank: B, signal?: AbortSignal): Promise<ActorRun>;
  /** A fresh Verifier judges `work` from `env`'s state; it never sees the Actor's messages. */
  verify(env: Env, work: Work<P>, signal?: AbortSignal): Promise<VerifierReport>;
  /** The same Actor proposes lessons from its active context and the Verifier's report. */
  proposeLessons(
    input: {
      work: Work<P>;
      run: ActorRun;
      report: VerifierReport;
      verdict: 'PASS' | 'FAIL';
      bank: B;
    },
    signal?: AbortSignal,
  ): Promise<LessonProposal>;
  /** Applies a proposal the host admitted; boundary-breaking content is refused with a reason. */
  install(proposal: LessonProposal, bank: B, signal?: AbortSignal): Promise<Admission<B>>;
  /** The target's persistent Curriculum session takes one turn. */
  curriculum(request: CurriculumRequest<B, P>, signal?: AbortSignal): Promise<CurriculumReply<P>>;
  /**
   * The host's check of a publication: undefined when it names a project root and carries a
   * captured, replayable fixture tree; otherwise the corrective message sent back.
   */
  checkPublication(publication: P): string | undefined;
}

/** `curriculum_review`: a PASS is reviewed by the Curriculum; `verifier_pass`: a PASS ends it. */
export type StopPolicy = 'curriculum_review' | 'verifier_pass';

/** Settings of one target's loop. */
export interface TargetLoopOptions {
  stopPolicy: StopPolicy;
  /** Learn after a PASS too (a grounded FAIL is always learned from). @default true */
  learnOnPass?: boolean;
  /**
   * Target attempts at most; the last one is final (no Curriculum after it), so a Curriculum that
   * keeps answering READY cannot loop forever. @default 4
   */
  maxAttempts?: number;
  /** Practice projects per search before it counts as STALLED. @default 6 */
  maxProjects?: number;
  /** Refused publications per search before it counts as STALLED. @default 3 */
  maxRefusedPublications?: number;
  /** Progress: one event per step of the state machine. */
  onEvent?: (event: TargetLoopEvent) => void;
  signal?: AbortSignal;
}

/** A step of the state machine, for progress streams and the report. */
export type TargetLoopEvent =
  | { type: 'attempt'; attempt: number; final: boolean; bank: string }
  | { type: 'verdict'; work: 'target' | 'practice'; verdict: Verdict; index: number }
  | {
      type: 'learned';
      work: 'target' | 'practice';
      before: string;
      after: string;
      refused?: string;
    }
  | { type: 'curriculum'; mode: 'review' | 'practice'; reply: 'project' | 'READY' | 'STALLED' }
  | { type: 'publication_refused'; reason: string }
  | { type: 'project'; index: number; verdict: Verdict };

/**
 * How a target ended. `passed`: a grounded PASS that was final under the stop policy;
 * `final_attempt`: the one fresh attempt after the Curriculum STALLED (or the attempt cap), whose
 * verdict is returned whatever it is; `unverified`: Actor and Verifier did not agree — an error
 * status, never learned from, which a phase refuses to advance on.
 */
export type TargetStatus = 'passed' | 'final_attempt' | 'unverified';

/** One target attempt, for the report. */
export interface AttemptRecord {
  attempt: number;
  final: boolean;
  verdict: Verdict;
  report: string;
  bankBefore: string;
  bankAfter: string;
  learningRefused?: string;
}

/** The loop's result: the status, the last verdict, the output bank and what happened. */
export interface TargetResult<B, P> {
  status: TargetStatus;
  verdict: Verdict;
  bankIn: string;
  bank: B;
  attempts: AttemptRecord[];
  projects: ProjectOutcome<P>[];
  refusedPublications: number;
  /** Why the last practice search stopped, when it STALLED. */
  stalled?: string;
}

/** Whether a phase may advance on this result (RSIAgent's transition gate). */
export function isTransitionReady(
  result: Pick<TargetResult<unknown, unknown>, 'status' | 'verdict'>,
): boolean {
  return result.status !== 'unverified' && isGrounded(result.verdict);
}

/**
 * Runs one target to its end: fresh environment and roles per attempt; Actor, then Verifier;
 * the verdict routed from both; grounded outcomes learned from (in the still-live environment)
 * and installed only after the host's target, bank and verdict checks; after a FAIL (or a
 * reviewed PASS that prompts practice) the Curriculum proposes projects, each practised in its own
 * environment and learned from, until READY (a fresh attempt) or STALLED (one final fresh
 * attempt). Environments are released on every path; infrastructure failures propagate.
 */
export async function runTarget<Env, B extends BankHandle, P>(
  targetId: string,
  bankIn: B,
  roles: RsiRoles<Env, B, P>,
  options: TargetLoopOptions,
): Promise<TargetResult<B, P>> {
  const { signal, onEvent } = options;
  const learnOnPass = options.learnOnPass ?? true;
  const maxAttempts = options.maxAttempts ?? 4;
  const maxProjects = options.maxProjects ?? 6;
  const maxRefused = options.maxRefusedPublications ?? 3;
  let bank = bankIn;
  const attempts: AttemptRecord[] = [];
  const projects: ProjectOutcome<P>[] = [];
  let refusedPublications = 0;
  let stalled: string | undefined;
  const emit = (e: TargetLoopEvent): void => onEvent?.(e);
  const result = (status: TargetStatus, verdict: Verdict): TargetResult<B, P> => ({
    status,
    verdict,
    bankIn: bankIn.hash,
    bank,
    attempts,
    projects,
    refusedPublications,
    ...(stalled !== undefined ? { stalled } : {}),
  });

  /** Learning admission: the same Actor proposes; the host checks, then installs. */
  const learn = async (
    work: Work<P>,
    run: ActorRun,
    report: VerifierReport,
    verdict: 'PASS' | 'FAIL',
  ): Promise<{ before: string; after: string; refused?: string }> => {
    const before = bank.hash;
    const proposal = await roles.proposeLessons({ work, run, report, verdict, bank }, signal);
    let refused: string | undefined;
    if (proposal.targetId !== targetId) {
      refused = `the proposal names target ${JSON.stringify(proposal.targetId)}, not ${JSON.stringify(targetId)}`;
    } else if (proposal.baseHash !== bank.hash) {
      refused = `the proposal was made against bank ${proposal.baseHash}, not the installed ${bank.hash}`;
    } else if (proposal.verdict !== verdict) {
      refused = `the proposal says ${proposal.verdict}, the routed verdict is ${verdict}`;
    } else {
      const admission = await roles.install(proposal, bank, signal);
      if (admission.installed) bank = admission.bank;
      else refused = admission.reason;
    }
    const outcome = { before, after: bank.hash, ...(refused !== undefined ? { refused } : {}) };
    emit({ type: 'learned', work: work.kind, ...outcome });
    return outcome;
  };

  /** Runs an accepted project in its own environment and learns from a grounded outcome. */
  const practise = async (publication: P): Promise<ProjectOutcome<P>> => {
    const index = projects.length + 1;
    const work: Work<P> & { kind: 'practice' } = {
      kind: 'practice',
      targetId,
      project: publication,
      index,
    };
    const before = bank.hash;
    const env = await roles.openPractice(work, bank, signal);
    let outcome: ProjectOutcome<P>;
    try {
      const run = await roles.act(env, work, bank, signal);
      const report = await roles.verify(env, work, signal);
      const verdict = routeVerdict(run.ending, report);
      emit({ type: 'verdict', work: 'practice', verdict, index });
      outcome = {
        index,
        publication,
        verdict,
        report: report.report,
        bankBefore: before,
        bankAfter: before,
      };
      // An unverified practice outcome is kept for the Curriculum but never learned from.
      if (isGrounded(verdict)) {
        const learned = await learn(work, run, report, verdict);
        outcome.bankAfter = learned.after;
        if (learned.refused !== undefined) outcome.learningRefused = learned.refused;
      }
    } finally {
      await roles.release(env);
    }
    projects.push(outcome);
    emit({ type: 'project', index, verdict: outcome.verdict });
    return outcome;
  };

  /**
   * One Curriculum search: turns until READY or STALLED, each accepted project practised. In
   * `review` mode a READY or STALLED before any project is a zero-project return.
   * @returns the reply that ended it and how many projects it ran
   */
  const search = async (
    mode: 'review' | 'practice',
    verdict: 'PASS' | 'FAIL',
    report: string,
    beforeFirstProject?: () => Promise<void>,
  ): Promise<{ end: 'READY' | 'STALLED'; ran: number }> => {
    let ran = 0;
    let refusedHere = 0;
    let correction: string | undefined;
    for (;;) {
      throwIfAborted(signal);
      const reply = await roles.curriculum(
        {
          targetId,
          mode,
          verdict,
          report,
          bank,
          outcomes: [...projects],
          ...(correction !== undefined ? { correction } : {}),
        },
        signal,
      );
      emit({ type: 'curriculum', mode, reply: reply.kind });
      if (reply.kind === 'READY') return { end: 'READY', ran };
      if (reply.kind === 'STALLED') {
        stalled = reply.reason ?? 'the Curriculum stalled';
        return { end: 'STALLED', ran };
      }
      const problem = roles.checkPublication(reply.publication);
      if (problem !== undefined) {
        refusedPublications++;
        refusedHere++;
        emit({ type: 'publication_refused', reason: problem });
        if (refusedHere > maxRefused) {
          stalled = `${refusedHere} publications refused; the last: ${problem}`;
          return { end: 'STALLED', ran };
        }
        correction = problem;
        continue;
      }
      correction = undefined;
      if (ran >= maxProjects) {
        stalled = `${maxProjects} projects practised without READY`;
        return { end: 'STALLED', ran };
      }
      if (ran === 0) await beforeFirstProject?.();
      await practise(reply.publication);
      ran++;
    }
  };

  for (let attempt = 1; ; attempt++) {
    throwIfAborted(signal);
    const final = attempt >= maxAttempts || stalled !== undefined;
    const work: Work<P> & { kind: 'target' } = { kind: 'target', targetId, attempt, final };
    emit({ type: 'attempt', attempt, final, bank: bank.hash });
    const bankBefore = bank.hash;
    let env: Env | undefined = await roles.openTarget(work, bank, signal);
    const releaseTarget = async (): Promise<void> => {
      if (env === undefined) return;
      const e = env;
      env = undefined;
      await roles.release(e);
    };
    try {
      const run = await roles.act(env, work, bank, signal);
      const report = await roles.verify(env, work, signal);
      const verdict = routeVerdict(run.ending, report);
      emit({ type: 'verdict', work: 'target', verdict, index: attempt });
      const record: AttemptRecord = {
        attempt,
        final,
        verdict,
        report: report.report,
        bankBefore,
        bankAfter: bankBefore,
      };
      attempts.push(record);
      if (!isGrounded(verdict)) return result('unverified', verdict);

      // Learned from before the environment is released: the Actor's context is still live.
      if (verdict === 'FAIL' || learnOnPass) {
        const learned = await learn(work, run, report, verdict);
        record.bankAfter = learned.after;
        if (learned.refused !== undefined) record.learningRefused = learned.refused;
      }
      if (final) return result(verdict === 'PASS' ? 'passed' : 'final_attempt', verdict);

      if (verdict === 'PASS') {
        if (options.stopPolicy === 'verifier_pass') return result('passed', verdict);
        // The passed environment is kept while the Curriculum reviews; practice needs a fresh
        // target test afterwards, so it is released before the first project.
        const review = await search('review', 'PASS', report.report, releaseTarget);
        if (review.ran === 0) return result('passed', verdict);
        continue; // READY or STALLED after practice: a fresh attempt (final if STALLED)
      }

      await releaseTarget();
      await search('practice', 'FAIL', report.report);
      // READY → a fresh attempt; STALLED → one final fresh attempt (`stalled` is set).
    } finally {
      await releaseTarget();
    }
  }
}
