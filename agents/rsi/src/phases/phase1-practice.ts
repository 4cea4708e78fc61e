import { type Logger, noopLogger, type RefFactory } from '@troupe/actors';
import { runAgentSession, type TrajectoryStore } from '@troupe/agents';
import { type BankLimits, type BankLimitsOptions } from '../bank/bank-limits';
import { type MemoryBank } from '../bank/memory-bank';
import { practiseProject } from '../loop/practice';
import { type RsiRoles } from '../loop/target-loop';
import { type RoleRunResult } from '../shell/finish-protocol';
import {
  checkPhase1Wave,
  clip,
  parsePhase1Reply,
  PHASE1_CURRICULUM_INSTRUCTION,
  phase1CurriculumTask,
} from '../shell/phase1-curriculum';
import { type ShellPublication } from '../shell/publication';
import { WORKSPACE } from '../shell/role-prompts';
import { type ShellMachineTimeouts } from '../shell/shell-machine';
import {
  type RsiBank,
  rsiBank,
  rsiRoleId,
  rsiRoleTemplate,
  type ShellRoleModels,
  ShellRsiRoles,
} from '../shell/shell-roles';
import { type ShellTask, ShellTaskLimitsSchema, ShellTaskSchema } from '../shell/shell-task';
import { type BranchOutcome, type Phase1Options, type WaveProposal } from './phase1';

/** One project of a Phase-1 wave, as the runner passes it around. */
export interface Phase1Project {
  wave: number;
  /** Position in the wave (1-based, the Curriculum's order). */
  index: number;
  /** An accepted publication. */
  publication: ShellPublication;
}

/** A wave's pseudo target, what the roles practising its projects are made for. */
export interface Phase1Wave {
  /** The wave's number (1-based). */
  wave: number;
  /** `phase1-wave-<n>`: the roles' target id (part of every session and machine id). */
  id: string;
  /** The brief: what the roles are told the target is about. */
  instruction: string;
}

/** Makes the roles that practise the projects of one wave (fresh roles per project). */
export type Phase1RolesFactory = (wave: Phase1Wave) => RsiRoles<unknown, RsiBank, ShellPublication>;

/** One turn of the Phase-1 Curriculum: its instruction and the turn's task text, its ending back. */
export type Phase1CurriculumTurn = (
  turn: { sessionId: string; runId: string; instruction: string; task: string },
  signal?: AbortSignal,
) => Promise<RoleRunResult>;

/** Options of {@link Phase1Practice}. */
export interface Phase1PracticeOptions {
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
  /** Image of the practice sandboxes (of the default roles). @default the shell tasks' default image */
  image?: string;
  /**
   * The roles of a wave's projects. @default {@link ShellRsiRoles} on shell sandboxes (with
   * `image`, `limits`, `timeouts`, `bankLimits`)
   */
  roles?: Phase1RolesFactory;
  /**
   * How a Curriculum turn runs. @default an agent session on the cluster's agent hosts
   * (`runAgentSession`, no tools but `finish_task`)
   */
  curriculumTurn?: Phase1CurriculumTurn;
  /** The directory project roots are relative to, as the Curriculum is told. @default `/workspace` */
  workDir?: string;
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
 * RSIAgent's Phase 1 bound to a study's roles, the hooks of `runPhase1` (one code path for every
 * environment kind: the roles factory and the Curriculum's turn are what differ):
 * - `proposeWave`: one turn of a Phase-1 Curriculum session (`rsi-curriculum-<hash of job,
 *   "phase1", execution>`, no target, no tools but `finish_task`) with the brief, the bank's
 *   inventory and every earlier wave's record; a wave that fails the host's check
 *   ({@link checkPhase1Wave}) goes back with the correction, and too many refusals count as
 *   STALLED. The turn runs as `curriculumTurn` says (an agent session by default);
 * - `practise`: the target loop's practice step (`practiseProject`) on the roles of the wave's
 *   pseudo target (`phase1-wave-<n>`, the brief as its instruction; {@link ShellRsiRoles} by
 *   default, `DesktopRsiRoles` for desktop studies): a fresh machine with the fixtures and a copy
 *   of the wave's snapshot, a fresh Actor and Verifier, learning admission into that copy. An
 *   UNVERIFIED outcome quarantines the branch (which blocks the wave); an infrastructure failure
 *   propagates with its own error (RSIAgent raises on those), so a retryable one lets the job
 *   runtime retry the study, which practises the wave again from its records.
 */
export class Phase1Practice {
  private readonly o: Phase1PracticeOptions;
  private readonly log: Logger;
  private readonly limits: ShellTask['limits'];
  private turns = 0;

  constructor(options: Phase1PracticeOptions) {
    this.o = options;
    this.limits = ShellTaskLimitsSchema.parse(options.limits ?? {});
    this.log = (options.logger ?? noopLogger).child({
      component: 'rsi-phase1',
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

  /** The default Curriculum turn: an agent session on the cluster's agent hosts. */
  private readonly agentTurn: Phase1CurriculumTurn = (turn, signal) =>
    runAgentSession({
      system: this.o.system,
      trajectories: this.o.trajectories,
      sessionId: turn.sessionId,
      runId: turn.runId,
      template: rsiRoleTemplate(
        'curriculum',
        this.o.models.curriculum,
        this.limits,
        turn.instruction,
      ),
      task: turn.task,
      ...(this.o.budgetScope !== undefined ? { budgetScope: this.o.budgetScope } : {}),
      ...(signal ? { signal, cancelOnAbort: true } : {}),
      logger: this.log,
    });

  /** The default roles: {@link ShellRsiRoles} whose target is the wave (a shell task). */
  private readonly shellRoles: Phase1RolesFactory = (wave) => {
    const task: ShellTask = ShellTaskSchema.parse({
      id: wave.id,
      instruction: wave.instruction,
      // Never run: Phase 1 has no official check.
      evaluator: 'false',
      ...(this.o.image !== undefined ? { image: this.o.image } : {}),
      limits: this.limits,
    });
    return new ShellRsiRoles({
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
  };

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
      const result = await (this.o.curriculumTurn ?? this.agentTurn)(
        {
          sessionId,
          runId: `${sessionId}:turn-${turn}`,
          instruction: PHASE1_CURRICULUM_INSTRUCTION,
          task: phase1CurriculumTask({
            brief: this.o.brief,
            wave: input.wave,
            maxProjects,
            bank: input.bank,
            history: input.history,
            workDir: this.o.workDir ?? WORKSPACE,
            ...(correction !== undefined ? { correction } : {}),
          }),
        },
        signal,
      );
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
    const wave: Phase1Wave = {
      wave: project.wave,
      id: `phase1-wave-${project.wave}`,
      instruction: this.o.brief,
    };
    const roles = (this.o.roles ?? this.shellRoles)(wave);
    const { outcome, bank } = await practiseProject(
      roles,
      {
        targetId: wave.id,
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
