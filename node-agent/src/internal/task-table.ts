import { ErrorCode, raceSignal, timeoutError, TroupeError } from '@troupe/proto';
import type { BackgroundTaskState, BackgroundTaskStatus, WaitOptions } from '../sandbox';
import { anySignal, within } from './abort';
import type { OutputCapture } from './output-capture';
import type { StreamLog } from './stream-log';

/** A started process (docker exec or child process) as the task table sees it. */
export interface TaskRun {
  readonly startedAt: number;
  readonly stdout: OutputCapture;
  readonly stderr: OutputCapture;
  /**
   * Resolves (never rejects) when the process ended and its exit code is known, or when its end
   * was `lost` with the engine (why; the exit code is then -1, and the process may still run).
   */
  readonly done: Promise<{ exitCode: number; endedAt: number; lost?: string }>;
  /** Stops reading its output. */
  detach(): void;
  /** An interactive task's open stdin. */
  readonly stdin?: { write(b: Buffer): unknown; end(): void };
  /** An interactive task's stdout by offset (besides {@link stdout}'s head and tail). */
  readonly stdoutLog?: StreamLog;
}

/** What {@link TaskTable.readOutput} returns. */
export interface TaskOutputRead {
  /** The task's stdout from `offset` (UTF-8; whole characters). */
  data: string;
  /** Offset (bytes) of `data`'s first byte: later than asked when older bytes were discarded. */
  offset: number;
  /** Offset to read from next. */
  nextOffset: number;
  /** `running`, or how the task ended. */
  state: BackgroundTaskState;
  /** Exit status once ended. */
  exitCode?: number;
}

/** What a sandbox makes of a task's non-zero exit. */
export interface EndVerdict {
  /** Whether an OOM kill happened since the task started. */
  oomKilled: boolean;
  /**
   * Set when the sandbox went down under the command for a reason that is not the command's
   * (its container stopped with a Docker daemon restart, or was removed): why. The task then
   * ends `failed`, not `exited`: its exit status says nothing of the command.
   */
  lost?: string;
}

/** What a task table needs from its sandbox. */
export interface TaskHooks {
  /** Kills the task's whole process tree. */
  killTree(taskId: string, run: TaskRun, why: string): Promise<void>;
  /** What a non-zero exit (`-1`: the engine could not tell) says (called while it runs). */
  judgeEnd(taskId: string, exitCode: number): Promise<EndVerdict>;
}

interface Task {
  id: string;
  run: TaskRun;
  state: BackgroundTaskState;
  exitCode?: number;
  oomKilled?: boolean;
  /** Why it `failed`. */
  error?: string;
  endedAt?: number;
  timer?: NodeJS.Timeout;
  finished: Promise<void>;
  markFinished(): void;
}

/**
 * How a task killed (by `kill`, or with its sandbox) ended, by its exit code: below 128 the
 * command's own, not a signal's — it exited before the kill landed, its end on its way. Reported
 * killed, a finished command was run again by a task's retry (chaos seed 8005: a fenced task
 * actor killed a command that had exited 0; seed 8500: a destroy did).
 */
function endStateAfterKill(exitCode: number): 'exited' | 'killed' {
  return exitCode >= 0 && exitCode < 128 ? 'exited' : 'killed';
}

/** Background tasks of one sandbox: their state, output, deadlines, waits and kills. */
export class TaskTable {
  private readonly tasks = new Map<string, Task>();

  constructor(
    private readonly sandboxId: string,
    private readonly hooks: TaskHooks,
  ) {}

  /** Registers a started task; with `timeoutMs` its tree is killed when the time is up. */
  add(taskId: string, run: TaskRun, timeoutMs?: number): void {
    let markFinished: () => void = () => undefined;
    const finished = new Promise<void>((resolve) => (markFinished = resolve));
    const task: Task = { id: taskId, run, state: 'running', finished, markFinished };
    this.tasks.set(taskId, task);
    if (timeoutMs !== undefined) {
      task.timer = setTimeout(() => {
        if (task.endedAt !== undefined) return;
        task.state = 'timed-out';
        this.hooks.killTree(taskId, run, 'timeout').catch(() => undefined);
      }, timeoutMs);
    }
    void run.done.then(async (end) => {
      run.stdoutLog?.close();
      if (task.timer) clearTimeout(task.timer);
      if (task.state === 'killed') return; // kill() finishes it
      const verdict: EndVerdict =
        end.exitCode !== 0 && task.state === 'running'
          ? await this.hooks.judgeEnd(taskId, end.exitCode)
          : { oomKilled: false };
      const lost = verdict.oomKilled ? undefined : (verdict.lost ?? end.lost);
      if (lost !== undefined && task.state === 'running') {
        // Reported `exited`, a command a daemon restart killed failed its task, where the job
        // should retry it (chaos `docker-restart`, seed 30000). One whose output stream alone
        // was cut may still run: it goes first, so that a retry does not run beside it.
        if (verdict.lost === undefined) {
          await this.hooks.killTree(taskId, run, 'lost').catch(() => undefined);
        }
        task.error = `the command's end was lost: ${lost}`;
        this.finish(task, 'failed', end.exitCode, false, end.endedAt);
        return;
      }
      this.finish(
        task,
        task.state === 'timed-out' ? 'timed-out' : 'exited',
        end.exitCode,
        verdict.oomKilled,
        end.endedAt,
      );
    });
  }

  private finish(
    task: Task,
    state: BackgroundTaskState,
    exitCode: number,
    oomKilled = false,
    endedAt = performance.now(),
  ): void {
    if (task.endedAt !== undefined) return;
    task.state = state;
    task.exitCode = exitCode;
    task.oomKilled = oomKilled;
    task.endedAt = endedAt;
    if (task.timer) clearTimeout(task.timer);
    task.markFinished();
  }

  private get(taskId: string): Task {
    const task = this.tasks.get(taskId);
    if (task === undefined) {
      throw new TroupeError(
        ErrorCode.NOT_FOUND,
        `no background task ${taskId} in sandbox ${this.sandboxId}`,
        { details: { taskId } },
      );
    }
    return task;
  }

  /** State and output so far. */
  status(taskId: string): BackgroundTaskStatus {
    const task = this.get(taskId);
    const { run } = task;
    const s: BackgroundTaskStatus = {
      taskId,
      state: task.endedAt === undefined ? 'running' : task.state,
      stdout: run.stdout.text(),
      stderr: run.stderr.text(),
      stdoutDroppedBytes: run.stdout.droppedBytes,
      stderrDroppedBytes: run.stderr.droppedBytes,
      durationMs: Math.round((task.endedAt ?? performance.now()) - run.startedAt),
    };
    if (task.endedAt !== undefined) {
      if (task.exitCode !== undefined) s.exitCode = task.exitCode;
      if (task.oomKilled !== undefined) s.oomKilled = task.oomKilled;
      if (task.state === 'failed' && task.error !== undefined) s.error = task.error;
    }
    return s;
  }

  /**
   * Writes `data` to an interactive task's stdin (then closes it with `close`).
   * @throws TroupeError `INVALID_ARGUMENT` when the task was not started `interactive`,
   *   `NOT_FOUND` for an unknown task, `UNAVAILABLE` when it has ended
   */
  writeStdin(taskId: string, data: string, close = false): void {
    const task = this.get(taskId);
    const stdin = task.run.stdin;
    if (!stdin) {
      throw new TroupeError(
        ErrorCode.INVALID_ARGUMENT,
        `\`taskId\`: task ${taskId} was not started interactive (no open stdin)`,
      );
    }
    if (task.endedAt !== undefined) {
      throw new TroupeError(ErrorCode.UNAVAILABLE, `task ${taskId} has ended (${task.state})`, {
        retryable: false,
        details: { taskId, exitCode: task.exitCode },
      });
    }
    if (data.length > 0) stdin.write(Buffer.from(data));
    if (close) stdin.end();
  }

  /**
   * An interactive task's stdout from byte `fromOffset`; when there is none yet, waits up to
   * `waitMs` for some (or for the task's end).
   * @throws TroupeError `INVALID_ARGUMENT` when the task was not started `interactive`
   */
  async readOutput(
    taskId: string,
    options: { fromOffset: number; waitMs: number; maxBytes: number; signal?: AbortSignal },
  ): Promise<TaskOutputRead> {
    const task = this.get(taskId);
    const log = task.run.stdoutLog;
    if (!log) {
      throw new TroupeError(
        ErrorCode.INVALID_ARGUMENT,
        `\`taskId\`: task ${taskId} was not started interactive (use poll)`,
      );
    }
    const r = await log.read(options.fromOffset, options);
    const ended = task.endedAt !== undefined;
    return {
      data: r.data.toString('utf8'),
      offset: r.offset,
      nextOffset: r.nextOffset,
      state: ended ? task.state : 'running',
      ...(ended && task.exitCode !== undefined ? { exitCode: task.exitCode } : {}),
    };
  }

  /** Waits for the task to finish; `TIMEOUT` (task left running) when `timeoutMs` passes. */
  async wait(taskId: string, options: WaitOptions = {}): Promise<BackgroundTaskStatus> {
    const task = this.get(taskId);
    if (task.endedAt !== undefined) return this.status(taskId);
    const { timeoutMs, signal } = options;
    const onTimeout =
      timeoutMs === undefined ? undefined : timeoutError(`wait for task ${taskId}`, timeoutMs);
    const timeout = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
    try {
      await raceSignal(task.finished, anySignal(signal, timeout));
    } catch (err) {
      if (timeout?.aborted && !signal?.aborted && onTimeout) throw onTimeout;
      throw err;
    }
    return this.status(taskId);
  }

  /** Kills the task's process tree and resolves with its final status. */
  async kill(
    taskId: string,
    options: { signal?: AbortSignal } = {},
  ): Promise<BackgroundTaskStatus> {
    const task = this.get(taskId);
    if (task.endedAt === undefined) {
      task.state = 'killed';
      await raceSignal(this.hooks.killTree(taskId, task.run, 'kill'), options.signal);
      const end = await task.run.done;
      this.finish(task, endStateAfterKill(end.exitCode), end.exitCode, false, end.endedAt);
    }
    return this.status(taskId);
  }

  /** The tasks still running. */
  private running(): Task[] {
    return [...this.tasks.values()].filter((t) => t.endedAt === undefined);
  }

  /** True while any task runs. */
  get anyRunning(): boolean {
    return this.running().length > 0;
  }

  /**
   * Ends every running task once its processes were killed (the sandbox going): with its real
   * end when that shows within `settleMs` — an exit code below 128 is the command's own, it
   * exited just before the kill — else killed (137). Marked killed at once, a command that had
   * exited 0 while its end was on its way was run again by a task's retry (chaos seed 8500: a
   * new activation on the same host destroyed a fenced one's container).
   */
  async endAll(settleMs: number): Promise<void> {
    const running = this.running();
    for (const task of running) task.state = 'killed'; // the run's own end handler stands aside
    const deadline = Date.now() + settleMs;
    await Promise.all(
      running.map(async (task) => {
        const end = await within(task.run.done, Math.max(0, deadline - Date.now()));
        if (end === undefined) {
          task.run.detach();
          this.finish(task, 'killed', 137);
        } else {
          this.finish(task, endStateAfterKill(end.exitCode), end.exitCode, false, end.endedAt);
        }
      }),
    );
  }

  /** Kills every running task as {@link kill} does (its real end kept when it had exited). */
  async killAll(): Promise<void> {
    await Promise.all(this.running().map((t) => this.kill(t.id).catch(() => undefined)));
  }

  /** Marks every running task killed (its processes are already gone, or going). */
  abandonAll(detach: boolean): void {
    for (const task of this.tasks.values()) {
      if (task.endedAt !== undefined) continue;
      if (detach) task.run.detach();
      this.finish(task, 'killed', 137);
    }
  }
}
