import {
  delay,
  ErrorCode,
  ErrorReason,
  hasErrorCode,
  invalidArgument,
  isRetryable,
  isTroupeError,
  throwIfAborted,
  TroupeError,
} from '@troupe/proto';
import type { BankStore } from '../bank/bank-store';
import { isBankIntegrityError } from '../bank/bank-integrity';
import type { MemoryBank } from '../bank/memory-bank';
import type { FrozenBank } from './phase2';
import type { StudyRecords } from './study-records';

/**
 * One held-out task's evaluation: `scored` with a score in [0, 1] from the task's official
 * evaluator, or `unscored` when infrastructure failed (never a 0: it did not measure the bank).
 */
export type Phase3Evaluation =
  { status: 'scored'; score: number; detail?: string } | { status: 'unscored'; reason: string };

/**
 * The record of one held-out task: `<bankId>.study.phase3.<taskId>`. `attempts` counts the
 * evaluations it took (more than 1 after retryable infrastructure failures).
 */
export type Phase3TaskRecord = Phase3Evaluation & {
  taskId: string;
  bankTreeHash: string;
  attempts?: number;
};

/** Phase 3's result: `<bankId>.study.phase3.result`. */
export interface Phase3Result {
  /** The frozen bank's identity, checked before and after. */
  frozen: FrozenBank;
  tasks: Phase3TaskRecord[];
  scored: number;
  unscored: number;
  /** Mean score over the scored tasks (0 when none was scored). */
  meanScore: number;
}

/** Options of {@link runPhase3}. */
export interface Phase3Options<T extends { id: string }> {
  /** Held-out tasks; must be disjoint from the frozen bank's development tasks. */
  tasks: readonly T[];
  /** Field name the disjointness error names. @default 'tasks' */
  tasksField?: string;
  banks: BankStore;
  records: StudyRecords;
  /**
   * Runs the task with `bank` read-only (no writeback, no Curriculum) and grades it. `attempt`
   * (1-based) tells a retry apart, so it can use fresh sessions and machines.
   */
  evaluate(
    task: T,
    bank: MemoryBank,
    signal: AbortSignal | undefined,
    attempt: number,
  ): Promise<Phase3Evaluation>;
  /**
   * Evaluations of one task before an infrastructure failure (a node agent lost with the task's
   * machine, no sandbox host live while one restarts, a model provider down) leaves it
   * unscored. @default 4
   */
  evaluationAttempts?: number;
  /**
   * Wait before the second evaluation, doubled before each later one (up to 60 s): a node agent
   * that restarts needs seconds to register again. @default 5000
   */
  evaluationBackoffMs?: number;
  onTask?: (event: { task: string; reused: boolean; record: Phase3TaskRecord }) => void;
  signal?: AbortSignal;
}

/**
 * RSIAgent's Phase 3: the frozen Phase 2 bank measured on held-out tasks. The held-out tasks must
 * not overlap the development tasks; the bank is loaded and its hash checked before the first
 * task and again after the last (a bank mutated behind the study's back stops the phase with an
 * integrity error); an infrastructure failure that persists over `evaluationAttempts` leaves a
 * task unscored (a retryable one is retried first; others at once); each task's record is
 * written once, so a rerun after a crash evaluates only the tasks without one; the aggregate is
 * the mean over the scored tasks.
 */
export async function runPhase3<T extends { id: string }>(
  options: Phase3Options<T>,
): Promise<Phase3Result> {
  const { banks, records, signal } = options;
  const frozen = await records.get<FrozenBank>('phase2', 'frozen');
  if (frozen === undefined) {
    throw new TroupeError(
      ErrorCode.NOT_FOUND,
      `study ${records.bankId} has no frozen Phase 2 bank: run Phase 2 first`,
      { reason: ErrorReason.PROTOCOL, retryable: false },
    );
  }
  const dev = new Set(frozen.devTaskIds);
  const overlap = options.tasks.filter((t) => dev.has(t.id)).map((t) => t.id);
  if (overlap.length > 0) {
    throw invalidArgument(
      options.tasksField ?? 'tasks',
      `held-out tasks must be disjoint from the development tasks; both have ${overlap.join(', ')}`,
    );
  }
  const load = () =>
    banks.load(
      frozen.bankId,
      { version: frozen.version },
      {
        expectTreeHash: frozen.treeHash,
        ...(signal ? { signal } : {}),
      },
    );
  const before = await load();

  const done: Phase3TaskRecord[] = [];
  for (const task of options.tasks) {
    throwIfAborted(signal);
    const existing = await records.get<Phase3TaskRecord>('phase3', task.id);
    if (existing !== undefined && existing.bankTreeHash === frozen.treeHash) {
      done.push(existing);
      options.onTask?.({ task: task.id, reused: true, record: existing });
      continue;
    }
    const { evaluation, attempts } = await evaluateWithRetries(options, task, before.bank);
    if (evaluation.status === 'scored' && !(evaluation.score >= 0 && evaluation.score <= 1)) {
      throw invalidArgument(`evaluate(${task.id}).score`, 'must be in [0, 1]', evaluation.score);
    }
    const record: Phase3TaskRecord = {
      ...evaluation,
      taskId: task.id,
      bankTreeHash: frozen.treeHash,
      attempts,
    };
    await records.put('phase3', task.id, record);
    done.push(record);
    options.onTask?.({ task: task.id, reused: false, record });
  }

  try {
    await load();
  } catch (err) {
    if (isBankIntegrityError(err)) {
      throw new TroupeError(ErrorCode.INTERNAL, 'Phase-3 evaluation mutated frozen host memory', {
        cause: err,
        reason: ErrorReason.INTEGRITY,
        retryable: false,
        details: { bankId: frozen.bankId, version: frozen.version },
      });
    }
    throw err;
  }
  const scored = done.filter(
    (r): r is Phase3TaskRecord & { status: 'scored' } => r.status === 'scored',
  );
  const result: Phase3Result = {
    frozen,
    tasks: done,
    scored: scored.length,
    unscored: done.length - scored.length,
    meanScore: scored.length === 0 ? 0 : scored.reduce((a, r) => a + r.score, 0) / scored.length,
  };
  await records.put('phase3', 'result', result);
  return result;
}

/**
 * Whether a failed evaluation may succeed on a fresh machine: a retryable error, or any
 * `UNAVAILABLE` / `TIMEOUT` in its chain — a sandbox lost with its host is `UNAVAILABLE` and not
 * retryable *on that sandbox*, which is exactly what a fresh attempt replaces.
 */
function isInfrastructureFailure(err: unknown): boolean {
  return (
    isRetryable(err) ||
    hasErrorCode(err, ErrorCode.UNAVAILABLE) ||
    hasErrorCode(err, ErrorCode.TIMEOUT)
  );
}

/**
 * One held-out task's evaluation, retried while it fails for a retryable infrastructure reason.
 * Cancellation propagates (it is not a measurement either); the last failure leaves the task
 * unscored with its message.
 */
async function evaluateWithRetries<T extends { id: string }>(
  options: Phase3Options<T>,
  task: T,
  bank: MemoryBank,
): Promise<{ evaluation: Phase3Evaluation; attempts: number }> {
  const { signal } = options;
  const max = Math.max(1, options.evaluationAttempts ?? 4);
  const backoffMs = options.evaluationBackoffMs ?? 5_000;
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1) await delay(Math.min(60_000, backoffMs * 2 ** (attempt - 2)), signal);
    try {
      return { evaluation: await options.evaluate(task, bank, signal, attempt), attempts: attempt };
    } catch (err) {
      if (signal?.aborted || (isTroupeError(err) && err.code === ErrorCode.CANCELLED)) throw err;
      if (attempt >= max || !isInfrastructureFailure(err)) {
        const reason = err instanceof Error ? err.message : String(err);
        return { evaluation: { status: 'unscored', reason }, attempts: attempt };
      }
    }
  }
}
