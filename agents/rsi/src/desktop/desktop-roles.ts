import { type Logger, noopLogger, type RefFactory } from '@troupe/actors';
import type { BudgetHook, ChatMessage, LlmClient, ToolDefinition } from '@troupe/llm';
import { ErrorCode, isTroupeError, TroupeError } from '@troupe/proto';
import { type BankLimits, type BankLimitsOptions, parseBankLimits } from '../bank/bank-limits';
import { type MemoryBank } from '../bank/memory-bank';
import {
  type ActorRun,
  type Admission,
  type CurriculumReply,
  type CurriculumRequest,
  type LessonProposal,
  type RsiRoles,
  type Work,
} from '../loop/target-loop';
import { type VerifierReport } from '../loop/verdict';
import { actorEnding, throwIfInfrastructure, verifierReport } from '../shell/finish-protocol';
import { lessonChanges } from '../shell/proposal';
import {
  acceptedProject,
  checkShellPublication,
  parseCurriculumReply,
  type ShellPublication,
} from '../shell/publication';
import {
  actorPracticeTask,
  actorTargetTask,
  curriculumTask,
  lessonTask,
  verifierTask,
} from '../shell/role-prompts';
import { admitProposal, type RsiBank, rsiRoleId, type ShellRoleModels } from '../shell/shell-roles';
import {
  DesktopMachine,
  type DesktopMachineSpec,
  type DesktopMachineTimeouts,
} from './desktop-machine';
import {
  DESKTOP_ACTOR_INSTRUCTION,
  DESKTOP_CURRICULUM_INSTRUCTION,
  DESKTOP_PLACE,
  DESKTOP_VERIFIER_INSTRUCTION,
} from './desktop-prompts';
import { type RoleTool, type RoleToolOutput, runRoleSession } from './desktop-role-session';

/** A desktop target as the roles see it (its evaluator is the driver's, never the roles'). */
export interface DesktopRsiTask {
  /** Task id. */
  id: string;
  /** What the Actor is asked to do (and the Verifier judges). */
  instruction: string;
  /** Whether the Actor holds `run_command` (the `desktop-tasks` model agent's rule). */
  allowCommands: boolean;
  /** Model calls per run and wall time per run. */
  limits: {
    actorMaxSteps: number;
    verifierMaxSteps: number;
    curriculumMaxSteps: number;
    runWallMs: number;
  };
}

/** Prepares a fresh machine (setup files, applications); a failure is an infrastructure error. */
export type DesktopSetup = (machine: DesktopMachine, signal?: AbortSignal) => Promise<void>;

/** Options of {@link DesktopRsiRoles}. */
export interface DesktopRsiRolesOptions {
  /** The cluster's actor system (or any ref factory): environment actors. */
  system: RefFactory;
  /** The cluster's LLM client: every role's model calls. */
  llm: Pick<LlmClient, 'chat'>;
  /** Budget of every model call (the job's ledger scope). @default the client's */
  budget?: BudgetHook;
  /** The job the roles work for: part of every id, the environments' label. */
  jobId: string;
  task: DesktopRsiTask;
  /** Names one execution of the target loop (see `ShellRsiRolesOptions.execution`). @default '' */
  execution?: string;
  models: ShellRoleModels;
  /** The environment every machine is created as (kind, image, screen, memory). */
  environment: Omit<DesktopMachineSpec, 'jobId'>;
  /** The target's setup (the task's files and applications), run on each target machine. */
  setup: DesktopSetup;
  /** A practice machine's setup after its fixtures are written. @default nothing */
  practiceSetup?: DesktopSetup;
  /** Boundaries lessons must respect. @default the limits each bank was created with */
  bankLimits?: BankLimitsOptions | BankLimits;
  timeouts?: DesktopMachineTimeouts;
  logger?: Logger;
}

/** A live desktop machine of one piece of work. */
export interface DesktopEnv {
  readonly machine: DesktopMachine;
  readonly work: Work<ShellPublication>;
  /** Key of the work (`target-<attempt>`, `practice-<index>`). */
  readonly key: string;
  released: boolean;
}

/** The Actor's active context, kept for its lesson proposal. */
class DesktopActorContext {
  constructor(
    readonly sessionId: string,
    readonly env: DesktopEnv,
    readonly messages: ChatMessage[],
  ) {}
}

const ACTIONS = [
  'MOVE_TO',
  'CLICK',
  'MOUSE_DOWN',
  'MOUSE_UP',
  'RIGHT_CLICK',
  'DOUBLE_CLICK',
  'DRAG_TO',
  'SCROLL',
  'TYPING',
  'PRESS',
  'KEY_DOWN',
  'KEY_UP',
  'HOTKEY',
  'WAIT',
];

const def = (
  name: string,
  description: string,
  properties: Record<string, unknown>,
  required: string[],
): ToolDefinition => ({
  name,
  description,
  parameters: { type: 'object', properties, required },
});

const COMPUTER = def(
  'computer',
  'Perform one computer_13 action on the desktop (coordinates are screen pixels); the screen after it is shown to you.',
  {
    action_type: { type: 'string', enum: ACTIONS },
    x: { type: 'integer' },
    y: { type: 'integer' },
    button: { type: 'string', enum: ['left', 'middle', 'right'] },
    num_clicks: { type: 'integer' },
    dx: { type: 'integer' },
    dy: { type: 'integer' },
    text: { type: 'string' },
    key: { type: 'string' },
    keys: { type: 'array', items: { type: 'string' } },
    seconds: { type: 'number' },
  },
  ['action_type'],
);
const SCREENSHOT = def('screenshot', 'Show the screen as it is now.', {}, []);
const RUN_COMMAND = def(
  'run_command',
  'Run a shell command as the desktop user in the home directory; returns its exit code and output.',
  { command: { type: 'string' } },
  ['command'],
);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function workKey(work: Work<ShellPublication>): string {
  return work.kind === 'target' ? `target-${work.attempt}` : `practice-${work.index}`;
}

/** `path` as an absolute path inside `dir` (a relative path is taken relative to it), or undefined. */
function inside(dir: string, path: string): string | undefined {
  const abs = path.startsWith('/') ? path : `${dir}/${path}`;
  const parts = abs.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) return undefined;
  const norm = `/${parts.join('/')}`;
  return norm.startsWith(`${dir}/`) ? norm : undefined;
}

/**
 * RSIAgent's roles on desktop environments (the node agent's `environment` actors: Docker
 * desktops by default, VMs when `environment.kind` is `vm`). Each role is a session of its own
 * model (a conversation kept by these roles, run by {@link runRoleSession} against the cluster's
 * LLM client) with its own tools:
 *
 * - **Actor** — per target attempt or practice project: `computer` (computer_13 actions, the
 *   screen shown after each), `screenshot`, `run_command` when the task allows commands (as the
 *   `desktop-tasks` model agent), and `read_file` limited to the installed bank. Its lesson
 *   proposal continues the same conversation with `read_file` and `write_file` limited to the
 *   proposal directory.
 * - **Verifier** — a fresh conversation on the same machine with `screenshot`, `run_command` and
 *   `get_file`, started after the bank and the proposal directory were emptied: its context is
 *   the task and machine evidence only.
 * - **Curriculum** — one conversation per target, only `finish_task`; each turn's summary is the
 *   JSON publication or decision (the shell roles' format and checks).
 *
 * Every machine is a fresh environment released by {@link release}; infrastructure failures
 * (environment, NATS, model provider) throw and never become a verdict.
 */
export class DesktopRsiRoles implements RsiRoles<DesktopEnv, RsiBank, ShellPublication> {
  private readonly o: DesktopRsiRolesOptions;
  private readonly log: Logger;
  private readonly curriculumMessages: ChatMessage[] = [
    { role: 'system', content: DESKTOP_CURRICULUM_INSTRUCTION },
  ];
  private curriculumTurns = 0;

  constructor(options: DesktopRsiRolesOptions) {
    this.o = options;
    this.log = (options.logger ?? noopLogger).child({
      component: 'rsi-desktop-roles',
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

  private async session(
    role: 'actor' | 'verifier' | 'curriculum',
    sessionId: string,
    messages: ChatMessage[],
    tools: readonly RoleTool[],
    signal: AbortSignal | undefined,
  ) {
    const l = this.o.task.limits;
    const maxSteps = {
      actor: l.actorMaxSteps,
      verifier: l.verifierMaxSteps,
      curriculum: l.curriculumMaxSteps,
    }[role];
    const r = await runRoleSession({
      llm: this.o.llm,
      model: this.o.models[role],
      messages,
      tools,
      maxSteps,
      wallMs: l.runWallMs,
      ...(this.o.budget ? { budget: this.o.budget } : {}),
      metadata: { job: this.o.jobId, task: this.o.task.id, role, session: sessionId },
      ...(signal ? { signal } : {}),
    });
    this.log.info({ sessionId, role, stopReason: r.stopReason }, 'rsi desktop role run ended');
    return r;
  }

  // --- tools -------------------------------------------------------------------------------

  private screenshotTool(m: DesktopMachine): RoleTool {
    return {
      definition: SCREENSHOT,
      run: async (_a, signal) => ({
        text: 'the screen is shown below',
        pngBase64: await m.screenshot(signal),
      }),
    };
  }

  private commandTool(m: DesktopMachine): RoleTool {
    return {
      definition: RUN_COMMAND,
      run: async (a, signal) => {
        const command = str(a['command']);
        if (command === '') return { text: 'run_command: `command` must be a non-empty string' };
        const r = await m.runCommand(command, { signal });
        const out = `${r.stdout.slice(-4_000)}${r.stderr.slice(-2_000)}`;
        return { text: r.timedOut ? `timed out\n${out}` : `exit ${r.exitCode}\n${out}` };
      },
    };
  }

  private computerTool(m: DesktopMachine): RoleTool {
    return {
      definition: COMPUTER,
      run: async (a, signal): Promise<RoleToolOutput> => {
        const type = str(a['action_type']);
        if (!ACTIONS.includes(type)) {
          return {
            text: `computer: action_type must be one of ${ACTIONS.join(', ')} (end with finish_task)`,
          };
        }
        try {
          await m.act({ ...a, action_type: type }, signal);
        } catch (err) {
          if (!isTroupeError(err) || err.code !== ErrorCode.INVALID_ARGUMENT) throw err;
          return { text: `refused: ${err.message}` };
        }
        return { text: 'ok', pngBase64: await m.screenshot(signal) };
      },
    };
  }

  /** Reads a file of `dir` (bank-relative or absolute inside it). */
  private readTool(m: DesktopMachine, dir: string, name: string, what: string): RoleTool {
    return {
      definition: def(name, `Read a file of ${what} (${dir}/...).`, { path: { type: 'string' } }, [
        'path',
      ]),
      run: async (a, signal) => {
        const path = inside(dir, str(a['path']));
        if (path === undefined) return { text: `${name}: the path must lie inside ${dir}/` };
        try {
          return { text: (await m.getFile(path, 100_000, signal)).toString('utf8') };
        } catch (err) {
          if (!isTroupeError(err) || err.code === ErrorCode.UNAVAILABLE) throw err;
          return { text: `${name}: ${err.message}` };
        }
      },
    };
  }

  private getFileTool(m: DesktopMachine): RoleTool {
    return {
      definition: def(
        'get_file',
        "Read a file's text (absolute, or relative to the home directory).",
        { path: { type: 'string' } },
        ['path'],
      ),
      run: async (a, signal) => {
        const path = str(a['path']);
        if (path === '' || path.split('/').includes('..')) {
          return { text: 'get_file: the path must be non-empty and contain no ".."' };
        }
        try {
          return { text: (await m.getFile(path, 100_000, signal)).toString('utf8') };
        } catch (err) {
          if (!isTroupeError(err) || err.code === ErrorCode.UNAVAILABLE) throw err;
          return { text: `get_file: ${err.message}` };
        }
      },
    };
  }

  private writeProposalTool(m: DesktopMachine): RoleTool {
    const dir = DESKTOP_PLACE.proposalDir;
    return {
      definition: def(
        'write_file',
        `Write a whole file under ${dir}/ (a proposed bank file, or the ${dir}/.delete list).`,
        { path: { type: 'string' }, content: { type: 'string' } },
        ['path', 'content'],
      ),
      run: async (a, signal) => {
        const path = inside(dir, str(a['path']));
        if (path === undefined) return { text: `write_file: the path must lie inside ${dir}/` };
        await m.putFile(path, str(a['content']), signal);
        return { text: `wrote ${path}` };
      },
    };
  }

  // --- environments ------------------------------------------------------------------------

  private async open(
    work: Work<ShellPublication>,
    bank: RsiBank,
    prepare: (m: DesktopMachine) => Promise<void>,
    signal: AbortSignal | undefined,
  ): Promise<DesktopEnv> {
    const key = workKey(work);
    const machine = await DesktopMachine.create(
      this.o.system,
      this.id('env', key),
      { ...this.o.environment, jobId: this.o.jobId },
      { ...this.o.timeouts, ...(signal ? { signal } : {}) },
    );
    const env: DesktopEnv = { machine, work, key, released: false };
    try {
      await machine.installBank(bank.bank, signal);
      await prepare(machine);
    } catch (err) {
      await this.release(env);
      throw err;
    }
    return env;
  }

  /** A fresh environment with the bank installed (and checked), then the task's setup run. */
  openTarget(
    work: Work<ShellPublication> & { kind: 'target' },
    bank: RsiBank,
    signal?: AbortSignal,
  ): Promise<DesktopEnv> {
    return this.open(work, bank, (m) => this.o.setup(m, signal), signal);
  }

  /** A separate environment: the bank installed, the fixture tree written (and checked), then `practiceSetup`. */
  openPractice(
    work: Work<ShellPublication> & { kind: 'practice' },
    bank: RsiBank,
    signal?: AbortSignal,
  ): Promise<DesktopEnv> {
    const project = acceptedProject(work.project);
    if (project === undefined) {
      throw new TroupeError(
        ErrorCode.INVALID_ARGUMENT,
        `practice ${work.index}: the publication was not accepted by the host's check`,
      );
    }
    return this.open(
      work,
      bank,
      async (m) => {
        await m.putFiles(project.fixtures, signal);
        await this.o.practiceSetup?.(m, signal);
      },
      signal,
    );
  }

  /** Destroys the environment (once; a gone one is fine). A failure is logged: the reaper collects it. */
  async release(env: DesktopEnv): Promise<void> {
    if (env.released) return;
    env.released = true;
    try {
      await env.machine.destroy(AbortSignal.timeout(90_000));
    } catch (err) {
      this.log.warn(
        { err, environmentId: env.machine.environmentId },
        'could not destroy an RSI environment',
      );
    }
  }

  // --- roles -------------------------------------------------------------------------------

  async act(
    env: DesktopEnv,
    work: Work<ShellPublication>,
    bank: RsiBank,
    signal?: AbortSignal,
  ): Promise<ActorRun> {
    const sessionId = this.id('actor', env.key);
    const m = env.machine;
    const project = work.kind === 'practice' ? acceptedProject(work.project) : undefined;
    const text =
      project === undefined
        ? actorTargetTask(this.o.task.instruction, bank.bank, DESKTOP_PLACE)
        : actorPracticeTask(project.root, project.body, bank.bank, DESKTOP_PLACE);
    const messages: ChatMessage[] = [
      { role: 'system', content: DESKTOP_ACTOR_INSTRUCTION },
      {
        role: 'user',
        content: [
          { type: 'text', text },
          { type: 'image', url: `data:image/png;base64,${await m.screenshot(signal)}` },
        ],
      },
    ];
    const tools = [
      this.computerTool(m),
      this.screenshotTool(m),
      ...(this.o.task.allowCommands ? [this.commandTool(m)] : []),
      this.readTool(m, DESKTOP_PLACE.bankDir, 'read_file', 'the memory bank'),
    ];
    const r = await this.session('actor', sessionId, messages, tools, signal);
    return {
      ending: actorEnding(sessionId, r),
      context: new DesktopActorContext(sessionId, env, messages),
    };
  }

  async verify(
    env: DesktopEnv,
    work: Work<ShellPublication>,
    signal?: AbortSignal,
  ): Promise<VerifierReport> {
    const m = env.machine;
    // The bank leaves the machine before the Verifier looks at it (it is restored for learning).
    await m.removeBank(signal);
    await m.clearProposal(signal);
    const sessionId = this.id('verifier', env.key);
    const project = work.kind === 'practice' ? acceptedProject(work.project) : undefined;
    const text =
      project === undefined
        ? verifierTask(this.o.task.instruction, undefined, DESKTOP_PLACE)
        : verifierTask(project.body, project.root, DESKTOP_PLACE);
    const messages: ChatMessage[] = [
      { role: 'system', content: DESKTOP_VERIFIER_INSTRUCTION },
      {
        role: 'user',
        content: [
          { type: 'text', text },
          { type: 'image', url: `data:image/png;base64,${await m.screenshot(signal)}` },
        ],
      },
    ];
    const tools = [this.screenshotTool(m), this.commandTool(m), this.getFileTool(m)];
    const r = await this.session('verifier', sessionId, messages, tools, signal);
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
    if (!(ctx instanceof DesktopActorContext)) {
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
    const m = ctx.env.machine;
    const bank = input.bank.bank;
    // The canonical bank goes back on the machine; the proposal directory starts empty.
    await m.installBank(bank, signal);
    await m.clearProposal(signal);
    ctx.messages.push({
      role: 'user',
      content: lessonTask(
        input.verdict,
        input.report.report,
        bank,
        this.limitsOf(bank),
        DESKTOP_PLACE,
      ),
    });
    const r = await this.session(
      'actor',
      ctx.sessionId,
      ctx.messages,
      [
        this.readTool(m, DESKTOP_PLACE.bankDir, 'read_file', 'the memory bank'),
        this.writeProposalTool(m),
      ],
      signal,
    );
    throwIfInfrastructure('Actor (lessons)', ctx.sessionId, r);
    const changes = await lessonChanges(r.stopReason, () => m.readProposal(signal), bank);
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
    this.curriculumTurns++;
    this.curriculumMessages.push({
      role: 'user',
      content: curriculumTask(this.o.task.instruction, request, DESKTOP_PLACE),
    });
    const r = await this.session('curriculum', sessionId, this.curriculumMessages, [], signal);
    return parseCurriculumReply(`${sessionId}:turn-${this.curriculumTurns}`, r);
  }

  checkPublication(publication: ShellPublication): string | undefined {
    return checkShellPublication(publication);
  }
}
