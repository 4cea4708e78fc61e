import { spawn } from 'node:child_process';
import { cp, mkdir, readFile, rm, stat } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import {
  ErrorCode,
  fromAbortSignal,
  invalidArgument,
  parseWith,
  raceSignal,
  throwIfAborted,
  TroupeError,
} from '@troupe/proto';
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
import type { SandboxSpec } from '../sandbox-spec';
import { within } from './abort';
import { BackgroundExecOptionsSchema, ExecOptionsSchema, envEntries } from './exec-options';
import { randomId } from './ids';
import { KILL_TREE_SCRIPT, TASK_ENV_KEY } from './kill-tree-script';
import { OutputCapture } from './output-capture';
import { extractTarTo, packDirectory, tarStreamOf } from './tar';
import { INTERACTIVE_LOG_BYTES, readOutputOptions, StreamLog } from './stream-log';
import { TaskTable, type TaskRun } from './task-table';

/** How long a destroyed sandbox's running commands may take to show their ends once killed. */
const END_SETTLE_MS = 2_000;

/** Settings a process sandbox needs from its backend. */
export interface ProcessSandboxContext {
  logger: Logger;
  defaultExecTimeoutMs: number;
  maxOutputBytes: number;
  snapshotDir: string;
  onDestroyed(sandbox: ProcessSandbox): void;
}

/** The fixed PATH of process sandboxes: the host's environment is never copied. */
const SAFE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * A development-only sandbox: a host directory per mount and child processes in their own
 * process group. No isolation at all; see {@link ProcessSandboxBackend}.
 */
export class ProcessSandbox implements Sandbox {
  readonly id: string;
  readonly spec: SandboxSpec;
  private readonly ctx: ProcessSandboxContext;
  private readonly root: string;
  private readonly mounts: { target: string; host: string }[];
  private readonly tasks: TaskTable;
  /** Process-group leader pid of every live task. */
  private readonly children = new Map<string, number>();
  private state: SandboxStatus = 'starting';
  private readonly createdAt = Date.now();
  private startedAt?: number;
  private readyAt?: number;
  private readyPromise: Promise<void> | undefined;
  private destroying: Promise<void> | undefined;

  constructor(ctx: ProcessSandboxContext, id: string, spec: SandboxSpec, root: string) {
    this.ctx = ctx;
    this.id = id;
    this.spec = spec;
    this.root = root;
    this.mounts = [
      { target: spec.workdir, host: path.join(root, 'workspace') },
      ...spec.volumes.map((target, i) => ({ target, host: path.join(root, `volume-${i}`) })),
      { target: '/tmp', host: path.join(root, 'tmp') },
      ...Object.keys(spec.tmpfs).map((target, i) => ({
        target,
        host: path.join(root, `tmpfs-${i}`),
      })),
    ];
    this.tasks = new TaskTable(id, {
      killTree: (taskId, run, why) => this.killTree(taskId, run, why),
      judgeEnd: async () => ({ oomKilled: false }),
    });
  }

  get status(): SandboxStatus {
    return this.state;
  }

  /** Host directory backing the workspace. */
  get workspaceDir(): string {
    return this.mounts[0]?.host ?? this.root;
  }

  metadata(): SandboxMetadata {
    const m: SandboxMetadata = {
      id: this.id,
      backend: 'process',
      status: this.state,
      image: this.spec.image,
      workspace: this.workspaceDir,
      labels: { ...this.spec.labels },
      policyExceptions: ['backend:process', ...this.spec.policyExceptions],
      createdAt: this.createdAt,
      restarts: 0,
    };
    if (this.startedAt !== undefined) m.startedAt = this.startedAt;
    if (this.readyAt !== undefined) m.readyAt = this.readyAt;
    return m;
  }

  /** Creates the directories and seeds files (the backend calls this once). */
  async start(seed?: string): Promise<void> {
    await Promise.all(this.mounts.map((m) => mkdir(m.host, { recursive: true, mode: 0o755 })));
    this.startedAt = Date.now();
    this.state = 'started';
    this.readyPromise = (async () => {
      if (seed !== undefined) await cp(seed, this.workspaceDir, { recursive: true });
      if (Object.keys(this.spec.files).length > 0) {
        await this.putFiles(this.spec.workdir, this.spec.files, { seeding: true });
      }
      this.readyAt = Date.now();
      if (this.state === 'started') this.state = 'ready';
    })();
    this.readyPromise.catch(() => {
      if (this.state !== 'destroyed') this.state = 'failed';
    });
  }

  async ready(options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.state === 'destroyed') {
      throw new TroupeError(ErrorCode.NOT_FOUND, `sandbox ${this.id} was destroyed`);
    }
    if (this.readyPromise === undefined) {
      throw new TroupeError(ErrorCode.INTERNAL, `sandbox ${this.id} was never started`);
    }
    await raceSignal(this.readyPromise, options.signal);
  }

  /** Maps a sandbox path to the host directory that backs it. */
  hostPath(p: string, field: string): string {
    if (!path.posix.isAbsolute(p) || p.split('/').includes('..')) {
      throw invalidArgument(field, 'must be an absolute path without ".." segments', p);
    }
    for (const m of this.mounts) {
      if (p === m.target || p.startsWith(`${m.target}/`)) {
        return path.join(m.host, path.posix.relative(m.target, p));
      }
    }
    throw invalidArgument(
      field,
      `must lie in ${this.mounts.map((m) => m.target).join(', ')} (process sandboxes have no other filesystem)`,
      p,
    );
  }

  private argv(cmd: Command): string[] {
    if (typeof cmd === 'string') {
      if (cmd.length === 0) throw invalidArgument('cmd', 'must not be empty');
      return ['/bin/sh', '-c', cmd];
    }
    if (cmd.length === 0) throw invalidArgument('cmd', 'must be a non-empty array of strings', cmd);
    return [...cmd];
  }

  private spawnTask(
    argv: string[],
    taskId: string,
    opts: {
      cwd?: string;
      env?: Record<string, string>;
      stdin?: string | Uint8Array;
      maxOutputBytes?: number;
      interactive?: boolean;
    },
  ): TaskRun {
    const env: Record<string, string> = {
      PATH: SAFE_PATH,
      HOME: this.workspaceDir,
      TMPDIR: this.hostPath('/tmp', 'tmp'),
      LANG: 'C.UTF-8',
      ...this.spec.env,
    };
    for (const entry of envEntries(opts.env ?? {}, this.spec)) {
      const i = entry.indexOf('=');
      env[entry.slice(0, i)] = entry.slice(i + 1);
    }
    env[TASK_ENV_KEY] = taskId;
    const cwd = this.hostPath(opts.cwd ?? this.spec.workdir, 'cwd');
    const max = opts.maxOutputBytes ?? this.ctx.maxOutputBytes;
    const stdout = new OutputCapture(max);
    const stderr = new OutputCapture(max);
    const stdoutLog = opts.interactive ? new StreamLog(INTERACTIVE_LOG_BYTES) : undefined;
    const startedAt = performance.now();
    const [file, ...args] = argv as [string, ...string[]];
    // detached: the child leads its own process group, so the group can be killed as one.
    const child = spawn(file, args, {
      cwd,
      env,
      detached: true,
      stdio: [opts.stdin === undefined && !opts.interactive ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (b: Buffer) => {
      stdout.write(b);
      stdoutLog?.write(b);
    });
    // A write after the task exited fails with EPIPE: that is the task's end, not ours.
    if (opts.interactive) child.stdin?.on('error', () => undefined);
    child.stderr?.on('data', (b: Buffer) => stderr.write(b));
    if (opts.stdin !== undefined && child.stdin) {
      child.stdin.on('error', () => undefined);
      child.stdin.end(Buffer.from(opts.stdin));
    }
    if (child.pid !== undefined) this.children.set(taskId, child.pid);
    const done = new Promise<{ exitCode: number; endedAt: number }>((resolve) => {
      child.once('error', (err) => {
        stderr.write(Buffer.from(`${err.message}\n`));
        resolve({ exitCode: 127, endedAt: performance.now() });
      });
      child.once('close', (code, signal) => {
        const signo = signal === null ? 0 : (osConstants.signals[signal] ?? 9);
        resolve({ exitCode: code ?? 128 + signo, endedAt: performance.now() });
      });
    });
    return {
      startedAt,
      stdout,
      stderr,
      done,
      detach: () => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      },
      ...(opts.interactive && child.stdin ? { stdin: child.stdin, stdoutLog } : {}),
    };
  }

  /** SIGKILLs the task's process group and any process carrying its marker. */
  private async killTree(taskId: string, run: TaskRun, why: string): Promise<void> {
    const pid = this.children.get(taskId);
    if (pid !== undefined) killGroup(pid);
    // Members that left the group (setsid) still carry the task marker.
    const helper = spawn('/bin/sh', ['-c', KILL_TREE_SCRIPT, 'troupe-kill', taskId], {
      env: { PATH: SAFE_PATH },
      stdio: 'ignore',
    });
    await within(
      new Promise<void>((resolve) => {
        helper.once('close', () => resolve());
        helper.once('error', () => resolve());
      }),
      10_000,
    );
    await within(run.done, 3_000);
    this.children.delete(taskId);
    this.ctx.logger.debug({ taskId, why }, 'process task killed');
  }

  async exec(cmd: Command, options: ExecOptions = {}): Promise<ExecResult> {
    const argv = this.argv(cmd);
    const { signal, ...rest } = options;
    const opts = parseWith(ExecOptionsSchema, rest, { prefix: 'exec options' });
    throwIfAborted(signal);
    await this.ready({ signal });
    const taskId = randomId('task');
    const run = this.spawnTask(argv, taskId, opts);
    let timedOut = false;
    let killing: Promise<void> | undefined;
    const killOnce = (why: string): void => {
      killing ??= this.killTree(taskId, run, why);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killOnce('timeout');
    }, opts.timeoutMs ?? this.ctx.defaultExecTimeoutMs);
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
    this.children.delete(taskId);
    if (signal?.aborted && !timedOut) throw fromAbortSignal(signal);
    return {
      exitCode: end.exitCode,
      stdout: run.stdout.text(),
      stderr: run.stderr.text(),
      stdoutDroppedBytes: run.stdout.droppedBytes,
      stderrDroppedBytes: run.stderr.droppedBytes,
      timedOut,
      oomKilled: false,
      durationMs: Math.round(end.endedAt - run.startedAt),
    };
  }

  async startBackground(cmd: Command, options: BackgroundExecOptions = {}): Promise<string> {
    const argv = this.argv(cmd);
    const { signal, beforeStart, ...rest } = options;
    const opts = parseWith(BackgroundExecOptionsSchema, rest, { prefix: 'background options' });
    await this.ready({ signal });
    const taskId = randomId('task');
    await beforeStart?.(taskId, undefined);
    this.tasks.add(taskId, this.spawnTask(argv, taskId, opts), opts.timeoutMs);
    return taskId;
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

  async putFiles(
    destDir: string,
    files: FileSource,
    options: PutFilesOptions & { seeding?: boolean } = {},
  ): Promise<void> {
    if (!options.seeding) await this.ready({ signal: options.signal });
    const dest = this.hostPath(destDir, 'destDir');
    await mkdir(dest, { recursive: true });
    // Owners cannot be set without root; the process backend keeps the caller's uid.
    await extractTarTo(await tarStreamOf(files, undefined), dest);
  }

  async getFiles(srcPath: string, options: { signal?: AbortSignal } = {}): Promise<Readable> {
    await this.ready(options);
    const host = this.hostPath(srcPath, 'srcPath');
    const st = await stat(host).catch(() => undefined);
    if (st === undefined) {
      throw new TroupeError(ErrorCode.NOT_FOUND, `${srcPath} does not exist in sandbox ${this.id}`);
    }
    const name = path.posix.basename(srcPath);
    if (st.isDirectory()) return Readable.from([await packDirectory(host, { prefix: name })]);
    return tarStreamOf(
      { [name]: { content: await readFile(host), mode: st.mode & 0o7777 } },
      {
        uid: st.uid,
        gid: st.gid,
      },
    );
  }

  async snapshot(tag: string, options: { signal?: AbortSignal } = {}): Promise<SandboxSnapshot> {
    if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,95}$/.test(tag)) {
      throw invalidArgument('tag', 'must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,95}', tag);
    }
    await this.ready(options);
    const dir = path.join(this.ctx.snapshotDir, `${tag}-${randomId('snap').slice(5, 17)}`);
    await cp(this.workspaceDir, dir, { recursive: true });
    return {
      backend: 'process',
      imageId: dir,
      ref: `process-snapshot:${tag}`,
      sourceSandboxId: this.id,
      spec: this.spec,
      createdAt: Date.now(),
    };
  }

  async destroy(options: { signal?: AbortSignal } = {}): Promise<void> {
    this.destroying ??= (async () => {
      this.state = 'destroyed';
      for (const pid of this.children.values()) killGroup(pid);
      this.children.clear();
      // Each running command's real end: one that exited just before keeps its own exit code.
      await this.tasks.endAll(END_SETTLE_MS);
      this.tasks.abandonAll(true);
      await rm(this.root, { recursive: true, force: true, maxRetries: 3 });
      this.ctx.onDestroyed(this);
    })();
    await raceSignal(this.destroying, options.signal);
  }
}

/** SIGKILLs a process group; a group that is already gone is fine. */
function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // ESRCH: nothing left to kill.
  }
}
