import type { Readable } from 'node:stream';
import type { SandboxLabels } from './labels';
import type { SandboxSpec } from './sandbox-spec';

/** Where a sandbox is in its life. `started`: the container runs; `ready`: it accepts work. */
export type SandboxStatus = 'starting' | 'started' | 'ready' | 'failed' | 'destroyed';

/** A command: an argv array (run directly) or a string (run with `/bin/sh -c`). */
export type Command = readonly string[] | string;

/** Options of {@link Sandbox.exec}. */
export interface ExecOptions {
  /** Kill the command's whole process tree after this long. @default 60000 (backend config) */
  timeoutMs?: number;
  /** Working directory. @default the spec's `workdir` */
  cwd?: string;
  /** Extra environment on top of the spec's (same key rules: no secret-like keys). @default {} */
  env?: Record<string, string>;
  /** Bytes written to the command's stdin, which is then closed. @default no stdin */
  stdin?: string | Uint8Array;
  /**
   * Output kept per stream: the first and last halves of this many bytes; the middle is dropped and
   * counted in `stdoutDroppedBytes`/`stderrDroppedBytes`.
   * @default 1048576 (backend config)
   */
  maxOutputBytes?: number;
  /** Aborting kills the process tree and rejects with `CANCELLED` (or the signal's reason). */
  signal?: AbortSignal;
}

/** What a finished command did. */
export interface ExecResult {
  /** Exit status; `128 + n` when killed by signal `n` (137 after SIGKILL). */
  exitCode: number;
  /** Captured stdout (UTF-8): all of it, or its head and tail when bytes were dropped. */
  stdout: string;
  /** Captured stderr (UTF-8): all of it, or its head and tail when bytes were dropped. */
  stderr: string;
  /** Bytes of stdout dropped between head and tail. */
  stdoutDroppedBytes: number;
  /** Bytes of stderr dropped between head and tail. */
  stderrDroppedBytes: number;
  /** Whether `timeoutMs` passed and the process tree was killed. */
  timedOut: boolean;
  /** Whether the kernel's OOM killer fired in the sandbox while the command ran. */
  oomKilled?: boolean;
  /**
   * Set when the command's failure took the sandbox's container down (the OOM killer, with the
   * memory still full, also killed its init): why. Every later call on the sandbox then fails
   * with `UNAVAILABLE` (`details.sandboxLost`); destroy it and create a new one. A container
   * that went down for any other reason (stopped from outside, a Docker daemon restart) is not
   * the command's doing: `exec` then rejects with that `UNAVAILABLE` instead of a result.
   */
  sandboxFailure?: string;
  /** Wall-clock time from start to exit. */
  durationMs: number;
}

/** Options of {@link Sandbox.startBackground}. */
export interface BackgroundExecOptions {
  /** Kill the task's process tree after this long. @default no limit */
  timeoutMs?: number;
  /** Working directory. @default the spec's `workdir` */
  cwd?: string;
  /** Extra environment on top of the spec's. @default {} */
  env?: Record<string, string>;
  /** Output kept per stream (head + tail). @default 1048576 (backend config) */
  maxOutputBytes?: number;
  /** Aborts starting the task (not the task once started: use {@link Sandbox.kill}). */
  signal?: AbortSignal;
  /**
   * Keep the task's stdin open ({@link Sandbox.writeStdin}) and its stdout readable by offset
   * ({@link Sandbox.readOutput}): a long-lived stdio server such as an MCP server. @default false
   */
  interactive?: boolean;
  /**
   * Called once the task is prepared and before it starts, with its id and its handle (see
   * {@link Sandbox.backgroundHandle}; undefined when the backend has none): record them there,
   * and a process that dies right after the start can still find how the task ended. When it
   * rejects, the task is not started and `startBackground` rejects with its error.
   */
  beforeStart?: (taskId: string, handle: string | undefined) => Promise<void>;
}

/** Options of {@link Sandbox.readOutput}. */
export interface ReadOutputOptions {
  /** Byte offset of the task's stdout to read from (the previous read's `nextOffset`). */
  fromOffset: number;
  /** With nothing new yet, wait up to this long for output or the task's end. @default 0 */
  waitMs?: number;
  /** Largest read. @default 262144 */
  maxBytes?: number;
  /** Aborts the wait. */
  signal?: AbortSignal;
}

/** What {@link Sandbox.readOutput} returns. */
export interface TaskOutput {
  /** The task's stdout from `offset` (UTF-8, whole characters). */
  data: string;
  /** Offset of `data` (later than asked when bytes older than the kept window were dropped). */
  offset: number;
  /** Offset to read from next. */
  nextOffset: number;
  /** `running`, or how the task ended. */
  state: BackgroundTaskState;
  /** Exit status once ended. */
  exitCode?: number;
}

/** State of a background task. */
export type BackgroundTaskState = 'running' | 'exited' | 'killed' | 'timed-out' | 'failed';

/** A background task as {@link Sandbox.poll} sees it: state plus output so far. */
export interface BackgroundTaskStatus {
  /** The id {@link Sandbox.startBackground} returned. */
  taskId: string;
  /**
   * `running` until it exits, is killed or times out; `failed` when it could not start, or when
   * its end was lost with its sandbox (a Docker daemon restart stopped the container): its exit
   * code then says nothing of the command, and `error` says why.
   */
  state: BackgroundTaskState;
  /** Exit status once not `running`. */
  exitCode?: number;
  /** Output so far (head and tail when bytes were dropped). */
  stdout: string;
  /** Error output so far (head and tail when bytes were dropped). */
  stderr: string;
  /** Bytes of stdout dropped so far. */
  stdoutDroppedBytes: number;
  /** Bytes of stderr dropped so far. */
  stderrDroppedBytes: number;
  /** Whether the OOM killer fired while it ran (known once it is not `running`). */
  oomKilled?: boolean;
  /** Time since start (until the end once finished). */
  durationMs: number;
  /** Why the task `failed`, when it did (`the command's end was lost: …`). */
  error?: string;
}

/** Options of {@link Sandbox.wait}. */
export interface WaitOptions {
  /** Give up (with `TIMEOUT`; the task keeps running) after this long. @default no limit */
  timeoutMs?: number;
  /** Aborts the wait (not the task). */
  signal?: AbortSignal;
}

/** A file's content, optionally with its mode (permission bits). */
export interface FileEntry {
  /** Content. */
  content: string | Uint8Array;
  /** Permission bits. @default 0o644 */
  mode?: number;
}

/**
 * Files to put into a sandbox: a tar (bytes or a stream of them) or a map from relative path to
 * content (directories are created as needed).
 */
export type FileSource = Uint8Array | Readable | Record<string, string | Uint8Array | FileEntry>;

/** Options of {@link Sandbox.putFiles}. */
export interface PutFilesOptions {
  /**
   * Owner of what is written: `sandbox` (the sandbox user, who can then change it), `root`
   * (readable but not writable by the sandbox user: graders, fixtures) or `preserve` (the
   * owners recorded in the tar; a file map counts as root-owned).
   * @default 'sandbox'
   */
  owner?: 'sandbox' | 'root' | 'preserve';
  /** Aborts the upload. */
  signal?: AbortSignal;
}

/** A saved sandbox state that {@link SandboxBackend.fork} starts new sandboxes from. */
export interface SandboxSnapshot {
  /** Backend that made it. */
  backend: 'docker' | 'process';
  /** Docker image id (or the process backend's snapshot directory). */
  imageId: string;
  /** The reference it was tagged with. */
  ref: string;
  /** Id of the sandbox it was taken from. */
  sourceSandboxId: string;
  /** The source sandbox's spec (forks reuse it, with the snapshot as image). */
  spec: SandboxSpec;
  /** When it was taken (ms since the epoch). */
  createdAt: number;
}

/** Facts about a sandbox, for logs, metrics and the actor's status. */
export interface SandboxMetadata {
  /** Sandbox id (`sbx-…`). */
  id: string;
  /** Backend kind. */
  backend: 'docker' | 'process';
  /** Current status. */
  status: SandboxStatus;
  /** The image the sandbox runs (as requested). */
  image: string;
  /** Resolved image id, when the backend knows it. */
  imageId?: string;
  /** Docker container id (docker backend). */
  containerId?: string;
  /** Workspace volume name (docker) or directory (process backend). */
  workspace: string;
  /** Owner labels. */
  labels: SandboxLabels;
  /** Warm pool that created it, if any. */
  poolId?: string;
  /** Every loosening of the default policy (empty for a default sandbox). */
  policyExceptions: readonly string[];
  /** When creation began (ms since the epoch). */
  createdAt: number;
  /** When the container started. */
  startedAt?: number;
  /** When the sandbox became ready. */
  readyAt?: number;
  /** How often the sandbox had to be hard-reset to kill a runaway process tree. */
  restarts: number;
}

/**
 * A handle on one sandbox. All methods that can block take `{signal}`; none of them copies any
 * host environment into the sandbox.
 */
export interface Sandbox {
  /** Sandbox id (`sbx-…`), also its `troupe.sandbox` label. */
  readonly id: string;
  /** The validated spec it was created from. */
  readonly spec: SandboxSpec;
  /** Current status. */
  readonly status: SandboxStatus;
  /** Facts for logs and status reports. */
  metadata(): SandboxMetadata;
  /**
   * Resolves once the sandbox accepts work (its workspace is writable by the sandbox user and
   * seeded). `create` already waits for this unless told not to.
   */
  ready(options?: { signal?: AbortSignal }): Promise<void>;
  /**
   * Runs a command to completion (or timeout, which kills its whole process tree).
   * @throws TroupeError `UNAVAILABLE` when the sandbox went down under the command, not for
   *   memory (`details.sandboxLost`), or a Docker daemon outage took the command's end
   */
  exec(cmd: Command, options?: ExecOptions): Promise<ExecResult>;
  /** Starts a command in the background; returns its task id. */
  startBackground(cmd: Command, options?: BackgroundExecOptions): Promise<string>;
  /**
   * The backend's own handle of a background task (Docker: its exec id), by which a later
   * process can still learn how it ended after this one is gone; undefined when there is none.
   */
  backgroundHandle?(taskId: string): string | undefined;
  /** State and output so far of a background task. */
  poll(taskId: string): Promise<BackgroundTaskStatus>;
  /**
   * Writes to an interactive task's stdin (`close`: then closes it).
   * @throws TroupeError `INVALID_ARGUMENT` for a task not started `interactive`, `UNAVAILABLE`
   *   once it has ended
   */
  writeStdin(taskId: string, data: string, options?: { close?: boolean }): Promise<void>;
  /** An interactive task's stdout from an offset, waiting a while for new output. */
  readOutput(taskId: string, options: ReadOutputOptions): Promise<TaskOutput>;
  /** Waits for a background task to finish. */
  wait(taskId: string, options?: WaitOptions): Promise<BackgroundTaskStatus>;
  /** Kills a background task's whole process tree; resolves with its final status. */
  kill(taskId: string, options?: { signal?: AbortSignal }): Promise<BackgroundTaskStatus>;
  /** Writes files under `destDir` (inside the workspace or an extra volume). */
  putFiles(destDir: string, files: FileSource, options?: PutFilesOptions): Promise<void>;
  /** A tar stream of `srcPath` (a file or a directory, entries named from its basename). */
  getFiles(srcPath: string, options?: { signal?: AbortSignal }): Promise<Readable>;
  /** Saves the workspace (and, with a writable root, the filesystem) as a forkable snapshot. */
  snapshot(tag: string, options?: { signal?: AbortSignal }): Promise<SandboxSnapshot>;
  /** Kills everything and removes the sandbox and its volumes. Idempotent. */
  destroy(options?: { signal?: AbortSignal }): Promise<void>;
}
