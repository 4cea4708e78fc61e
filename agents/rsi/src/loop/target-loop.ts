import { throwIfAborted } from '@troupe/proto';
import { admitLessons, practiseProject } from './practice';
import type { ActorRun, BankHandle, ProjectOutcome, RsiRoles, Work } from './rsi-roles';
import { isGrounded, routeVerdict, type Verdict, type VerifierReport } from './verdict';

export type {
  ActorRun,
  Admission,
  BankHandle,
  CurriculumReply,
  CurriculumRequest,
  LessonProposal,
  ProjectOutcome,
  RsiRoles,
  Work,
} from './rsi-roles';

// RSIAgent's target state machine (seed 004, "core/self_evolving_loop.py" and its OSWorld
// adapter), free of any model, environment or store: the roles and the host's admission steps
// are injected, so every routing branch is a plain function of what they return. The driver
// binds the roles to agent actors and environments; the tests bind them to scripts.
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

  /** Learning admission (the same Actor proposes; the host checks, then installs). */
  const learn = async (
    work: Work<P>,
    run: ActorRun,
    report: VerifierReport,
    verdict: 'PASS' | 'FAIL',
  ): Promise<{ before: string; after: string; refused?: string }> => {
    const learned = await admitLessons(
      roles,
      { targetId, work, run, report, verdict, bank },
      signal,
    );
    bank = learned.bank;
    const outcome = {
      before: learned.before,
      after: learned.after,
      ...(learned.refused !== undefined ? { refused: learned.refused } : {}),
    };
    emit({ type: 'learned', work: work.kind, ...outcome });
    return outcome;
  };

  /** Runs an accepted project in its own environment and learns from a grounded outcome. */
  const practise = async (publication: P): Promise<ProjectOutcome<P>> => {
    const index = projects.length + 1;
    const done = await practiseProject(
      roles,
      {
        targetId,
        publication,
        index,
        attempt: attempts.length,
        bank,
        onVerdict: (o) => emit({ type: 'verdict', work: 'practice', verdict: o.verdict, index }),
        onLearned: (l) =>
          emit({
            type: 'learned',
            work: 'practice',
            before: l.before,
            after: l.after,
            ...(l.refused !== undefined ? { refused: l.refused } : {}),
          }),
      },
      signal,
    );
    bank = done.bank;
    projects.push(done.outcome);
    emit({ type: 'project', index, verdict: done.outcome.verdict });
    return done.outcome;
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
