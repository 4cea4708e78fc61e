import { createHash } from 'node:crypto';
import { type Logger, noopLogger, type RefFactory } from '@troupe/actors';
import {
  AgentToolName,
  type AgentTemplateInput,
  runAgentSession,
  type TrajectoryStore,
} from '@troupe/agents';
import { ErrorCode, TroupeError } from '@troupe/proto';
import { applyBankChanges } from '../bank/bank-changes';
import { type BankLimits, type BankLimitsOptions, parseBankLimits } from '../bank/bank-limits';
import { type MemoryBank } from '../bank/memory-bank';
import {
  type ActorRun,
  type Admission,
  type BankHandle,
  type CurriculumReply,
  type CurriculumRequest,
  type LessonProposal,
  type RsiRoles,
  type Work,
} from '../loop/target-loop';
import { type VerifierReport } from '../loop/verdict';
import {
  actorEnding,
  type RoleRunResult,
  throwIfInfrastructure,
  verifierReport,
} from './finish-protocol';
import { lessonChanges, type ProposedChanges } from './proposal';
import {
  acceptedProject,
  checkShellPublication,
  parseCurriculumReply,
  type ShellPublication,
} from './publication';
import {
  ACTOR_INSTRUCTION,
  actorPracticeTask,
  actorTargetTask,
  CURRICULUM_INSTRUCTION,
  curriculumTask,
  lessonTask,
  VERIFIER_INSTRUCTION,
  verifierTask,
} from './role-prompts';
import { ShellMachine, type ShellMachineTimeouts } from './shell-machine';
import { type ShellTask } from './shell-task';

/** A memory bank as the shell roles pass it through the loop: its hash and its files. */
export interface RsiBank extends BankHandle {
  readonly bank: MemoryBank;
}

/** The loop's handle of `bank` (its tree hash is the identity). */
export function rsiBank(bank: MemoryBank): RsiBank {
  return { hash: bank.treeHash, bank };
}

/** Registry names of the model each role uses (from the job spec). */
export interface ShellRoleModels {
  actor: string;
  verifier: string;
  curriculum: string;
}

/** Options of {@link ShellRsiRoles}. */
export interface ShellRsiRolesOptions {
  /** The cluster's actor system (or any ref factory): sandbox and agent actors. */
  system: RefFactory;
  /** The cluster's trajectory store (where agent runs' results are read). */
  trajectories: TrajectoryStore;
  /** The job the roles work for: part of every session and sandbox id, the sandboxes' label. */
  jobId: string;
  /** The target task. */
  task: ShellTask;
  /**
   * Names one execution of the target loop (a driver passes its task context's `resourceId`).
   * It is part of every id: a rerun after a crash starts the target over, and must get fresh
   * sessions and sandboxes, not the finished runs and destroyed sandboxes of the interrupted
   * execution. @default '' (ids depend on job, task and work only)
   */
  execution?: string;
  models: ShellRoleModels;
  /** Boundaries lessons must respect. @default the limits each bank was created with */
  bankLimits?: BankLimitsOptions | BankLimits;
  /** Budget ledger scope of every model call (e.g. `job:<jobId>`). @default the host's */
  budgetScope?: string;
  /** Timeouts of the host's sandbox calls. */
  timeouts?: ShellMachineTimeouts;
  logger?: Logger;
}

/** A live machine of one piece of work (a target attempt or a practice project). */
export interface ShellEnv {
  readonly machine: ShellMachine;
  readonly work: Work<ShellPublication>;
  /** Key of the work, part of its ids (`target-<attempt>`, `practice-<index>`). */
  readonly key: string;
  released: boolean;
}

/** What an Actor run keeps for its lesson proposal: its session (the active context) and machine. */
class ActorContext {
  constructor(
    readonly sessionId: string,
    readonly env: ShellEnv,
  ) {}
}

function workKey(work: Work<ShellPublication>): string {
  return work.kind === 'target' ? `target-${work.attempt}` : `practice-${work.index}`;
}

/**
 * An id of the form `rsi-<role>-<32 hex>` derived from job, task, work and execution, so a replay
 * of the same work in the same execution reuses the same session, run and sandbox ids.
 */
export function rsiRoleId(
  role: string,
  jobId: string,
  taskId: string,
  key: string,
  execution = '',
): string {
  const material =
    execution === '' ? `${jobId}\n${taskId}\n${key}` : `${jobId}\n${taskId}\n${key}\n${execution}`;
  const h = createHash('sha256').update(material).digest('hex');
  return `rsi-${role}-${h.slice(0, 32)}`;
}

/**
 * The agent template of one role: its instruction, model, tools and step/time limits. The
 * Curriculum has no tools but `finish_task`; the Verifier cannot write files.
 */
export function rsiRoleTemplate(
  role: 'actor' | 'verifier' | 'curriculum',
  model: string,
  limits: ShellTask['limits'],
  instruction?: string,
): AgentTemplateInput {
  const T = AgentToolName;
  const spec = {
    actor: {
      instruction: ACTOR_INSTRUCTION,
      tools: [T.RUN_TERMINAL_COMMAND, T.VIEW_FILE, T.WRITE_FILE, T.EDIT_FILE],
      maxSteps: limits.actorMaxSteps,
    },
    verifier: {
      instruction: VERIFIER_INSTRUCTION,
      tools: [T.RUN_TERMINAL_COMMAND, T.VIEW_FILE],
      maxSteps: limits.verifierMaxSteps,
    },
    curriculum: {
      instruction: CURRICULUM_INSTRUCTION,
      tools: [],
      maxSteps: limits.curriculumMaxSteps,
    },
  }[role];
  return {
    name: `rsi-${role}`,
    instruction: instruction ?? spec.instruction,
    model,
    tools: spec.tools,
    limits: { maxSteps: spec.maxSteps, maxWallMs: limits.runWallMs },
    // One "continue" when the model answers in prose instead of calling a tool.
    maxAutoContinues: 1,
  };
}

const MIB = 1024 * 1024;

/**
 * Installs an admitted proposal's change set (read back from a machine's proposal directory) into
 * `bank`: the new bank, or why it is refused (no change set, an unreadable proposal, a change that
 * breaks `limits`).
 */
export function admitProposal(
  proposal: LessonProposal,
  bank: RsiBank,
  limits: BankLimits,
): Admission<RsiBank> {
  const changes = proposal.changes as ProposedChanges | undefined;
  if (changes === null || typeof changes !== 'object') {
    return { installed: false, reason: 'the proposal carries no change set' };
  }
  if ('unreadable' in changes) return { installed: false, reason: changes.unreadable };
  const result = applyBankChanges(bank.bank, changes.changes, { limits });
  if (!result.ok) return { installed: false, reason: result.rejection.reason };
  return { installed: true, bank: rsiBank(result.bank) };
}

/**
 * RSIAgent's roles for shell tasks, each an agent session (the `agent` actor of
 * `@troupe/agents`) on a node agent sandbox:
 *
 * - **Actor** — a session per target attempt or practice project (`rsi-actor-<hash>`), holding
 *   the terminal and file tools on that work's sandbox; its task text has the instruction and
 *   the bank's inventory (it reads what it chooses from `/bank`). It ends with `finish_task`
 *   whose first line is `DONE` or `EVOLVE`; its lesson proposal is a second run of the same
 *   session, writing files under `/proposal/`.
 * - **Verifier** — a separate session on the same sandbox with `run_terminal_command` and
 *   `view_file`, started after the bank was removed from the machine: its context holds the task
 *   and machine evidence only. It ends with `HANDOFF` or `EVOLVE` and its report.
 * - **Curriculum** — one persistent session per target (`rsi-curriculum-<hash>`), no tools but
 *   `finish_task`; each turn is a run whose summary is the JSON publication or decision.
 *
 * Every machine is a fresh sandbox (no network) released by {@link release}; infrastructure
 * failures (sandbox, NATS, model provider) throw and never become a verdict.
 */
export class ShellRsiRoles implements RsiRoles<ShellEnv, RsiBank, ShellPublication> {
  private readonly o: ShellRsiRolesOptions;
  private readonly log: Logger;
  private curriculumTurns = 0;

  constructor(options: ShellRsiRolesOptions) {
    this.o = options;
    this.log = (options.logger ?? noopLogger).child({
      component: 'rsi-shell-roles',
      jobId: options.jobId,
      taskId: options.task.id,
    });
  }

  private id(role: string, key: string): string {
    return rsiRoleId(role, this.o.jobId, this.o.task.id, key, this.o.execution);
  }

  private limitsOf(bank: MemoryBank): BankLimits {
    return this.o.bankLimits === undefined ? bank.limits : parseBankLimits(this.o.bankLimits);
  }

  private template(role: 'actor' | 'verifier' | 'curriculum'): AgentTemplateInput {
    return rsiRoleTemplate(role, this.o.models[role], this.o.task.limits);
  }

  private async run(
    sessionId: string,
    runId: string,
    role: 'actor' | 'verifier' | 'curriculum',
    task: string,
    sandboxId: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<RoleRunResult> {
    const r = await runAgentSession({
      system: this.o.system,
      trajectories: this.o.trajectories,
      sessionId,
      runId,
      template: this.template(role),
      task,
      ...(sandboxId !== undefined ? { sandboxId } : {}),
      ...(this.o.budgetScope !== undefined ? { budgetScope: this.o.budgetScope } : {}),
      ...(signal ? { signal, cancelOnAbort: true } : {}),
      logger: this.log,
    });
    this.log.info(
      { sessionId, runId, role, stopReason: r.stopReason, steps: r.steps },
      'rsi role run ended',
    );
    return {
      stopReason: r.stopReason,
      finalText: r.finalText,
      ...(r.error !== undefined ? { error: r.error } : {}),
    };
  }

  private async open(
    work: Work<ShellPublication>,
    files: Record<string, string>,
    bank: RsiBank,
    signal: AbortSignal | undefined,
  ): Promise<ShellEnv> {
    const key = workKey(work);
    const limits = this.limitsOf(bank.bank);
    const machine = await ShellMachine.create(
      this.o.system,
      this.id('sbx', key),
      {
        image: this.o.task.image,
        memoryMb: this.o.task.limits.memoryMb,
        files,
        // Room for the bank twice over (install, proposal), and never below 8 MiB.
        bankTmpfsMb: Math.max(8, Math.ceil((limits.maxTotalBytes * 2) / MIB)),
        jobId: this.o.jobId,
      },
      { ...this.o.timeouts, ...(signal ? { signal } : {}) },
    );
    const env: ShellEnv = { machine, work, key, released: false };
    try {
      await machine.checkFiles(files, signal);
      await machine.installBank(bank.bank, signal);
    } catch (err) {
      await this.release(env);
      throw err;
    }
    return env;
  }

  /** A fresh sandbox with the task's setup files and the bank installed (and checked). */
  openTarget(
    work: Work<ShellPublication> & { kind: 'target' },
    bank: RsiBank,
    signal?: AbortSignal,
  ): Promise<ShellEnv> {
    return this.open(work, this.o.task.setup.files, bank, signal);
  }

  /** A separate sandbox with the publication's fixture tree replayed under its root, the bank installed. */
  openPractice(
    work: Work<ShellPublication> & { kind: 'practice' },
    bank: RsiBank,
    signal?: AbortSignal,
  ): Promise<ShellEnv> {
    const project = acceptedProject(work.project);
    if (project === undefined) {
      throw new TroupeError(
        ErrorCode.INVALID_ARGUMENT,
        `practice ${work.index}: the publication was not accepted by the host's check`,
      );
    }
    return this.open(work, project.fixtures, bank, signal);
  }

  /** Destroys the sandbox (once; a gone sandbox is fine). A failure is logged: the reaper collects it. */
  async release(env: ShellEnv): Promise<void> {
    if (env.released) return;
    env.released = true;
    try {
      await env.machine.destroy(AbortSignal.timeout(90_000));
    } catch (err) {
      this.log.warn({ err, sandboxId: env.machine.sandboxId }, 'could not destroy an RSI sandbox');
    }
  }

  async act(
    env: ShellEnv,
    work: Work<ShellPublication>,
    bank: RsiBank,
    signal?: AbortSignal,
  ): Promise<ActorRun> {
    const sessionId = this.id('actor', env.key);
    const project = work.kind === 'practice' ? acceptedProject(work.project) : undefined;
    const task =
      project === undefined
        ? actorTargetTask(this.o.task.instruction, bank.bank)
        : actorPracticeTask(project.root, project.body, bank.bank);
    const r = await this.run(
      sessionId,
      `${sessionId}:act`,
      'actor',
      task,
      env.machine.sandboxId,
      signal,
    );
    return { ending: actorEnding(sessionId, r), context: new ActorContext(sessionId, env) };
  }

  async verify(
    env: ShellEnv,
    work: Work<ShellPublication>,
    signal?: AbortSignal,
  ): Promise<VerifierReport> {
    // The bank leaves the machine before the Verifier looks at it (it is restored for learning).
    await env.machine.removeBank(signal);
    await env.machine.clearProposal(signal);
    const sessionId = this.id('verifier', env.key);
    const project = work.kind === 'practice' ? acceptedProject(work.project) : undefined;
    const task =
      project === undefined
        ? verifierTask(this.o.task.instruction)
        : verifierTask(project.body, project.root);
    const r = await this.run(
      sessionId,
      `${sessionId}:verify`,
      'verifier',
      task,
      env.machine.sandboxId,
      signal,
    );
    return verifierReport(sessionId, r);
  }

  async proposeLessons(
    input: {
      work: Work<ShellPublication>;
      run: ActorRun;
      report: VerifierReport;
      verdict: 'PASS' | 'FAIL';
      bank: RsiBank;
    },
    signal?: AbortSignal,
  ): Promise<LessonProposal> {
    const ctx = input.run.context;
    if (!(ctx instanceof ActorContext)) {
      throw new TroupeError(
        ErrorCode.INTERNAL,
        'proposeLessons: the run was not made by these roles',
      );
    }
    if (ctx.env.released) {
      throw new TroupeError(
        ErrorCode.INTERNAL,
        `proposeLessons: the machine of ${ctx.env.key} was released already`,
      );
    }
    const { machine } = ctx.env;
    const bank = input.bank.bank;
    // The canonical bank goes back on the machine; the proposal directory starts empty.
    await machine.installBank(bank, signal);
    await machine.clearProposal(signal);
    const r = await this.run(
      ctx.sessionId,
      `${ctx.sessionId}:learn`,
      'actor',
      lessonTask(input.verdict, input.report.report, bank, this.limitsOf(bank)),
      machine.sandboxId,
      signal,
    );
    throwIfInfrastructure('Actor (lessons)', ctx.sessionId, r);
    const changes = await lessonChanges(r.stopReason, () => machine.readProposal(signal), bank);
    return {
      targetId: input.work.targetId,
      baseHash: input.bank.hash,
      verdict: input.verdict,
      changes,
    };
  }

  async install(proposal: LessonProposal, bank: RsiBank): Promise<Admission<RsiBank>> {
    return admitProposal(proposal, bank, this.limitsOf(bank.bank));
  }

  async curriculum(
    request: CurriculumRequest<RsiBank, ShellPublication>,
    signal?: AbortSignal,
  ): Promise<CurriculumReply<ShellPublication>> {
    const sessionId = this.id('curriculum', 'curriculum');
    const turn = ++this.curriculumTurns;
    const r = await this.run(
      sessionId,
      `${sessionId}:turn-${turn}`,
      'curriculum',
      curriculumTask(this.o.task.instruction, request),
      undefined,
      signal,
    );
    return parseCurriculumReply(sessionId, r);
  }

  checkPublication(publication: ShellPublication): string | undefined {
    return checkShellPublication(publication);
  }
}
