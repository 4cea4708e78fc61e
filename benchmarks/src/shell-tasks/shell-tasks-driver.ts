import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { isCommitFailed, isHostSilent, type UntypedActorRef } from '@troupe/actors';
import { DEFAULT_BUILD_SCRIPT, isSecretLikeEnvKey } from '@troupe/node-agent';
import {
  checkTaskCount,
  isTaskFileRef,
  type JobDriver,
  type JobSpec,
  type PlannedTask,
  type TaskContext,
} from '@troupe/coordinator';
import {
  delay,
  ErrorReason,
  errorCode,
  hasReason,
  invalidArgument,
  isCancelled,
  parseWith,
  TroupeError,
} from '@troupe/proto';
import { z } from 'zod';
import {
  type ShellTask,
  type ShellTasksConfig,
  ShellTaskGeneratorSchema,
  type ShellTaskInput,
  ShellTaskInputSchema,
  ShellTaskListSchema,
  ShellTaskSchema,
  ShellTasksConfigSchema,
} from './shell-tasks-spec';

/** Kind of the node agent's sandbox actors (its contract: create, startBackground, wait, kill, destroy). */
const SANDBOX_KIND = 'sandbox';
/** Output kept in a task's details (the tail of each stream). */
const DETAIL_TAIL_CHARS = 4_096;

/** What a shell task's run produced. */
export interface ShellRun {
  exitCode: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  oomKilled: boolean;
  durationMs: number;
  /**
   * The earlier execution's sandbox whose finished command this run is: a fault ended that
   * execution after its command exited, and the command was not run again.
   */
  recoveredFrom?: string;
}

/** Options of {@link createShellTasksDriver}. */
export interface ShellTasksDriverOptions {
  /**
   * Longest single wait on a running command: bounds how long a cancellation or timeout waits
   * before the command is killed.
   * @default 1000
   */
  waitSliceMs?: number;
  /** Deadline of creating a sandbox (building a missing image included). @default 300000 */
  createTimeoutMs?: number;
  /**
   * Names of the image recipes (`deploy/images/<name>`): a `troupe-<name>` image must name one.
   * Undefined skips the check (an installation without recipes uses prebuilt images).
   * @default the folders of deploy/images in this checkout, when it has them
   */
  imageRecipes?: readonly string[];
  /**
   * How long a retry waits for the end of a command whose earlier sandbox was lost with the
   * command running, before it runs the command again. Such a sandbox's container was on a node
   * agent cut off or killed: a partitioned agent reports the ends when it is fenced on its
   * return, a restarted one from Docker at its start — a report that may come while its
   * command, having run to its end, would otherwise run a second time.
   * @default 10000
   */
  lostEndWaitMs?: number;
  /**
   * How long a read of an earlier sandbox goes on asking while its activations keep leaving
   * (passivating, or not staying active), after the ask's own rounds (about 3 s). A destroy does
   * not wait for that: a passivation removes the container itself.
   * @default 8000
   */
  movedWaitMs?: number;
}

/** Pause between two reads of a lost sandbox awaiting its command's reported end. */
const LOST_END_POLL_MS = 500;

/** `troupe-<name>` or `troupe-<name>:<tag>`: an image built from `deploy/images/<name>`. */
const TROUPE_IMAGE = /^troupe-([a-z0-9][a-z0-9-]{0,62})(?::[A-Za-z0-9._-]+)?$/;

/** The recipe folders next to the node agent's build script, or undefined without recipes. */
function installedRecipes(): string[] | undefined {
  const dir = path.dirname(DEFAULT_BUILD_SCRIPT);
  if (!existsSync(dir)) return undefined;
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

/**
 * The sandbox-policy rules a spec can break, checked at submission so the error names the spec's
 * field rather than failing the task at run time: secret-looking env keys not listed in
 * `config.allowSecretEnvKeys`, the reserved `TROUPE_` prefix, and `troupe-<name>` images without
 * a recipe.
 */
function checkPolicy(
  config: ShellTasksConfig,
  tasks: readonly ShellTask[],
  recipes: readonly string[] | undefined,
): void {
  const check = taskPolicy(config, recipes);
  tasks.forEach((t, i) => check(t, `spec.tasks[${i}]`));
}

/** Checks the config's policy at once, and returns the check of one task (named `field`). */
function taskPolicy(
  config: ShellTasksConfig,
  recipes: readonly string[] | undefined,
): (task: ShellTask, field: string) => void {
  const allowed = new Set(config.allowSecretEnvKeys);
  const checkEnv = (field: string, env: Record<string, string> | undefined): void => {
    for (const key of Object.keys(env ?? {})) {
      if (key.startsWith('TROUPE_')) {
        throw invalidArgument(`${field}.${key}`, 'the TROUPE_ prefix is reserved');
      }
      if (isSecretLikeEnvKey(key) && !allowed.has(key)) {
        throw invalidArgument(
          `${field}.${key}`,
          'looks like a secret: sandboxes get no secrets by default (list the key in spec.config.allowSecretEnvKeys to pass it, recorded as a policy exception)',
        );
      }
    }
  };
  const checkImage = (field: string, image: string | undefined): void => {
    const name = image === undefined ? undefined : TROUPE_IMAGE.exec(image)?.[1];
    if (name === undefined || recipes === undefined || recipes.includes(name)) return;
    throw invalidArgument(
      field,
      `names no image recipe of deploy/images (troupe-<name> with <name> one of ${recipes.join(', ')})`,
      image,
    );
  };
  checkEnv('spec.config.env', config.env);
  checkImage('spec.config.image', config.image);
  return (t, field) => {
    checkEnv(`${field}.env`, t.env);
    checkImage(`${field}.image`, t.image);
  };
}

// The node agent's replies, read leniently (fields may be added).
const StartReplySchema = z.object({ taskId: z.string() }).loose();
const TaskStatusSchema = z
  .object({
    state: z.string(),
    exitCode: z.number().int().optional(),
    stdout: z.string().default(''),
    stderr: z.string().default(''),
    oomKilled: z.boolean().optional(),
    durationMs: z.number().default(0),
    error: z.string().optional(),
  })
  .loose();
type TaskStatus = z.output<typeof TaskStatusSchema>;
/** The sandbox's `status` reply, for its recorded commands. */
const SandboxCommandsSchema = z
  .object({
    status: z.string().optional(),
    commands: z
      .array(z.object({ taskId: z.string(), ended: TaskStatusSchema.optional() }).loose())
      .default([]),
  })
  .loose();

type SandboxCommands = z.output<typeof SandboxCommandsSchema>;

/** The end of the last command that `reply` records as exited: one that ran to its exit. */
function exitedIn(reply: SandboxCommands): TaskStatus | undefined {
  return reply.commands.findLast((c) => c.ended?.state === 'exited')?.ended;
}

/**
 * Signs of life every sandbox ask asks of its node agent: an ask fails after four missed ones
 * (4 s). A killed node agent held its tasks until each ask's deadline before (a command's wait
 * 16 s, a stale sandbox's destroy 30 s).
 */
const SANDBOX_LIVENESS_MS = 1_000;

/** Pause before asking again a sandbox whose activation answered that it is on its way out. */
const MOVED_PAUSE_MS = 250;

/** Pause before asking again a sandbox whose state store was unreachable (see isStoreTrouble). */
const STORE_TROUBLE_PAUSE_MS = 1_000;

/**
 * An ask's failure because the sandbox's state store was unreachable: its turn's commit failed
 * (rolled back), or its handler met the outage (a checkpoint).
 */
function isStoreTrouble(err: unknown): boolean {
  return isCommitFailed(err) || hasReason(err, ErrorReason.STORE_UNAVAILABLE);
}

/**
 * An ask's failure because it kept reaching an activation on its way out (passivating), or the
 * actor kept passivating before it could answer ("does not stay active": a lost sandbox
 * passivates after every turn).
 */
function isMovedAway(err: unknown): boolean {
  return (
    err instanceof TroupeError &&
    err.code === 'UNAVAILABLE' &&
    (err.details?.['moved'] === true || err.details?.['inactive'] === true)
  );
}

/** The sandbox id of an attempt's execution. */
export function shellSandboxId(resourceId: string): string {
  return `sh-${resourceId}`;
}

function tail(text: string, max = DETAIL_TAIL_CHARS): string {
  return text.length <= max ? text : `…${text.slice(text.length - max + 1)}`;
}

/** The plan of a job's tasks: each task's input is the task and the job's config. */
function planOf(spec: JobSpec, tasks: readonly ShellTask[]): PlannedTask[] {
  const config = parseWith(ShellTasksConfigSchema, spec.config, { prefix: 'spec.config' });
  return tasks.map((task) => ({ id: task.id, input: { task, config } }));
}

/** The job's tasks, validated: a list, or `{count, command}` expanded. */
function tasksOf(spec: JobSpec): ShellTask[] {
  const raw = spec.tasks;
  if (Array.isArray(raw)) {
    checkTaskCount(raw, 'spec.tasks');
    const tasks = parseWith(ShellTaskListSchema, raw, { prefix: 'spec.tasks' });
    const seen = new Map<string, number>();
    tasks.forEach((t, i) => {
      const first = seen.get(t.id);
      if (first !== undefined) {
        throw invalidArgument(
          `spec.tasks[${i}].id`,
          `must be unique (spec.tasks[${first}] has it too)`,
          t.id,
        );
      }
      seen.set(t.id, i);
    });
    return tasks;
  }
  if (typeof raw === 'object' && raw !== null) {
    const g = parseWith(ShellTaskGeneratorSchema, raw, { prefix: 'spec.tasks' });
    return Array.from({ length: g.count }, (_, i) => ({
      id: `${g.idPrefix}${i}`,
      command:
        typeof g.command === 'string'
          ? g.command.replaceAll('{i}', String(i))
          : g.command.map((a) => a.replaceAll('{i}', String(i))),
      expectExitCode: g.expectExitCode,
      ...(g.timeoutMs !== undefined ? { timeoutMs: g.timeoutMs } : {}),
    }));
  }
  throw invalidArgument('spec.tasks', 'must be a list of tasks or {count, command}', raw);
}

/**
 * The `shell-tasks` driver: each task runs one command in a fresh sandbox (the node agent's
 * `sandbox` actor, default image `troupe-busybox:latest`, no network) and passes when it exits
 * with `expectExitCode` (default 0). Real work, useful for smoke runs of a cluster:
 *
 * ```yaml
 * kind: shell-tasks
 * concurrency: 4
 * tasks:
 *   - {id: hello, command: 'echo hello'}
 *   - {id: files, command: 'wc -l data.txt', files: {data.txt: "a\nb\n"}}
 * ```
 *
 * The command runs as a background task polled in short waits, so a cancellation or the task's
 * timeout kills it within `waitSliceMs`; a timed-out command is graded on what it printed (it
 * fails). Output goes to the task's details (tails) and, with `config.saveOutput`, to the
 * artifact `output.log`.
 */
export function createShellTasksDriver(
  options: ShellTasksDriverOptions = {},
): JobDriver<ShellTaskInput, ShellRun> {
  const waitSliceMs = options.waitSliceMs ?? 1_000;
  const createTimeoutMs = options.createTimeoutMs ?? 300_000;
  const lostEndWaitMs = options.lostEndWaitMs ?? 10_000;
  const movedWaitMs = options.movedWaitMs ?? 8_000;
  const recipes = 'imageRecipes' in options ? options.imageRecipes : installedRecipes();

  const sandbox = (ctx: TaskContext, resourceId: string): UntypedActorRef =>
    ctx.refs
      .refOf({ kind: SANDBOX_KIND, id: shellSandboxId(resourceId) })
      .withHints({ jobId: ctx.jobId });

  /**
   * Asks sandbox `resourceId`, and asks again while its host falls silent with the ask (killed or
   * cut off), until `timeoutMs` pass: the next ask reaches that host once it is back, or the
   * sandbox's next activation once the host is declared dead; and after a turn whose state commit
   * failed (a NATS server restarting): `status` and `destroy` are safe to run again. With
   * `movedWaitMs`, also while its activations keep leaving (passivating, or not staying active),
   * for that long at most.
   */
  const askSandbox = async (
    ctx: TaskContext,
    resourceId: string,
    type: string,
    timeoutMs: number,
    movedWaitMs = 0,
  ): Promise<unknown> => {
    const deadline = Date.now() + timeoutMs;
    let movedUntil: number | undefined;
    for (;;) {
      try {
        return await sandbox(ctx, resourceId).ask(
          type,
          {},
          {
            timeoutMs: Math.max(1, deadline - Date.now()),
            livenessMs: SANDBOX_LIVENESS_MS,
            signal: ctx.signal,
          },
        );
      } catch (err) {
        const moved = isMovedAway(err);
        if (moved) movedUntil ??= Date.now() + movedWaitMs;
        const waitMoved = moved && Date.now() < movedUntil!;
        const storeTrouble = isStoreTrouble(err);
        if (
          ctx.signal.aborted ||
          !(isHostSilent(err) || waitMoved || storeTrouble) ||
          Date.now() >= deadline
        ) {
          throw err;
        }
        ctx.log.debug(
          { err, resourceId, type },
          'a sandbox did not answer (silent host, rolled-back turn or passivation): asking again',
        );
        // An activation on its way out (passivating) outlasted the ask's own rounds: wait for it
        // to end, a while. Taken for "cannot be read", the finished command ran again (chaos
        // seeds 8002, 8024); waited for up to the ask's deadline, a sandbox that could not be
        // activated held its task for 75 s (8020).
        if (moved) await delay(MOVED_PAUSE_MS, ctx.signal);
        // A destroy whose commit failed in a NATS server's restart, given up, left its container
        // for its idle timeout (chaos seeds 8432, 8442): the store is back within seconds.
        if (storeTrouble) await delay(STORE_TROUBLE_PAUSE_MS, ctx.signal);
      }
    }
  };

  // Asked again through a silence: a node agent cut off for a few seconds (and not declared dead)
  // keeps the sandbox live with its container, which nothing else would remove for its idle
  // timeout (chaos seed 7007: an orphan container after a 3 s partition).
  const destroy = async (ctx: TaskContext, resourceId: string): Promise<void> => {
    await askSandbox(ctx, resourceId, 'destroy', 30_000);
  };

  return {
    name: 'shell-tasks',
    description: 'runs a shell command per task in a sandbox; passes on the expected exit code',

    validate(spec) {
      const config = parseWith(ShellTasksConfigSchema, spec.config, { prefix: 'spec.config' });
      if (spec.agent !== undefined) {
        throw invalidArgument('spec.agent', 'shell-tasks runs no agent: remove it');
      }
      // A task file's lines are checked by the job layer, with `taskFile.checker`.
      if (isTaskFileRef(spec.tasks)) taskPolicy(config, recipes);
      else checkPolicy(config, tasksOf(spec), recipes);
    },

    plan(spec) {
      return planOf(spec, tasksOf(spec));
    },

    taskFile: {
      checker(spec) {
        const config = parseWith(ShellTasksConfigSchema, spec.config, { prefix: 'spec.config' });
        const policy = taskPolicy(config, recipes);
        return (value, field) => {
          const task = parseWith(ShellTaskSchema, value, { prefix: field });
          policy(task, field);
          return task;
        };
      },
      // The tasks are what `checker` returned.
      plan: (spec, tasks) => planOf(spec, tasks as readonly ShellTask[]),
    },

    async runTask(ctx, raw) {
      const { task, config } = parseWith(ShellTaskInputSchema, raw, { prefix: 'input' });
      const earlier = await readEarlier(ctx);
      // A fault interrupted an earlier execution (a crash in this attempt, or a node agent cut
      // off and declared dead in an earlier one): its sandbox may still live, and its command
      // still run there. Such a command is waited for, not started again. Every other earlier
      // sandbox goes: its own cleanup may have failed with the fault that ended it (a NATS
      // server lost mid-commit), and nothing else would remove it before the node agent's reaper.
      const adopt = earlier.running?.resourceId;
      for (const stale of new Set([...ctx.earlierResourceIds, ...ctx.staleResourceIds])) {
        if (stale === adopt) continue;
        await destroy(ctx, stale).catch((err: unknown) =>
          ctx.log.warn({ err, resourceId: stale }, 'could not destroy a stale sandbox'),
        );
      }
      if (earlier.finished) {
        const recovered = earlier.finished;
        ctx.log.info(
          { recoveredFrom: recovered.resourceId, exitCode: recovered.status.exitCode },
          'the command finished in an earlier execution: not running it again',
        );
        const run = await finish(ctx, config.saveOutput, recovered.status, false);
        return { ...run, recoveredFrom: recovered.resourceId };
      }
      if (earlier.running) {
        const { resourceId, taskId } = earlier.running;
        ctx.log.info(
          { adoptedFrom: resourceId, taskId },
          'the command is still running in an earlier execution: waiting for it there',
        );
        try {
          const run = await awaitCommand(ctx, config, sandbox(ctx, resourceId), taskId);
          return { ...run, recoveredFrom: resourceId };
        } catch (err) {
          if (ctx.signal.aborted) throw err;
          ctx.log.warn(
            { err, resourceId, taskId },
            'could not wait for the earlier execution’s command: reading its sandbox again',
          );
          // The wait also fails when the sandbox's next activation read the command's end from
          // its container, recorded it and removed the container (`sandbox … was destroyed`):
          // the end is in its state then, and running the command again would repeat it.
          const reply = await readSettled(ctx, resourceId);
          const ended = exitedIn(reply);
          if (ended) {
            ctx.log.info(
              { recoveredFrom: resourceId, taskId, exitCode: ended.exitCode },
              'the earlier execution’s sandbox recorded the command’s end: not running it again',
            );
            const run = await finish(ctx, config.saveOutput, ended, false);
            return { ...run, recoveredFrom: resourceId };
          }
          // Its sandbox is lost without the command's end (one that cannot be read fails the
          // attempt above): the command runs again here, as it would have without the earlier
          // execution.
          ctx.log.warn(
            { resourceId, taskId, sandboxStatus: reply.status },
            'the earlier execution’s sandbox recorded no end of the command: running it again',
          );
        } finally {
          // Interrupted while waiting, the next execution waits for the command there in turn.
          if (!ctx.interrupted()) {
            await destroy(ctx, resourceId).catch((err: unknown) =>
              ctx.log.warn({ err, resourceId }, 'could not destroy a stale sandbox'),
            );
          }
        }
      }
      const sb = sandbox(ctx, ctx.resourceId);
      await sb.ask(
        'create',
        {
          spec: {
            image: task.image ?? config.image,
            memoryMb: config.memoryMb,
            cpus: config.cpus,
            network: config.network ? 'bridge' : 'none',
            env: config.env,
            allowSecretEnvKeys: config.allowSecretEnvKeys,
            files: task.files ?? {},
          },
          jobId: ctx.jobId,
        },
        { timeoutMs: createTimeoutMs, livenessMs: SANDBOX_LIVENESS_MS, signal: ctx.signal },
      );
      const remaining = Math.max(1, ctx.deadlineUnixMs - Date.now());
      // The job's timeout is ours to enforce (so the task ends TIMED_OUT and is graded); the
      // sandbox's own kill is a backstop a little later. A shorter per-command limit is the
      // sandbox's to enforce (the command then fails with `timedOut` in its details).
      const commandLimited = task.timeoutMs !== undefined && task.timeoutMs < remaining;
      const started = StartReplySchema.parse(
        await sb.ask(
          'startBackground',
          {
            cmd: task.command,
            timeoutMs: commandLimited ? task.timeoutMs : remaining + 2_000,
            ...(task.env ? { env: task.env } : {}),
            ...(task.cwd ? { cwd: task.cwd } : {}),
            // One command per execution's sandbox: an ask that runs twice starts it once.
            idempotencyKey: ctx.resourceId,
          },
          { timeoutMs: 30_000, livenessMs: SANDBOX_LIVENESS_MS, signal: ctx.signal },
        ),
      );
      return await awaitCommand(ctx, config, sb, started.taskId);
    },

    async grade(_ctx, raw, run) {
      const { task } = parseWith(ShellTaskInputSchema, raw, { prefix: 'input' });
      if (!run) {
        return { passed: false, stopReason: 'timeout', details: { timedOut: true } };
      }
      const passed = !run.timedOut && run.exitCode === task.expectExitCode;
      return {
        passed,
        score: passed ? 1 : 0,
        stopReason: run.timedOut ? 'timeout' : 'exit',
        details: {
          exitCode: run.exitCode,
          expectExitCode: task.expectExitCode,
          timedOut: run.timedOut,
          oomKilled: run.oomKilled,
          durationMs: run.durationMs,
          stdoutTail: tail(run.stdout),
          stderrTail: tail(run.stderr),
          ...(run.recoveredFrom ? { recoveredFrom: run.recoveredFrom } : {}),
        },
      };
    },

    async cleanup(ctx) {
      // Interrupted, the attempt runs again: that execution adopts this sandbox's command, or
      // removes the sandbox as stale.
      if (ctx.interrupted()) return;
      await destroy(ctx, ctx.resourceId);
    },

    collect(_spec, tasks) {
      const exitCodes: Record<string, number> = {};
      let durationMs = 0;
      let timed = 0;
      for (const t of tasks) {
        const code = t.details?.['exitCode'];
        if (typeof code === 'number') exitCodes[String(code)] = (exitCodes[String(code)] ?? 0) + 1;
        const d = t.details?.['durationMs'];
        if (typeof d === 'number') {
          durationMs += d;
          timed++;
        }
      }
      return { exitCodes, meanCommandMs: timed > 0 ? Math.round(durationMs / timed) : 0 };
    },
  };

  /**
   * Waits for background command `taskId` in `sb` in short slices, and returns its run; on the
   * task's timeout or cancellation, kills it (a timeout is graded on what it printed). An
   * execution that was interrupted leaves it running for the next one to wait for.
   */
  async function awaitCommand(
    ctx: TaskContext,
    config: ShellTasksConfig,
    sb: UntypedActorRef,
    taskId: string,
  ): Promise<ShellRun> {
    let status: TaskStatus | undefined;
    while (!ctx.signal.aborted) {
      try {
        status = TaskStatusSchema.parse(
          await sb.ask(
            'wait',
            { taskId, timeoutMs: waitSliceMs },
            // A margin for a busy node agent; a dead, stopped or cut-off one is noticed by its
            // silence (four missed signs of life), and the task retried, in seconds.
            {
              timeoutMs: waitSliceMs + 15_000,
              livenessMs: SANDBOX_LIVENESS_MS,
              signal: ctx.signal,
            },
          ),
        );
      } catch (err) {
        if (ctx.signal.aborted) break;
        throw err;
      }
      if (status.state !== 'running') break;
    }
    if (ctx.signal.aborted) {
      if (ctx.interrupted()) throw ctx.signal.reason;
      // Timeout or cancellation: kill the command and keep what it printed.
      const killed = await sb
        .ask(
          'kill',
          { taskId },
          { timeoutMs: waitSliceMs + 15_000, livenessMs: SANDBOX_LIVENESS_MS },
        )
        .catch(() => undefined);
      const reason: unknown = ctx.signal.reason;
      if (isCancelled(reason) || errorCode(reason) !== 'TIMEOUT') throw reason;
      const parsed = TaskStatusSchema.safeParse(killed);
      status = parsed.success ? parsed.data : status;
      if (!status) throw reason;
      return await finish(ctx, config.saveOutput, status, true);
    }
    if (!status) throw new TroupeError('INTERNAL', 'the sandbox reported no status');
    if (status.state === 'failed') {
      // It could not start, or its sandbox went down under it (a Docker daemon restart): the
      // node's fault, not the command's, so the job runs it again in a new sandbox.
      throw new TroupeError(
        'UNAVAILABLE',
        `the command did not run to its end: ${status.error ?? 'unknown'}`,
      );
    }
    return await finish(ctx, config.saveOutput, status, status.state === 'timed-out');
  }

  /**
   * What earlier executions' sandboxes know of the command, newest execution first. `finished`:
   * one ran it to its exit — a fault (a crash of this process, a node agent or the network) ended
   * that execution after the command exited, and running it again would repeat its effects.
   * `running`: the newest interrupted execution of this attempt started it and it has not ended
   * yet, so it is waited for there. A sandbox that cannot be asked fails the attempt, retryable
   * (see {@link readSandbox}): the command is not run again on a guess.
   */
  async function readEarlier(ctx: TaskContext): Promise<{
    finished?: { resourceId: string; status: TaskStatus };
    running?: { resourceId: string; taskId: string };
  }> {
    let running: { resourceId: string; taskId: string } | undefined;
    for (const resourceId of [...ctx.earlierResourceIds].reverse()) {
      const reply = await readSettled(ctx, resourceId);
      const ended = exitedIn(reply);
      if (ended) return { finished: { resourceId, status: ended } };
      const last = reply.commands.at(-1);
      // Still running, in this attempt's interrupted execution or in an earlier attempt's (its
      // node agent was declared dead while only cut off, and is back: chaos seed 7001): waited
      // for, since it may finish, and a finished command must not run again.
      if (!running && reply.status === 'ready' && last && !last.ended) {
        running = { resourceId, taskId: last.taskId };
      }
    }
    return running ? { running } : {};
  }

  /**
   * {@link readSandbox}, and when the sandbox was lost (or destroyed after) with a command
   * running, the reads of {@link awaitReportedEnds} for the end its node agent reports.
   */
  async function readSettled(ctx: TaskContext, resourceId: string): Promise<SandboxCommands> {
    const reply = await readSandbox(ctx, resourceId);
    // Lost, or destroyed since (a failed attempt's cleanup destroys its lost sandbox): the node
    // agent that held the container may still report the command's end (chaos seed 8016).
    const gone = reply.status === 'lost' || reply.status === 'destroyed';
    if (gone && reply.commands.some((c) => !c.ended)) {
      return awaitReportedEnds(ctx, resourceId, reply);
    }
    return reply;
  }

  /**
   * Reads lost sandbox `resourceId` again until a command it recorded without an end gets one
   * (reported by the node agent that held its container) or `lostEndWaitMs` pass; returns the
   * last read.
   */
  async function awaitReportedEnds(
    ctx: TaskContext,
    resourceId: string,
    lost: SandboxCommands,
  ): Promise<SandboxCommands> {
    ctx.log.info(
      { resourceId, waitMs: lostEndWaitMs },
      'an earlier execution’s sandbox went with its command running: waiting for its end',
    );
    const deadline = Date.now() + lostEndWaitMs;
    let reply = lost;
    while (Date.now() < deadline && reply.commands.some((c) => !c.ended)) {
      await delay(Math.min(LOST_END_POLL_MS, Math.max(0, deadline - Date.now())), ctx.signal);
      // A read that fails keeps the last one: the wait goes on to its end.
      reply = await readSandbox(ctx, resourceId).catch((err: unknown) => {
        if (ctx.signal.aborted) throw err;
        return reply;
      });
    }
    return reply;
  }

  /**
   * The `status` of earlier execution `resourceId`'s sandbox: its state and recorded commands.
   * When it cannot be asked, throws a retryable `UNAVAILABLE` (logged): the command is not run
   * again on a guess. Skipped, as it once was, a sandbox whose activations kept leaving for
   * longer than `movedWaitMs` had its finished command run a second time (chaos seed 8328); the
   * attempt now fails on infrastructure, and the job's retry reads the sandbox again.
   */
  async function readSandbox(ctx: TaskContext, resourceId: string): Promise<SandboxCommands> {
    let reply: SandboxCommands;
    try {
      // Asked again while its host is silent (killed, cut off): the next ask reaches the
      // sandbox's next activation once that host is declared dead, which reads the container's
      // command ends. Not reading them would run a finished command again.
      reply = SandboxCommandsSchema.parse(
        await askSandbox(ctx, resourceId, 'status', 15_000, movedWaitMs),
      );
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      ctx.log.warn({ err, resourceId }, 'could not read an earlier execution’s sandbox');
      throw new TroupeError(
        'UNAVAILABLE',
        `could not read the sandbox of an earlier execution (${resourceId}) to learn whether ` +
          `the command already ran there: ${err instanceof Error ? err.message : String(err)}; ` +
          'the command is not run again until it can be read',
        { cause: err, retryable: true, details: { resourceId } },
      );
    }
    // Info, not debug: read on retries only, and what decides whether a command runs again.
    ctx.log.info(
      {
        resourceId,
        status: reply.status,
        commands: reply.commands.map((c) => c.ended?.state ?? null),
      },
      'an earlier execution’s sandbox',
    );
    return reply;
  }

  async function finish(
    ctx: TaskContext,
    saveOutput: boolean,
    status: TaskStatus,
    timedOut: boolean,
  ): Promise<ShellRun> {
    const run: ShellRun = {
      exitCode: status.exitCode ?? -1,
      stdout: status.stdout,
      stderr: status.stderr,
      timedOut,
      oomKilled: status.oomKilled ?? false,
      durationMs: Math.round(status.durationMs),
    };
    if (saveOutput) {
      const text = run.stderr ? `${run.stdout}\n--- stderr ---\n${run.stderr}` : run.stdout;
      await ctx.artifacts.put('output.log', text, { contentType: 'text/plain; charset=utf-8' });
    }
    // Keep the run small: it travels back to the task actor only, but tails are all we grade.
    return { ...run, stdout: tail(run.stdout, 65_536), stderr: tail(run.stderr, 65_536) };
  }
}
