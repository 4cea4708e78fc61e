import { type Logger, noopLogger, type RefFactory } from '@troupe/actors';
import { runAgentSession, type TrajectoryStore } from '@troupe/agents';
import { type BankLimits, type BankLimitsOptions } from '../bank/bank-limits';
import { type MemoryBank } from '../bank/memory-bank';
import { practiseProject } from '../loop/practice';
import { type BranchOutcome, type Phase1Options, type WaveProposal } from '../phases/phase1';
import {
  checkPhase1Wave,
  clip,
  parsePhase1Reply,
  PHASE1_CURRICULUM_INSTRUCTION,
  phase1CurriculumTask,
} from './phase1-curriculum';
import { type ShellPublication } from './publication';
import { type ShellMachineTimeouts } from './shell-machine';
import {
  rsiBank,
  rsiRoleId,
  rsiRoleTemplate,
  type ShellRoleModels,
  ShellRsiRoles,
} from './shell-roles';
import { type ShellTask, ShellTaskLimitsSchema, ShellTaskSchema } from './shell-task';

/** One project of a Phase-1 wave, as the runner passes it around. */
export interface Phase1Project {
  wave: number;
  /** Position in the wave (1-based, the Curriculum's order). */
  index: number;
  /** An accepted publication. */
  publication: ShellPublication;
}

/** Options of {@link ShellPhase1}. */
export interface ShellPhase1Options {
  system: RefFactory;
  trajectories: TrajectoryStore;
  /** Part of every session and sandbox id, the sandboxes' job label. */
  jobId: string;
  /**
   * Names one execution of Phase 1 (a driver passes its task context's `resourceId`): part of
   * every id, so a replay after a crash gets fresh sessions and sandboxes. @default ''
   */
  execution?: string;
  models: ShellRoleModels;
  /** What the development tasks are about, for the Curriculum (never a task's text or evaluator). */
  brief: string;
  /** Image of the practice sandboxes. @default the shell tasks' default image */
  image?: string;
  /** Step and time limits of the roles and sandboxes. @default every limit's default */
  limits?: Partial<ShellTask['limits']>;
  /** Projects per wave at most. @default 4 */
  maxProjectsPerWave?: number;
  /** Refused replies per wave before the Curriculum counts as STALLED. @default 3 */
  maxRefusedPublications?: number;
  bankLimits?: BankLimitsOptions | BankLimits;
  budgetScope?: string;
  timeouts?: ShellMachineTimeouts;
  logger?: Logger;
}

/**
 * RSIAgent's Phase 1 bound to agent sessions on shell sandboxes, the hooks of `runPhase1`:
 * - `proposeWave`: one turn of a Phase-1 Curriculum session (`rsi-curriculum-<hash of job,
 *   "phase1", execution>`, no target, no tools but `finish_task`) with the brief, the bank's
 *   inventory and every earlier wave's record; a wave that fails the host's check
 *   ({@link checkPhase1Wave}) goes back with the correction, and too many refusals count as
 *   STALLED;
 * - `practise`: the target loop's practice step (`practiseProject`) on {@link ShellRsiRoles} whose
 *   "target" is the wave (`phase1-wave-<n>`): a fresh sandbox with the fixtures and a copy of the
 *   wave's snapshot, a fresh Actor and Verifier, learning admission into that copy. An UNVERIFIED
 *   outcome quarantines the branch (which blocks the wave); an infrastructure failure propagates
 *   with its own error (RSIAgent raises on those), so a retryable one lets the job runtime retry
 *   the study, which practises the wave again from its records.
 */
export class ShellPhase1 {
  private readonly o: ShellPhase1Options;
  private readonly log: Logger;
  private readonly limits: ShellTask['limits'];
  private turns = 0;

  constructor(options: ShellPhase1Options) {
    this.o = options;
    this.limits = ShellTaskLimitsSchema.parse(options.limits ?? {});
    this.log = (options.logger ?? noopLogger).child({
      component: 'rsi-shell-phase1',
      jobId: options.jobId,
    });
  }

  /** The hooks `runPhase1` takes. */
  hooks(): Pick<Phase1Options<Phase1Project>, 'proposeWave' | 'practise' | 'projectName'> {
    return {
      proposeWave: (input, signal) => this.proposeWave(input, signal),
      practise: (project, snapshot, signal) => this.practise(project, snapshot, signal),
      projectName: (p) => ('root' in p.publication ? (p.publication.root ?? '') : ''),
    };
  }

  /** The wave's pseudo target: what the practice roles' ids and limits derive from. */
  private waveTask(wave: number): ShellTask {
    return ShellTaskSchema.parse({
      id: `phase1-wave-${wave}`,
      instruction: this.o.brief,
      // Never run: Phase 1 has no official check.
      evaluator: 'false',
      ...(this.o.image !== undefined ? { image: this.o.image } : {}),
      limits: this.limits,
    });
  }

  async proposeWave(
    input: Parameters<Phase1Options<Phase1Project>['proposeWave']>[0],
    signal?: AbortSignal,
  ): Promise<WaveProposal<Phase1Project>> {
    const sessionId = rsiRoleId(
      'curriculum',
      this.o.jobId,
      'phase1',
      'curriculum',
      this.o.execution,
    );
    const maxProjects = this.o.maxProjectsPerWave ?? 4;
    const maxRefused = this.o.maxRefusedPublications ?? 3;
    let correction: string | undefined;
    for (let refused = 0; ;) {
      const turn = ++this.turns;
      const result = await runAgentSession({
        system: this.o.system,
        trajectories: this.o.trajectories,
        sessionId,
        runId: `${sessionId}:turn-${turn}`,
        template: rsiRoleTemplate(
          'curriculum',
          this.o.models.curriculum,
          this.limits,
          PHASE1_CURRICULUM_INSTRUCTION,
        ),
        task: phase1CurriculumTask({
          brief: this.o.brief,
          wave: input.wave,
          maxProjects,
          bank: input.bank,
          history: input.history,
          ...(correction !== undefined ? { correction } : {}),
        }),
        ...(this.o.budgetScope !== undefined ? { budgetScope: this.o.budgetScope } : {}),
        ...(signal ? { signal, cancelOnAbort: true } : {}),
        logger: this.log,
      });
      const reply = parsePhase1Reply(sessionId, {
        stopReason: result.stopReason,
        finalText: result.finalText,
        ...(result.error !== undefined ? { error: result.error } : {}),
      });
      this.log.info(
        { sessionId, wave: input.wave, turn, reply: reply.kind },
        'rsi phase 1 curriculum turn',
      );
      if (reply.kind === 'READY') return { kind: 'READY' };
      if (reply.kind === 'STALLED') {
        return { kind: 'STALLED', ...(reply.reason !== undefined ? { reason: reply.reason } : {}) };
      }
      const problem =
        reply.kind === 'malformed'
          ? `your reply is not a valid wave: ${reply.problem}`
          : checkPhase1Wave(reply.projects, maxProjects);
      if (problem === undefined && reply.kind === 'wave') {
        return {
          kind: 'wave',
          projects: reply.projects.map((publication, i) => ({
            wave: input.wave,
            index: i + 1,
            publication,
          })),
        };
      }
      refused++;
      if (refused > maxRefused) {
        return { kind: 'STALLED', reason: `${refused} waves refused; the last: ${problem}` };
      }
      correction = problem;
    }
  }

  async practise(
    project: Phase1Project,
    snapshot: MemoryBank,
    signal?: AbortSignal,
  ): Promise<BranchOutcome> {
    const task = this.waveTask(project.wave);
    const roles = new ShellRsiRoles({
      system: this.o.system,
      trajectories: this.o.trajectories,
      jobId: this.o.jobId,
      task,
      ...(this.o.execution !== undefined ? { execution: this.o.execution } : {}),
      models: this.o.models,
      ...(this.o.bankLimits !== undefined ? { bankLimits: this.o.bankLimits } : {}),
      ...(this.o.budgetScope !== undefined ? { budgetScope: this.o.budgetScope } : {}),
      ...(this.o.timeouts !== undefined ? { timeouts: this.o.timeouts } : {}),
      ...(this.o.logger !== undefined ? { logger: this.o.logger } : {}),
    });
    const { outcome, bank } = await practiseProject(
      roles,
      {
        targetId: task.id,
        publication: project.publication,
        index: project.index,
        bank: rsiBank(snapshot),
      },
      signal,
    );
    if (outcome.verdict === 'UNVERIFIED') {
      return {
        status: 'quarantined',
        reason: `the Actor's ending and the Verifier's route disagree (UNVERIFIED): ${clip(outcome.report, 200)}`,
      };
    }
    return {
      status: 'practised',
      verdict: outcome.verdict,
      bank: bank.bank,
      detail: {
        report: clip(outcome.report),
        bankBefore: outcome.bankBefore,
        bankAfter: outcome.bankAfter,
        ...(outcome.learningRefused !== undefined
          ? { learningRefused: clip(outcome.learningRefused) }
          : {}),
      },
    };
  }
}
