import { throwIfAborted } from '@troupe/proto';
import { applyBankChanges, type BankChange } from '../bank/bank-changes';
import type { BankStore } from '../bank/bank-store';
import type { MemoryBank } from '../bank/memory-bank';
import {
  adoptCommitted,
  type BankVersion,
  protocolError,
  recordMessage,
  type StudyRecords,
  versionOf,
} from './study-records';

/** What one practice branch produced from the wave's snapshot. */
export type BranchOutcome =
  | { status: 'practised'; verdict: 'PASS' | 'FAIL'; bank: MemoryBank; detail?: BranchDetail }
  /** Not grounded (UNVERIFIED) or infrastructure failed: the wave cannot be committed. */
  | { status: 'quarantined'; reason: string };

/** What a practised branch reports for the records (the per-cycle view of the report). */
export interface BranchDetail {
  /** The Verifier's report (a summary: hosts clip it). */
  report?: string;
  /** Tree hashes of the branch's bank before and after learning. */
  bankBefore?: string;
  bankAfter?: string;
  /** Why the branch's lesson proposal was refused, if it was. */
  learningRefused?: string;
}

/** The Curriculum's next wave: projects to practise in parallel, or the end of Phase 1. */
export type WaveProposal<P> =
  { kind: 'wave'; projects: P[] } | { kind: 'READY' } | { kind: 'STALLED'; reason?: string };

/** One branch in a wave's record. */
export interface BranchRecord {
  /** Position in the Curriculum's order (1-based): the order branches are committed in. */
  index: number;
  /** A short name of the project (its root). */
  project: string;
  status: 'practised' | 'quarantined';
  verdict?: 'PASS' | 'FAIL';
  /** Paths the branch changed relative to the snapshot. */
  changed: string[];
  /** Whether its changes went into the wave's output. */
  committed: boolean;
  /** Why they did not (a conflict with an earlier branch, a boundary, quarantine). */
  refused?: string;
  /** The Verifier's report summary (records written before it existed lack it). */
  report?: string;
  /** Tree hashes of the branch's own bank before and after learning. */
  bankBefore?: string;
  bankAfter?: string;
  /** Why the branch's lessons were refused at admission. */
  learningRefused?: string;
}

/** A committed wave: `<bankId>.study.phase1.wave-<n>`. */
export interface WaveRecord {
  wave: number;
  input: BankVersion;
  output: BankVersion;
  branches: BranchRecord[];
}

/** Phase 1's transition record: `<bankId>.study.phase1.ready`. */
export interface Phase1Result {
  output: BankVersion;
  waves: number;
  /** How the Curriculum ended it (`READY`, `STALLED` or the wave cap). */
  ended: 'READY' | 'STALLED' | 'max_waves';
  reason?: string;
}

/** Options of {@link runPhase1}. */
export interface Phase1Options<P> {
  banks: BankStore;
  records: StudyRecords;
  /** The starting bank (a committed version of the study's bank, often nearly empty). */
  input: BankVersion;
  /** The Curriculum proposes wave `wave` from the current bank and every earlier wave's record. */
  proposeWave(
    input: { wave: number; bank: MemoryBank; history: readonly WaveRecord[] },
    signal?: AbortSignal,
  ): Promise<WaveProposal<P>>;
  /** Practises one project on a copy of the snapshot in its own environment and learns from it. */
  practise(project: P, snapshot: MemoryBank, signal?: AbortSignal): Promise<BranchOutcome>;
  /** A short name of a project for the records. */
  projectName(project: P): string;
  /** Branches practised at once. @default 2 */
  concurrency?: number;
  /** Waves at most. @default 5 */
  maxWaves?: number;
  onWave?: (record: WaveRecord, reused: boolean) => void;
  signal?: AbortSignal;
}

const WAVE_PREFIX = 'rsi phase1 ';

/** A branch record without its detail (what travels in the commit message). */
function lean(b: BranchRecord): BranchRecord {
  const { report: _r, bankBefore: _b, bankAfter: _a, learningRefused: _l, ...rest } = b;
  return rest;
}

/** The changes that turn `from` into `to`. */
export function bankChangesBetween(from: MemoryBank, to: MemoryBank): BankChange[] {
  const before = new Map(from.manifest.map((e) => [e.path, e.sha256]));
  const changes: BankChange[] = [];
  for (const e of to.manifest) {
    const old = before.get(e.path);
    if (old === e.sha256) continue;
    const content = to.read(e.path) ?? new Uint8Array();
    changes.push({ op: old === undefined ? 'add' : 'modify', path: e.path, content });
  }
  const after = new Set(to.paths);
  for (const path of from.paths) if (!after.has(path)) changes.push({ op: 'delete', path });
  return changes;
}

/** Runs `fn` over `items` with at most `limit` at once, keeping the order of results. */
async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (t: T) => Promise<R>) {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/**
 * RSIAgent's Phase 1: waves of practice branches, each wave's projects practised in parallel from
 * one snapshot of the bank, their lessons then committed in the Curriculum's order. A branch
 * whose change touches a path an earlier branch of the wave changed is refused (its lessons were
 * learned against content that is no longer there), as is one that breaks the bank's boundaries
 * once combined. A quarantined branch (unverified, or infrastructure failure) blocks its wave:
 * nothing of the wave is committed and the phase stops with a `PROTOCOL` error, so the wave is
 * practised again on a rerun. Committed waves and the final `ready` record are write-once, so a
 * rerun after a crash goes on from the first wave without a record.
 */
export async function runPhase1<P>(options: Phase1Options<P>): Promise<Phase1Result> {
  const { banks, records, signal } = options;
  const bankId = records.bankId;
  const done = await records.get<Phase1Result>('phase1', 'ready');
  if (done !== undefined) return done;
  const maxWaves = options.maxWaves ?? 5;
  const history: WaveRecord[] = [];
  let current = options.input;
  for (let wave = 1; ; wave++) {
    throwIfAborted(signal);
    const recorded = await records.get<WaveRecord>('phase1', `wave-${wave}`);
    if (recorded !== undefined) {
      if (recorded.input.commitHash !== current.commitHash) {
        throw protocolError(
          `Phase 1 wave ${wave}: its record starts from ${recorded.input.commitHash}, not ${current.commitHash} (lineage drift)`,
          { wave },
        );
      }
      history.push(recorded);
      current = recorded.output;
      options.onWave?.(recorded, true);
      continue;
    }
    const adopted = await adoptCommitted<Omit<WaveRecord, 'output'>>(
      banks,
      bankId,
      current,
      WAVE_PREFIX,
      `Phase 1 wave ${wave}`,
      (r) => r.wave === wave,
    );
    const orphan: WaveRecord | undefined = adopted && {
      ...adopted.record,
      output: versionOf(adopted.commit),
    };
    if (orphan !== undefined) {
      await records.put('phase1', `wave-${wave}`, orphan);
      history.push(orphan);
      current = orphan.output;
      options.onWave?.(orphan, true);
      continue;
    }
    const snapshot = (
      await banks.load(
        bankId,
        { version: current.version },
        {
          expectTreeHash: current.treeHash,
          ...(signal ? { signal } : {}),
        },
      )
    ).bank;
    const finish = async (ended: Phase1Result['ended'], reason?: string) => {
      const result: Phase1Result = {
        output: current,
        waves: history.length,
        ended,
        ...(reason !== undefined ? { reason } : {}),
      };
      await records.put('phase1', 'ready', result);
      return result;
    };
    if (wave > maxWaves) return finish('max_waves');
    const proposal = await options.proposeWave({ wave, bank: snapshot, history }, signal);
    if (proposal.kind === 'READY') return finish('READY');
    if (proposal.kind === 'STALLED') return finish('STALLED', proposal.reason);

    const outcomes = await mapLimited(proposal.projects, options.concurrency ?? 2, (p) =>
      options.practise(p, snapshot, signal),
    );
    const quarantined = outcomes.findIndex((o) => o.status === 'quarantined');
    if (quarantined >= 0) {
      const o = outcomes[quarantined] as { reason: string };
      throw protocolError(
        `Phase 1 wave ${wave} is blocked: branch ${quarantined + 1} (${options.projectName(proposal.projects[quarantined]!)}) was quarantined: ${o.reason}`,
        { wave, branch: quarantined + 1 },
      );
    }

    // Commit in Curriculum order onto the snapshot.
    let merged = snapshot;
    const touched = new Set<string>();
    const branches: BranchRecord[] = outcomes.map((o, i) => {
      const project = options.projectName(proposal.projects[i]!);
      if (o.status !== 'practised') throw new Error('unreachable: quarantine handled above');
      const changes = bankChangesBetween(snapshot, o.bank);
      const changed = changes.map((c) => c.path);
      const base = {
        index: i + 1,
        project,
        status: o.status,
        verdict: o.verdict,
        changed,
        ...Object.fromEntries(Object.entries(o.detail ?? {}).filter(([, v]) => v !== undefined)),
      };
      const clash = changed.filter((p) => touched.has(p));
      if (clash.length > 0) {
        return {
          ...base,
          committed: false,
          refused: `changes ${clash.join(', ')}, which an earlier branch of the wave changed`,
        };
      }
      const applied = applyBankChanges(merged, changes);
      if (!applied.ok) return { ...base, committed: false, refused: applied.rejection.reason };
      merged = applied.bank;
      for (const p of changed) touched.add(p);
      return { ...base, committed: changed.length > 0 };
    });
    let output = current;
    if (merged.treeHash !== current.treeHash) {
      const commit = await banks.commit({
        bankId,
        parent: current,
        bank: merged,
        author: 'rsi',
        role: 'phase1',
        // The record travels with the commit: a crash before the record is written loses nothing.
        // Without the reports and hashes of the per-cycle view: a commit message is at most 4 KiB.
        message: recordMessage(WAVE_PREFIX, { wave, input: current, branches: branches.map(lean) }),
        ...(signal ? { signal } : {}),
      });
      output = versionOf(commit);
    }
    const record: WaveRecord = { wave, input: current, output, branches };
    await records.put('phase1', `wave-${wave}`, record);
    history.push(record);
    current = output;
    options.onWave?.(record, false);
  }
}
