import { ErrorCode, isTroupeError, throwIfAborted, TroupeError } from '@troupe/proto';
import type { BankStore } from '../bank/bank-store';
import type { MemoryBank } from '../bank/memory-bank';
import { isTransitionReady, type TargetStatus } from '../loop/target-loop';
import type { Verdict } from '../loop/verdict';
import {
  adoptCommitted,
  type BankVersion,
  protocolError,
  recordMessage,
  type StudyRecords,
  versionOf,
} from './study-records';

export type { BankVersion } from './study-records';

/** One target attempt of a development task, for the report's per-cycle view. */
export interface Phase2AttemptLog {
  attempt: number;
  final: boolean;
  verdict: Verdict;
  /** The Verifier's report (a summary: hosts clip it). */
  report: string;
  /** Tree hashes of the bank before and after this attempt's lessons. */
  bankBefore: string;
  bankAfter: string;
  /** Why its lesson proposal was refused, if it was. */
  learningRefused?: string;
}

/** One practice project of a development task's Curriculum searches. */
export interface Phase2ProjectLog {
  index: number;
  /** The target attempt whose search ran it. */
  attempt?: number;
  /** The project's root (or the problem with its publication). */
  project: string;
  verdict: Verdict;
  report: string;
  bankBefore: string;
  bankAfter: string;
  learningRefused?: string;
}

/** What happened inside one development target: its attempts and practice projects. */
export interface Phase2Log {
  attempts: Phase2AttemptLog[];
  projects: Phase2ProjectLog[];
}

/** What one development target produced (the target loop's result, reduced for the record). */
export interface Phase2Outcome {
  status: TargetStatus;
  verdict: Verdict;
  /** The output bank (the input bank when nothing was learned). */
  bank: MemoryBank;
  attempts: number;
  projects: number;
  refusedPublications: number;
  stalled?: string;
  /** Attempts and projects, for the report (kept in the task's record, not in the commit). */
  log?: Phase2Log;
}

/** The accepted record of one development task: `<bankId>.study.phase2.<taskId>`. */
export interface Phase2TaskRecord {
  taskId: string;
  /** Position in the precommitted task list (1-based). */
  position: number;
  status: TargetStatus;
  verdict: Verdict;
  attempts: number;
  projects: number;
  refusedPublications: number;
  stalled?: string;
  bankIn: BankVersion;
  bankOut: BankVersion;
  /**
   * Attempts and projects (absent in records written before it existed, and in one adopted from
   * its commit message after a crash).
   */
  log?: Phase2Log;
}

/** Phase 2's frozen output: `<bankId>.study.phase2.frozen`. */
export interface FrozenBank extends BankVersion {
  bankId: string;
  /** The development task ids, in order (Phase 3 checks its tasks are disjoint from these). */
  devTaskIds: string[];
}

/** Options of {@link runPhase2}. */
export interface Phase2Options<T extends { id: string }> {
  /** The precommitted development tasks, run serially in this order. */
  tasks: readonly T[];
  /** The bank store and the study's records (whose `bankId` is the study's bank). */
  banks: BankStore;
  records: StudyRecords;
  /** The input: the transition-ready Phase 1 output (a committed version of the study's bank). */
  input: BankVersion;
  /** Runs one target to its end on `bank` (the target loop, bound to roles and environments). */
  runTask(task: T, bank: MemoryBank, signal?: AbortSignal): Promise<Phase2Outcome>;
  /** Progress: a task reused from its record, or run. */
  onTask?: (event: {
    task: string;
    position: number;
    reused: boolean;
    record: Phase2TaskRecord;
  }) => void;
  signal?: AbortSignal;
}

/** Phase 2's result: every task's record and the frozen bank. */
export interface Phase2Result {
  tasks: Phase2TaskRecord[];
  frozen: FrozenBank;
}

const PHASE2_PREFIX = 'rsi phase2 ';

/**
 * RSIAgent's Phase 2: the development tasks run serially, each accepted output bank the next
 * task's input, then the last output is frozen. Every boundary is a write-once record, so a rerun
 * after a crash (a `kill -9` of the coordinator or a node agent) reuses what was accepted and goes
 * on from the first task without one:
 * - a task's record is reused only when its input bank is the current bank (lineage);
 * - an output bank committed by a run that died before writing the record is adopted from its
 *   commit message (the record travels with the commit);
 * - a target that is not transition-ready (UNVERIFIED) stops the phase with a `PROTOCOL` error
 *   naming its status and verdict; nothing after it runs;
 * - a frozen record that names another bank is refused, never overwritten.
 */
export async function runPhase2<T extends { id: string }>(
  options: Phase2Options<T>,
): Promise<Phase2Result> {
  const { banks, records, signal } = options;
  const bankId = records.bankId;
  const start = await banks.getCommit(bankId, { version: options.input.version });
  if (start.commitHash !== options.input.commitHash) {
    throw protocolError(
      `Phase 2 input: version ${start.version} of bank ${bankId} is ${start.commitHash}, not ${options.input.commitHash}`,
      { bankId, version: start.version },
    );
  }
  let current = versionOf(start);
  const done: Phase2TaskRecord[] = [];
  for (const [i, task] of options.tasks.entries()) {
    throwIfAborted(signal);
    const position = i + 1;
    const existing = await records.get<Phase2TaskRecord>('phase2', task.id);
    if (existing !== undefined) {
      if (existing.bankIn.commitHash !== current.commitHash || existing.position !== position) {
        throw protocolError(
          `Phase 2 task ${task.id}: its record starts from bank ${existing.bankIn.commitHash} at position ${existing.position}, not ${current.commitHash} at ${position} (lineage drift)`,
          { taskId: task.id },
        );
      }
      // Reloaded and checked before reuse: the output must still verify.
      await banks.load(
        bankId,
        { version: existing.bankOut.version },
        {
          expectTreeHash: existing.bankOut.treeHash,
          ...(signal ? { signal } : {}),
        },
      );
      done.push(existing);
      current = existing.bankOut;
      options.onTask?.({ task: task.id, position, reused: true, record: existing });
      continue;
    }

    const orphan = await adoptCommitted<Omit<Phase2TaskRecord, 'bankOut'>>(
      banks,
      bankId,
      current,
      PHASE2_PREFIX,
      `Phase 2 task ${task.id}`,
      (r) => r.taskId === task.id && r.position === position,
    );
    const adopted: Phase2TaskRecord | undefined = orphan && {
      ...orphan.record,
      bankOut: versionOf(orphan.commit),
    };
    if (adopted) {
      await records.put('phase2', task.id, adopted);
      done.push(adopted);
      current = adopted.bankOut;
      options.onTask?.({ task: task.id, position, reused: true, record: adopted });
      continue;
    }

    const loaded = await banks.load(
      bankId,
      { version: current.version },
      {
        expectTreeHash: current.treeHash,
        ...(signal ? { signal } : {}),
      },
    );
    const outcome = await options.runTask(task, loaded.bank, signal);
    if (!isTransitionReady(outcome)) {
      throw protocolError(
        `Phase-2 target ${task.id} is not transition-ready: ${outcome.status}, ${outcome.verdict}`,
        { taskId: task.id, status: outcome.status, verdict: outcome.verdict },
      );
    }
    const partial: Omit<Phase2TaskRecord, 'bankOut'> = {
      taskId: task.id,
      position,
      status: outcome.status,
      verdict: outcome.verdict,
      attempts: outcome.attempts,
      projects: outcome.projects,
      refusedPublications: outcome.refusedPublications,
      ...(outcome.stalled !== undefined ? { stalled: outcome.stalled } : {}),
      bankIn: current,
    };
    let bankOut = current;
    if (outcome.bank.treeHash !== current.treeHash) {
      const commit = await banks.commit({
        bankId,
        parent: current,
        bank: outcome.bank,
        author: 'rsi',
        role: 'phase2',
        message: recordMessage(PHASE2_PREFIX, partial),
        ...(signal ? { signal } : {}),
      });
      bankOut = versionOf(commit);
    }
    const record: Phase2TaskRecord = {
      ...partial,
      bankOut,
      ...(outcome.log !== undefined ? { log: outcome.log } : {}),
    };
    await records.put('phase2', task.id, record);
    done.push(record);
    current = bankOut;
    options.onTask?.({ task: task.id, position, reused: false, record });
  }

  const frozen: FrozenBank = { bankId, ...current, devTaskIds: options.tasks.map((t) => t.id) };
  try {
    await records.put('phase2', 'frozen', frozen);
  } catch (err) {
    if (isTroupeError(err) && err.code === ErrorCode.ALREADY_EXISTS) {
      throw new TroupeError(
        ErrorCode.ALREADY_EXISTS,
        `Phase 2 of ${bankId} already froze a different output; it is not overwritten (start a new study to develop another bank)`,
        { cause: err, retryable: false, details: { bankId } },
      );
    }
    throw err;
  }
  return { tasks: done, frozen };
}
