import { type ActorEnding, type Verdict, type VerifierReport } from './verdict';

// The contract between RSIAgent's state machines (the target loop, Phase-1 practice) and the
// roles and environments a host binds them to.

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
  /** The target attempt whose Curriculum search ran it (absent in Phase 1 and old records). */
  attempt?: number;
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
