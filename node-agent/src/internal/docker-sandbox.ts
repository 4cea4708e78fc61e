import path from 'node:path';
import type { Readable } from 'node:stream';
import {
  ErrorCode,
  fromAbortSignal,
  invalidArgument,
  parseWith,
  raceSignal,
  retryWithBackoff,
  throwIfAborted,
  timeoutError,
  TroupeError,
} from '@troupe/proto';
import type Docker from 'dockerode';
import { TroupeLabel } from '../labels';
import type { Logger } from '@troupe/proto';
import type {
  BackgroundExecOptions,
  BackgroundTaskStatus,
  Command,
  ExecOptions,
  ExecResult,
  FileSource,
  PutFilesOptions,
  ReadOutputOptions,
  Sandbox,
  SandboxMetadata,
  SandboxSnapshot,
  SandboxStatus,
  TaskOutput,
  WaitOptions,
} from '../sandbox';
import { userIds, type SandboxSpec } from '../sandbox-spec';
import { within } from './abort';
import { removeContainerAndVolumes } from './container-policy';
import {
  isDaemonOutage,
  isDaemonUnreachable,
  neverReachedDaemon,
  waitForDaemon,
} from './docker-daemon';
import { dockerError, dockerStatus, ignoreNotFound } from './docker-errors';
import { startExec, type RawExecRequest, type RunningExec } from './docker-exec';
import { BackgroundExecOptionsSchema, ExecOptionsSchema, envEntries } from './exec-options';
import type { ExecEndLog } from './exec-end-log';
import { randomId } from './ids';
import { KILL_TREE_SCRIPT, TASK_ENV_KEY } from './kill-tree-script';
import { oomEventBetween } from './oom-record';
import { tarStreamOf, type TarOwner } from './tar';
import { readOutputOptions } from './stream-log';
import { TaskTable, type TaskRun } from './task-table';

/** Settings a docker sandbox needs from its backend. */
export interface DockerSandboxContext {
  docker: Docker;
  logger: Logger;
  defaultExecTimeoutMs: number;
  maxOutputBytes: number;
  readyTimeoutMs: number;
  killGraceMs: number;
  /**
   * How long a destroy that could not reach the daemon waits, in the background, to remove the
   * container and volumes once it answers again. @default 60000
   */
  daemonWaitMs?: number;
  /** Docker's record of exec ends, for one a daemon restart made the exec itself forget. */
  execEnds?: ExecEndLog;
  /** Called once the sandbox is destroyed, so the backend stops tracking it. */
  onDestroyed(sandbox: DockerSandbox): void;
}

/** What the backend created for the sandbox. */
export interface DockerSandboxParts {
  id: string;
  spec: SandboxSpec;
  container: Docker.Container;
  containerId: string;
  imageId?: string;
  /** Workspace volume first, then one per extra volume path. */
  volumes: { name: string; target: string }[];
  poolId?: string;
  createdAt: number;
}

const READY_LINE = 'troupe-ready';
const NOT_READY_LINE = 'troupe-not-ready';
const KILL_HELPER_TIMEOUT_MS = 10_000;
/** How long a destroy waits for its running commands to be killed before it removes them. */
const KILL_ON_DESTROY_MS = 5_000;
/**
 * How long after a command died of a signal to wait for Docker's `oom` event: the engine
 * usually has it before the exec's exit, but containerd reports the two on separate paths.
 */
const OOM_EVENT_GRACE_MS = 500;
/** How long after an OOM kill to wait for the container to stop, in case it took init too. */
const CONTAINER_STOP_GRACE_MS = 1_000;
/** The exit code Docker gives an exec whose command it could not start. */
const EXEC_NOT_STARTED = 126;

/**
 * PID 2 of every sandbox (under docker-init as PID 1, which reaps orphans): reports whether the
 * workspace is usable, then sleeps forever. Its report on the container log is the readiness
 * signal, which costs no extra exec round trip.
 */
export const BOOT_SCRIPT = [
  'if [ -d "$1" ] && [ -w "$1" ]; then echo troupe-ready;',
  'else echo "troupe-not-ready: $1 is not a directory writable by uid $(id -u)"; exit 3; fi',
  'exec sleep 2147483647',
].join('\n');

/** A container log's text without the log stream's 8-byte frame headers, trimmed. */
function cleanLog(logText: string): string {
  // eslint-disable-next-line no-control-regex -- the frame headers' bytes
  return logText.replace(/[\x00-\x08\x0e-\x1f]/g, '').trim();
}

/** What a command's failed exit says about the sandbox. */
interface FailureVerdict {
  oomKilled: boolean;
  /** Set when the container is no longer running: the sandbox is unusable. */
  sandboxFailure?: string;
}

/** The sandbox is unusable (marked failed) for `why`. */
class SandboxGone extends Error {
  constructor(readonly why: string) {
    super(why);
  }
}

/** A sandbox in a Docker container; see {@link DockerSandboxBackend}. */
export class DockerSandbox implements Sandbox {
  readonly id: string;
  readonly spec: SandboxSpec;
  private readonly ctx: DockerSandboxContext;
  private readonly parts: DockerSandboxParts;
  private readonly log: Logger;
  private readonly owner: TarOwner;
  private readonly tasks: TaskTable;
  /** Wall-clock start (ms since the epoch, Docker's clock) of each running background task. */
  private readonly taskSinceMs = new Map<string, number>();
  /** Exec id of each background task. */
  private readonly taskExecIds = new Map<string, string>();
  private state: SandboxStatus = 'starting';
  private startedAt?: number;
  private readyAt?: number;
  private restarts = 0;
  private readyPromise: Promise<void> | undefined;
  /** Why the sandbox became unusable after it was ready (its container exited). */
  private failure: string | undefined;
  private resetting: Promise<void> | undefined;
  private destroying: Promise<void> | undefined;

  constructor(ctx: DockerSandboxContext, parts: DockerSandboxParts) {
    this.ctx = ctx;
    this.parts = parts;
    this.id = parts.id;
    this.spec = parts.spec;
    this.owner = userIds(parts.spec.user);
    this.log = ctx.logger.child({ sandbox: parts.id, container: parts.containerId.slice(0, 12) });
    this.tasks = new TaskTable(parts.id, {
      killTree: (taskId, run, why) => this.killTree(taskId, [run], why),
      judgeEnd: async (taskId, exitCode) => {
        const sinceMs = this.taskSinceMs.get(taskId) ?? this.parts.createdAt;
        this.taskSinceMs.delete(taskId);
        const { oomKilled, sandboxFailure } = await this.judgeFailure(sinceMs, exitCode);
        // Down for memory, the command's own doing; down otherwise, the node's.
        return sandboxFailure !== undefined && !oomKilled
          ? { oomKilled, lost: sandboxFailure }
          : { oomKilled };
      },
    });
  }

  get status(): SandboxStatus {
    return this.state;
  }

  metadata(): SandboxMetadata {
    const m: SandboxMetadata = {
      id: this.id,
      backend: 'docker',
      status: this.state,
      image: this.spec.image,
      containerId: this.parts.containerId,
      workspace: this.parts.volumes[0]?.name ?? '',
      labels: { ...this.spec.labels },
      policyExceptions: [...this.spec.policyExceptions],
      createdAt: this.parts.createdAt,
      restarts: this.restarts,
    };
    if (this.parts.imageId !== undefined) m.imageId = this.parts.imageId;
    if (this.parts.poolId !== undefined) m.poolId = this.parts.poolId;
    if (this.startedAt !== undefined) m.startedAt = this.startedAt;
    if (this.readyAt !== undefined) m.readyAt = this.readyAt;
    return m;
  }

  /** Starts the container and begins the readiness check (the backend calls this once). */
  async start(signal?: AbortSignal): Promise<void> {
    try {
      await this.parts.container.start({ abortSignal: signal });
    } catch (err) {
      this.state = 'failed';
      throw dockerError(`start sandbox ${this.id}`, err);
    }
    this.startedAt = Date.now();
    this.state = 'started';
    this.readyPromise = this.becomeReady();
    // A readiness failure is reported by ready(); keep it from becoming an unhandled rejection.
    this.readyPromise.catch(() => undefined);
  }

  async ready(options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.state === 'destroyed') throw this.destroyedError();
    if (this.readyPromise === undefined) {
      throw new TroupeError(ErrorCode.INTERNAL, `sandbox ${this.id} was never started`);
    }
    await raceSignal(this.readyPromise, options.signal);
    if (this.resetting) await raceSignal(this.resetting, options.signal);
    if (this.failure !== undefined) throw this.failedError(this.failure);
  }

  private async becomeReady(): Promise<void> {
    const onTimeout = timeoutError(`sandbox ${this.id} readiness`, this.ctx.readyTimeoutMs);
    const signal = AbortSignal.timeout(this.ctx.readyTimeoutMs);
    try {
      await this.waitReadyLine(signal);
      if (Object.keys(this.spec.files).length > 0) {
        await this.putFiles(this.spec.workdir, this.spec.files, { signal, seeding: true });
      }
    } catch (err) {
      this.state = this.state === 'destroyed' ? 'destroyed' : 'failed';
      if (signal.aborted) throw onTimeout;
      throw err;
    }
    this.readyAt = Date.now();
    if (this.state === 'started') this.state = 'ready';
    this.log.debug({ readyMs: this.readyAt - this.parts.createdAt }, 'sandbox ready');
  }

  /** Follows the container log until the boot script reports. */
  private async waitReadyLine(signal: AbortSignal): Promise<void> {
    let stream: Readable;
    try {
      stream = (await this.parts.container.logs({
        follow: true,
        stdout: true,
        stderr: true,
        abortSignal: signal,
      })) as unknown as Readable;
    } catch (err) {
      throw dockerError(`follow log of sandbox ${this.id}`, err);
    }
    let text = '';
    let ready: boolean;
    try {
      ready = await new Promise<boolean>((resolve, reject) => {
        const onAbort = (): void => reject(fromAbortSignal(signal));
        signal.addEventListener('abort', onAbort, { once: true });
        stream.on('data', (chunk: Buffer) => {
          text += chunk.toString('latin1');
          if (text.includes(READY_LINE)) resolve(true);
          else if (text.includes(NOT_READY_LINE)) reject(this.notReadyError(text));
        });
        stream.once('end', () => resolve(false));
        stream.once('error', (err) => reject(dockerError(`follow log of sandbox ${this.id}`, err)));
      });
    } finally {
      stream.destroy();
    }
    if (!ready) throw await this.endedBeforeReady(text, signal);
  }

  /**
   * Why the container's log ended before the boot script reported. Its own exit (no shell, no
   * `sleep`) is the image's fault, `INVALID_ARGUMENT`. Stopped by a signal, it was stopped from
   * outside (a Docker daemon restart stops every container): `UNAVAILABLE`, retryable, for a
   * sandbox made again. Taken for the image's fault, that failed a chaos task for good
   * (`docker-restart`, seed 30000). So is an exit that left nothing in the log but a code an
   * image at fault does not give (126, 127: no shell, no `sleep`): the log stream cut with the
   * daemon before it showed anything, or a container the restart stopped without a signal's
   * code (seed 46317, graded a bad image).
   */
  private async endedBeforeReady(logText: string, signal: AbortSignal): Promise<TroupeError> {
    let state: Docker.ContainerInspectInfo['State'];
    try {
      state = await this.inspectThroughOutage(signal);
    } catch (err) {
      if (signal.aborted) throw err;
      const why = err instanceof SandboxGone ? err.why : 'its container could not be read';
      return new TroupeError(
        ErrorCode.UNAVAILABLE,
        `sandbox ${this.id} did not become ready: ${why}`,
        { cause: err, details: { sandboxId: this.id } },
      );
    }
    const saidWhy = cleanLog(logText) !== '' || state.ExitCode === 126 || state.ExitCode === 127;
    if (!state.Running && (state.OOMKilled || (state.ExitCode < 128 && saidWhy))) {
      return this.notReadyError(logText, state.ExitCode);
    }
    const why = state.Running
      ? 'its log stream was cut'
      : state.ExitCode >= 128
        ? `its container was stopped from outside (code ${state.ExitCode})`
        : `its container exited (code ${state.ExitCode}) without a word in its log`;
    return new TroupeError(
      ErrorCode.UNAVAILABLE,
      `sandbox ${this.id} did not become ready: ${why} before its boot script reported`,
      { details: { sandboxId: this.id } },
    );
  }

  private notReadyError(logText: string, exitCode?: number): TroupeError {
    const clean = cleanLog(logText);
    const line = clean.split('\n').find((l) => l.includes(NOT_READY_LINE)) ?? clean.slice(-500);
    const exited = `the container exited${exitCode === undefined ? '' : ` (code ${exitCode})`}`;
    return new TroupeError(
      ErrorCode.INVALID_ARGUMENT,
      `sandbox ${this.id} did not become ready: ${line || exited} ` +
        `(the image must provide /bin/sh, sleep, and a ${this.spec.workdir} owned by ${this.spec.user}; ` +
        'Troupe images from deploy/images do)',
      { details: { field: 'spec.image', image: this.spec.image } },
    );
  }

  /** A method, not a property read, so TypeScript does not keep a narrowing across awaits. */
  private isDestroyed(): boolean {
    return this.state === 'destroyed';
  }

  private destroyedError(): TroupeError {
    return new TroupeError(ErrorCode.NOT_FOUND, `sandbox ${this.id} was destroyed`);
  }

  private failedError(why: string): TroupeError {
    return new TroupeError(
      ErrorCode.UNAVAILABLE,
      `sandbox ${this.id} is no longer usable: ${why}; destroy it and create a new sandbox`,
      // Retrying this sandbox cannot help: the caller needs a new one.
      { retryable: false, details: { sandboxLost: true, sandboxId: this.id } },
    );
  }

  private argv(cmd: Command): string[] {
    if (typeof cmd === 'string') {
      if (cmd.length === 0) throw invalidArgument('cmd', 'must not be empty');
      return ['/bin/sh', '-c', cmd];
    }
    if (cmd.length === 0 || cmd.some((a) => typeof a !== 'string')) {
      throw invalidArgument('cmd', 'must be a non-empty array of strings or a string', cmd);
    }
    return [...cmd];
  }

  async exec(cmd: Command, options: ExecOptions = {}): Promise<ExecResult> {
    const argv = this.argv(cmd);
    const { signal, ...rest } = options;
    const opts = parseWith(ExecOptionsSchema, rest, { prefix: 'exec options' });
    throwIfAborted(signal);
    await this.ready({ signal });
    const timeoutMs = opts.timeoutMs ?? this.ctx.defaultExecTimeoutMs;
    const taskId = randomId('task');
    const sinceMs = Date.now();
    const run = await this.startThroughOutage({
      cmd: argv,
      user: this.spec.user,
      env: [...envEntries(opts.env ?? {}, this.spec), `${TASK_ENV_KEY}=${taskId}`],
      cwd: opts.cwd ?? this.spec.workdir,
      stdin: opts.stdin === undefined ? undefined : Buffer.from(opts.stdin),
      maxOutputBytes: opts.maxOutputBytes ?? this.ctx.maxOutputBytes,
      signal,
    });
    let timedOut = false;
    let killing: Promise<void> | undefined;
    const killOnce = (why: string): void => {
      killing ??= this.killTree(taskId, [run], why);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killOnce('timeout');
    }, timeoutMs);
    const onAbort = (): void => killOnce('cancelled');
    signal?.addEventListener('abort', onAbort, { once: true });
    let end;
    try {
      end = await run.done;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
    if (killing) await killing;
    if (this.isDestroyed()) {
      throw new TroupeError(ErrorCode.NOT_FOUND, `sandbox ${this.id} was destroyed during exec`);
    }
    let stdout = run.stdout.text();
    let stderr = run.stderr.text();
    if (
      (end.exitCode === 126 || end.exitCode === 127) &&
      stdout.startsWith('OCI runtime exec failed')
    ) {
      // The engine reports a command it could not start (no such file, bad cwd) on stdout.
      stderr = stdout + stderr;
      stdout = '';
    }
    const result: ExecResult = {
      exitCode: end.exitCode,
      stdout,
      stderr,
      stdoutDroppedBytes: run.stdout.droppedBytes,
      stderrDroppedBytes: run.stderr.droppedBytes,
      timedOut,
      durationMs: Math.round(end.endedAt - run.startedAt),
    };
    result.oomKilled = false;
    if (end.exitCode !== 0 && !timedOut && !signal?.aborted) {
      const verdict = await this.judgeFailure(sinceMs, end.exitCode);
      result.oomKilled = verdict.oomKilled;
      if (verdict.sandboxFailure !== undefined) result.sandboxFailure = verdict.sandboxFailure;
    }
    if (signal?.aborted && !timedOut) throw fromAbortSignal(signal);
    // The container went down under the command, not for memory (a Docker daemon restart stops
    // every container): the command's exit says nothing of it, and the sandbox is lost.
    if (result.sandboxFailure !== undefined && !result.oomKilled) {
      throw this.failedError(result.sandboxFailure);
    }
    if (end.lost !== undefined && !timedOut && !result.oomKilled) {
      // A Docker daemon outage took the command's end: its exit code says nothing. Its
      // container survived, so it is killed there, and the caller runs it again.
      await this.killTree(taskId, [run], 'lost').catch(() => undefined);
      throw new TroupeError(ErrorCode.UNAVAILABLE, `the command's end was lost: ${end.lost}`, {
        details: { sandboxId: this.id },
      });
    }
    return result;
  }

  /**
   * Whether the OOM killer fired while a command ran (from `sinceMs`, wall clock, until now), and
   * whether its failure took the container down. Reads only Docker's own record (its `oom`
   * events, the container's state): a command run in the container could itself be OOM-killed
   * when the memory stays full, as it does when a tmpfs filled it.
   */
  private async judgeFailure(sinceMs: number, exitCode: number): Promise<FailureVerdict> {
    if (this.isDestroyed()) return { oomKilled: false };
    const { docker } = this.ctx;
    const { containerId } = this.parts;
    // An OOM kill shows as SIGKILL (137), or as no exit code when the container went with it.
    const signalled = exitCode >= 128 || exitCode < 0;
    // 126: Docker could not start the command. In a container that a Docker daemon shutting down
    // is stopping, that is "cannot exec in a stopped state" (chaos seed 46100, graded as the
    // command's exit); in a running one, a command that is not executable.
    const notStarted = exitCode === EXEC_NOT_STARTED;
    let oomKilled = false;
    try {
      oomKilled = await oomEventBetween(docker, containerId, {
        sinceMs,
        untilMs: Date.now(),
        graceMs: signalled ? OOM_EVENT_GRACE_MS : 0,
      });
    } catch (err) {
      this.log.warn({ err }, 'could not read the oom events');
    }
    // A hard reset stops the container on purpose; only an unplanned stop makes the sandbox fail.
    if ((!signalled && !notStarted) || this.resetting || this.isDestroyed()) return { oomKilled };
    if (oomKilled || exitCode === 137 || exitCode === 143 || notStarted) {
      // The OOM killer may be taking init down too, or the container is being stopped (a
      // Docker daemon shutting down stops them all, killing their commands): Docker records
      // that stop a little after the exec's end, so give it a moment before asking whether the
      // container still runs. Asked at once, a command the restart killed was graded as its
      // own failure (chaos `docker-restart`, seed 30001).
      await this.parts.container
        .wait({
          condition: 'not-running',
          abortSignal: AbortSignal.timeout(CONTAINER_STOP_GRACE_MS),
        })
        .catch(() => undefined);
    }
    let state: Docker.ContainerInspectInfo['State'];
    try {
      state = await this.inspectThroughOutage();
    } catch (err) {
      if (err instanceof SandboxGone) return { oomKilled, sandboxFailure: err.why };
      this.log.warn({ err }, 'could not inspect the container after a failed command');
      return { oomKilled };
    }
    if (state.Running || this.resetting || this.isDestroyed()) return { oomKilled };
    // Docker sets OOMKilled when the container itself ends in an OOM kill; it stays set until a
    // restart, so it only counts for a container that stopped after this command started.
    const finishedMs = Date.parse(state.FinishedAt);
    const containerOom = state.OOMKilled && !(finishedMs < sinceMs);
    oomKilled ||= containerOom;
    const why =
      `its container exited (code ${state.ExitCode}` +
      (containerOom
        ? ', killed for memory: /tmp and other tmpfs mounts count toward memoryMb'
        : '') +
      ')';
    return { oomKilled, sandboxFailure: this.markFailed(why) };
  }

  /**
   * The container's state; when the daemon cannot be reached, its state once the daemon answers
   * again (a restart takes 5–20 s). Throws {@link SandboxGone} (the sandbox marked failed) when
   * the container was removed or the daemon stays away for `daemonWaitMs`.
   */
  private async inspectThroughOutage(
    signal?: AbortSignal,
  ): Promise<Docker.ContainerInspectInfo['State']> {
    const waitMs = this.ctx.daemonWaitMs ?? 60_000;
    const untilMs = Date.now() + waitMs;
    for (;;) {
      try {
        return (await this.parts.container.inspect()).State;
      } catch (err) {
        if (dockerStatus(err) === 404) {
          throw new SandboxGone(this.markFailed('its container was removed'));
        }
        if (!isDaemonUnreachable(err)) throw err;
        this.log.warn({ err }, 'Docker daemon unreachable: waiting for it to read the container');
        if (!(await waitForDaemon(this.ctx.docker, untilMs, signal))) {
          throw new SandboxGone(
            this.markFailed(`the Docker daemon did not answer for ${Math.round(waitMs / 1000)} s`),
          );
        }
      }
    }
  }

  /**
   * Starts `req` in the container through a Docker daemon outage. A start that could not
   * connect waits for the daemon (up to `daemonWaitMs`) and, when the container still runs, is
   * made again: it never reached the daemon, so nothing ran. When the container did not survive
   * the outage (a daemon restart stops it), fails with the sandbox lost (`UNAVAILABLE`,
   * `details.sandboxLost`), and the job runs the task again in a new sandbox. A start cut off
   * mid-request may have started the command, so it is not made again.
   */
  private async startThroughOutage(req: RawExecRequest): Promise<RunningExec> {
    const daemonWaitMs = this.ctx.daemonWaitMs ?? 60_000;
    const untilMs = Date.now() + daemonWaitMs;
    for (;;) {
      try {
        return await startExec(this.ctx.docker, this.parts.container, {
          ...req,
          daemonWaitMs,
          log: this.log,
          ...(this.ctx.execEnds ? { recordedEnd: this.ctx.execEnds } : {}),
        });
      } catch (err) {
        if (!isDaemonUnreachable(err)) throw err;
        this.log.warn({ err }, 'Docker daemon unreachable: waiting for it to run a command');
        if (!(await waitForDaemon(this.ctx.docker, untilMs, req.signal))) throw err;
        let state: Docker.ContainerInspectInfo['State'];
        try {
          state = await this.inspectThroughOutage(req.signal);
        } catch (inspectErr) {
          if (inspectErr instanceof SandboxGone) throw this.failedError(inspectErr.why);
          throw err;
        }
        if (!state.Running && !this.resetting && !this.isDestroyed()) {
          const why = `its container stopped (code ${state.ExitCode}) while the Docker daemon was away`;
          throw this.failedError(this.markFailed(why));
        }
        if (!neverReachedDaemon(err)) throw err;
      }
    }
  }

  /** Records that the sandbox is unusable; later calls fail with `why`. Returns `why`. */
  private markFailed(why: string): string {
    if (this.failure === undefined) {
      this.failure = why;
      this.state = 'failed';
      this.log.warn({ why }, 'sandbox failed');
    }
    return this.failure;
  }

  /**
   * Kills every process of a task (see KILL_TREE_SCRIPT), then waits for its execs to end. When
   * the helper cannot run (the pids limit is exhausted by a fork bomb) or the tree survives, the
   * container is hard-reset: killing PID 1 makes the kernel kill the whole PID namespace.
   */
  private async killTree(taskId: string, runs: TaskRun[], why: string): Promise<void> {
    // A failed sandbox's container is down, and its processes with it: nothing to kill, and a
    // hard reset would bring back a container whose tmpfs may still fill its memory.
    if (this.state === 'destroyed' || this.failure !== undefined) return;
    const started = performance.now();
    let helperOk = false;
    try {
      const helper = await startExec(this.ctx.docker, this.parts.container, {
        cmd: ['/bin/sh', '-c', KILL_TREE_SCRIPT, 'troupe-kill', taskId],
        user: this.spec.user,
        env: [],
        maxOutputBytes: 16_384,
      });
      const end = await within(helper.done, KILL_HELPER_TIMEOUT_MS);
      helperOk = end !== undefined && end.exitCode === 0;
      this.log.debug(
        { taskId, why, helperExit: end?.exitCode, killed: helper.stdout.text().trim() },
        'kill helper finished',
      );
      if (end === undefined) helper.detach();
    } catch (err) {
      this.log.warn({ err, taskId }, 'kill helper could not run');
    }
    const ended = helperOk
      ? ((await within(
          Promise.all(runs.map((r) => r.done)).then(() => true),
          this.ctx.killGraceMs,
        )) ?? false)
      : false;
    if (!ended && !this.isDestroyed()) {
      this.log.warn({ taskId, why, helperOk }, 'process tree did not die: hard-resetting sandbox');
      await this.hardReset();
      for (const r of runs) r.detach();
    }
    this.log.debug({ taskId, why, ms: Math.round(performance.now() - started) }, 'task killed');
  }

  /** Kills PID 1 (and with it every process), restarts the container, checks the workspace. */
  private async hardReset(): Promise<void> {
    if (this.resetting) return this.resetting;
    this.resetting = (async () => {
      try {
        const c = this.parts.container;
        await ignoreNotFound(() => c.kill({ signal: 'SIGKILL' })).catch((err: unknown) => {
          // 409: already stopped.
          if (dockerStatus(err) !== 409) throw err;
        });
        await c.wait({ condition: 'not-running' }).catch(() => undefined);
        await c.start();
        this.restarts += 1;
        this.tasks.abandonAll(false);
        const probe = await startExec(this.ctx.docker, c, {
          cmd: ['/bin/sh', '-c', 'test -w "$1"', 'troupe-probe', this.spec.workdir],
          user: this.spec.user,
          env: [],
          maxOutputBytes: 4096,
        });
        const end = await probe.done;
        if (end.exitCode !== 0)
          throw new Error(`workspace not writable after reset (exit ${end.exitCode})`);
      } catch (err) {
        this.state = this.state === 'destroyed' ? 'destroyed' : 'failed';
        this.log.error({ err }, 'sandbox hard reset failed');
        throw dockerError(`reset sandbox ${this.id}`, err);
      } finally {
        this.resetting = undefined;
      }
    })();
    return this.resetting;
  }

  async startBackground(cmd: Command, options: BackgroundExecOptions = {}): Promise<string> {
    const argv = this.argv(cmd);
    const { signal, beforeStart, ...rest } = options;
    const opts = parseWith(BackgroundExecOptionsSchema, rest, { prefix: 'background options' });
    await this.ready({ signal });
    const taskId = randomId('task');
    this.taskSinceMs.set(taskId, Date.now());
    const run = await this.startThroughOutage({
      cmd: argv,
      user: this.spec.user,
      env: [...envEntries(opts.env ?? {}, this.spec), `${TASK_ENV_KEY}=${taskId}`],
      cwd: opts.cwd ?? this.spec.workdir,
      maxOutputBytes: opts.maxOutputBytes ?? this.ctx.maxOutputBytes,
      signal,
      ...(opts.interactive ? { interactive: true } : {}),
      ...(beforeStart ? { beforeStart: (execId: string) => beforeStart(taskId, execId) } : {}),
    });
    this.tasks.add(taskId, run, opts.timeoutMs);
    this.taskExecIds.set(taskId, run.execId);
    return taskId;
  }

  backgroundHandle(taskId: string): string | undefined {
    return this.taskExecIds.get(taskId);
  }

  async poll(taskId: string): Promise<BackgroundTaskStatus> {
    return this.tasks.status(taskId);
  }

  async writeStdin(taskId: string, data: string, options: { close?: boolean } = {}): Promise<void> {
    this.tasks.writeStdin(taskId, data, options.close);
  }

  async readOutput(taskId: string, options: ReadOutputOptions): Promise<TaskOutput> {
    return this.tasks.readOutput(taskId, readOutputOptions(options));
  }

  async wait(taskId: string, options: WaitOptions = {}): Promise<BackgroundTaskStatus> {
    return this.tasks.wait(taskId, options);
  }

  async kill(
    taskId: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<BackgroundTaskStatus> {
    return this.tasks.kill(taskId, options);
  }

  /** The mount (workspace or extra volume) that holds `absPath`, and the path inside it. */
  private volumeFor(given: string, field: string): { root: string; rel: string } {
    // `dir/.` is Docker's "the contents of dir" form; it names the same place.
    const absPath = given.length > 2 && given.endsWith('/.') ? given.slice(0, -2) : given;
    if (
      !path.posix.isAbsolute(absPath) ||
      path.posix.normalize(absPath) !== absPath.replace(/(.)\/$/, '$1')
    ) {
      throw invalidArgument(field, 'must be an absolute, normalised path', absPath);
    }
    for (const v of this.parts.volumes) {
      if (absPath === v.target || absPath.startsWith(`${v.target}/`)) {
        return { root: v.target, rel: path.posix.relative(v.target, absPath) };
      }
    }
    if (!this.spec.readOnlyRoot) return { root: '/', rel: absPath.slice(1) };
    throw invalidArgument(
      field,
      `must lie in the workspace (${this.spec.workdir}) or an extra volume (${this.spec.volumes.join(', ') || 'none'}): the root filesystem is read-only and tmpfs mounts are not reachable for file transfer`,
      absPath,
    );
  }

  async putFiles(
    destDir: string,
    files: FileSource,
    options: PutFilesOptions & { seeding?: boolean } = {},
  ): Promise<void> {
    if (this.state === 'destroyed') throw this.destroyedError();
    if (!options.seeding) await this.ready({ signal: options.signal });
    const { root, rel } = this.volumeFor(destDir, 'destDir');
    const ownership = options.owner ?? 'sandbox';
    const owner: TarOwner | undefined =
      ownership === 'sandbox' ? this.owner : ownership === 'root' ? { uid: 0, gid: 0 } : undefined;
    const tarStream = await tarStreamOf(files, owner, {
      prefix: rel,
      prefixOwner: owner ?? this.owner,
      field: 'files',
    });
    try {
      await this.parts.container.putArchive(tarStream, { path: root, abortSignal: options.signal });
    } catch (err) {
      throw dockerError(`put files into ${destDir} of sandbox ${this.id}`, err);
    }
  }

  async getFiles(srcPath: string, options: { signal?: AbortSignal } = {}): Promise<Readable> {
    if (this.state === 'destroyed') throw this.destroyedError();
    await this.ready(options);
    this.volumeFor(srcPath, 'srcPath');
    try {
      return (await this.parts.container.getArchive({
        path: srcPath,
        abortSignal: options.signal,
      })) as unknown as Readable;
    } catch (err) {
      throw dockerError(`get ${srcPath} from sandbox ${this.id}`, err);
    }
  }

  async snapshot(tag: string, options: { signal?: AbortSignal } = {}): Promise<SandboxSnapshot> {
    if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,95}$/.test(tag)) {
      throw invalidArgument('tag', 'must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,95}', tag);
    }
    await this.ready(options);
    const { docker, logger } = this.ctx;
    const { signal } = options;
    const labels = this.spec.labels;
    const repo = 'troupe-snapshot';
    const imageTag = `${labels.cluster}.${tag}`;
    const baseLabels: Record<string, string> = {
      [TroupeLabel.MANAGED]: 'true',
      [TroupeLabel.CLUSTER]: labels.cluster,
      [TroupeLabel.HOST]: labels.host,
      [TroupeLabel.ACTOR]: labels.actor,
      [TroupeLabel.JOB]: labels.job,
      [TroupeLabel.SANDBOX]: this.id,
    };
    let base = this.parts.imageId ?? this.spec.image;
    let intermediate: string | undefined;
    let staging: Docker.Container | undefined;
    try {
      if (!this.spec.readOnlyRoot) {
        // A writable root has state outside the workspace: capture the container's layer too.
        const res = (await this.parts.container.commit({
          _query: { container: this.parts.containerId, pause: false },
          _body: { Labels: { ...baseLabels, [TroupeLabel.ROLE]: 'snapshot-staging' } },
          abortSignal: signal,
        })) as { Id: string };
        base = res.Id;
        intermediate = res.Id;
      }
      // The workspace is a volume, which `docker commit` never captures. Copy it into the layer
      // of a stopped staging container (no volume there) and commit that: a fork's empty volume
      // is then filled from the image by Docker's copy-up, ownership included.
      const ws = await this.getFiles(this.spec.workdir, { signal });
      staging = await docker.createContainer({
        Image: base,
        Labels: { ...baseLabels, [TroupeLabel.ROLE]: 'snapshot-staging' },
        HostConfig: { NetworkMode: 'none' },
        abortSignal: signal,
      });
      await staging.putArchive(ws, {
        path: path.posix.dirname(this.spec.workdir),
        abortSignal: signal,
      });
      const res = (await staging.commit({
        _query: {
          container: staging.id,
          repo,
          tag: imageTag,
          pause: false,
          comment: `snapshot of ${this.id}`,
        },
        _body: { Labels: { ...baseLabels, [TroupeLabel.ROLE]: 'snapshot' } },
        abortSignal: signal,
      })) as { Id: string };
      logger.debug({ sandbox: this.id, imageId: res.Id, tag: imageTag }, 'snapshot taken');
      return {
        backend: 'docker',
        imageId: res.Id,
        ref: `${repo}:${imageTag}`,
        sourceSandboxId: this.id,
        spec: this.spec,
        createdAt: Date.now(),
      };
    } catch (err) {
      throw dockerError(`snapshot sandbox ${this.id}`, err);
    } finally {
      if (staging)
        await ignoreNotFound(() => (staging as Docker.Container).remove({ force: true })).catch(
          () => undefined,
        );
      if (intermediate) {
        // Untagged parents are kept alive by the snapshot that uses them; removal fails harmlessly.
        await docker
          .getImage(intermediate)
          .remove()
          .catch(() => undefined);
      }
    }
  }

  async destroy(options: { signal?: AbortSignal } = {}): Promise<void> {
    this.destroying ??= this.doDestroy();
    await raceSignal(this.destroying, options.signal);
  }

  private async doDestroy(): Promise<void> {
    if (this.tasks.anyRunning && this.failure === undefined) {
      // Running commands are killed as `kill` kills them, while the container lives, so each
      // ends with its real end: one that exited just before keeps its own exit code (its end
      // was on its way), the others end killed. (Once the container is gone, Docker reports an
      // exec's exit code unreliably.)
      await within(this.tasks.killAll(), KILL_ON_DESTROY_MS);
    }
    this.state = 'destroyed';
    this.tasks.abandonAll(true);
    const errors: unknown[] = [];
    try {
      await ignoreNotFound(() => this.parts.container.remove({ force: true, v: true }));
    } catch (err) {
      errors.push(err);
    }
    await Promise.all(
      this.parts.volumes.map(async (v) => {
        try {
          await ignoreNotFound(() => this.ctx.docker.getVolume(v.name).remove());
        } catch (err) {
          errors.push(err);
        }
      }),
    );
    this.ctx.onDestroyed(this);
    if (errors.length > 0) {
      const outage = errors.every(isDaemonOutage);
      this.log.error(
        { err: errors[0] },
        outage
          ? 'sandbox destroy met a Docker daemon outage: removing once it answers again'
          : 'sandbox destroy left objects behind (the reaper will retry)',
      );
      // A daemon restarting: remove as soon as it is back, not a reaper period later (the
      // chaos harness's `docker-restart` found a job's containers left a minute after it, and
      // then its volumes, refused `500 database not open` by a daemon shutting down).
      if (outage) void this.removeAfterOutage();
      throw dockerError(`destroy sandbox ${this.id}`, errors[0]);
    }
    this.log.debug({}, 'sandbox destroyed');
  }

  /** Removes the container and volumes once the daemon answers, through its restart. */
  private async removeAfterOutage(): Promise<void> {
    const untilMs = Date.now() + (this.ctx.daemonWaitMs ?? 60_000);
    try {
      await retryWithBackoff(
        async () => {
          if (!(await waitForDaemon(this.ctx.docker, untilMs))) {
            throw new Error('the Docker daemon did not answer again');
          }
          await removeContainerAndVolumes(
            this.ctx.docker,
            this.parts.container,
            this.parts.volumes,
          );
        },
        // Unref'd: the removal never keeps a node agent that is exiting.
        { isRetryable: isDaemonOutage, untilMs, firstPauseMs: 500, unref: true },
      );
      this.log.info({}, 'sandbox removed after the Docker daemon outage');
    } catch (err) {
      this.log.warn({ err }, 'sandbox still not removed (the reaper will retry)');
    }
  }
}
