import type { Logger, RefFactory } from '@troupe/actors';
import type { TrajectoryStore } from '@troupe/agents';
import {
  type BankStore,
  type BankVersion,
  type Phase1Result,
  Phase1Practice,
  runPhase1,
  type ShellRoleModels,
  type StudyRecords,
  type WaveRecord,
} from '@troupe/rsi';
import { z } from 'zod';
import { type RsiPhase1Binding } from './rsi-study';

/** `spec.config.phase1` of an `rsi` job: Phase 1's practice waves. */
export const RsiPhase1ConfigSchema = z.strictObject({
  /**
   * Waves at most; `0` skips Phase 1 practice (the seed bank is Phase 2's input, `ended:
   * max_waves`). @default 3
   */
  maxWaves: z.int().min(0).max(50).default(3),
  /** Branches of a wave practised at once (each in its own sandbox). @default 2 */
  concurrency: z.int().min(1).max(16).default(2),
  /** Projects per wave at most (a larger wave is refused back to the Curriculum). @default 4 */
  maxProjectsPerWave: z.int().min(1).max(32).default(4),
});
/** Validated `spec.config.phase1`. */
export type RsiPhase1Config = z.output<typeof RsiPhase1ConfigSchema>;

/** What {@link runRsiPhase1} needs from the driver. */
export interface RsiPhase1Input {
  banks: BankStore;
  records: StudyRecords;
  /** The seed version. */
  input: BankVersion;
  system: RefFactory;
  trajectories: TrajectoryStore;
  jobId: string;
  /** The task context's `resourceId`: fresh sessions and sandboxes on a replay. */
  execution: string;
  models: ShellRoleModels;
  brief: string;
  /** The roles and Curriculum turns of the study's environment kind. @default shell's */
  binding?: RsiPhase1Binding;
  config: RsiPhase1Config;
  /** Refused waves before the Curriculum counts as STALLED. */
  maxRefusedPublications: number;
  budgetScope?: string;
  log: Logger;
  signal?: AbortSignal;
}

/**
 * The study's Phase 1: `runPhase1` with the hooks of {@link Phase1Practice} — by default the
 * Curriculum, Actor and Verifier as agent sessions on shell sandboxes; a desktop study's
 * `binding` gives its desktop roles and Curriculum turns. Waves are committed in the Curriculum's
 * order and the `phase1.ready` record is Phase 2's input.
 */
export function runRsiPhase1(input: RsiPhase1Input): Promise<Phase1Result> {
  const { log } = input;
  const phase1 = new Phase1Practice({
    system: input.system,
    trajectories: input.trajectories,
    jobId: input.jobId,
    execution: input.execution,
    models: input.models,
    brief: input.brief,
    ...(input.binding ?? {}),
    maxProjectsPerWave: input.config.maxProjectsPerWave,
    maxRefusedPublications: input.maxRefusedPublications,
    ...(input.budgetScope !== undefined ? { budgetScope: input.budgetScope } : {}),
    logger: log,
  });
  return runPhase1({
    banks: input.banks,
    records: input.records,
    input: input.input,
    ...phase1.hooks(),
    concurrency: input.config.concurrency,
    maxWaves: input.config.maxWaves,
    onWave: (record, reused) =>
      log.info(
        {
          wave: record.wave,
          reused,
          output: record.output.treeHash,
          branches: record.branches.map((b) => `${b.project}:${b.verdict ?? b.status}`),
        },
        'rsi phase 1 wave',
      ),
    ...(input.signal ? { signal: input.signal } : {}),
  });
}

/** Phase 1's wave records, in order (for the report; Phase 1 may have ended in an earlier run). */
export async function readPhase1Waves(
  records: StudyRecords,
  phase1: Phase1Result,
): Promise<WaveRecord[]> {
  const waves: WaveRecord[] = [];
  for (let n = 1; n <= phase1.waves; n++) {
    const w = await records.get<WaveRecord>('phase1', `wave-${n}`);
    if (w !== undefined) waves.push(w);
  }
  return waves;
}
