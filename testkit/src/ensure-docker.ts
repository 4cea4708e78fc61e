import { spawn } from 'node:child_process';
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { open, readFile, stat, unlink } from 'node:fs/promises';
import http from 'node:http';
import Docker from 'dockerode';
import { abortReason, delay, raceSignal, throwIfAborted } from './internal/abort';
import { hasExited } from './internal/child-exit';
import { findBinary } from './internal/find-binary';
import { noopLogger, type TestkitLogger } from './logger';
import { MissingBinaryError } from './missing-binary-error';

const DEFAULT_SOCKET_PATH = '/var/run/docker.sock';
const DOCKERD_PID_FILE = '/var/run/docker.pid';
const PING_TIMEOUT_MS = 2000;
const POLL_INTERVAL_MS = 100;

/** Options for {@link ensureDocker}. */
export interface EnsureDockerOptions {
  /** Unix socket of the Docker engine. @default '/var/run/docker.sock' */
  socketPath?: string;
  /** Deadline for the engine to answer, including starting `dockerd`. @default 60000 */
  timeoutMs?: number;
  /** Start `dockerd` when no engine answers (only possible as root). @default true */
  start?: boolean;
  /** The daemon binary: a name searched on PATH (then sbin), or a path. @default 'dockerd' */
  dockerdBinary?: string;
  /**
   * Extra `dockerd` arguments. A non-default `socketPath` adds `--host unix://<socketPath>`.
   * @default []
   */
  dockerdArgs?: string[];
  /** File that receives the daemon's stdout and stderr (appended). @default '/var/log/troupe-dockerd.log' */
  logFile?: string;
  /**
   * Lock file that stops two processes (jest workers) from starting two daemons.
   * @default '/tmp/troupe-dockerd.lock'
   */
  lockFile?: string;
  /** Aborts this caller's wait; a shared start attempt keeps going for other callers. */
  signal?: AbortSignal;
  /** Receives lifecycle events (daemon started, stale lock removed). @default no logging */
  logger?: TestkitLogger;
}

interface DockerConfig {
  socketPath: string;
  timeoutMs: number;
  start: boolean;
  dockerdBinary: string;
  dockerdArgs: string[];
  logFile: string;
  lockFile: string;
  logger: TestkitLogger;
}

/** One start attempt per socket per process, shared by concurrent callers. */
const startAttempts = new Map<string, Promise<void>>();

/**
 * Returns a dockerode client for a Docker engine that answers `/_ping`. When none answers and
 * the process runs as root with `dockerd` installed, starts `dockerd` as a detached machine
 * service (it outlives the test process; tests must not stop it) and waits for it. Concurrent
 * callers in one process share one start attempt; a lock file keeps other processes from
 * starting a second daemon.
 *
 * @throws {@link MissingBinaryError} when no engine answers and `dockerd` cannot be started (not
 * installed, or not root); the message names `apt-get install -y docker.io` and `scripts/setup`.
 * @throws Error with the tail of the daemon's log when it does not come up before the deadline.
 */
export async function ensureDocker(options: EnsureDockerOptions = {}): Promise<Docker> {
  const config: DockerConfig = {
    socketPath: options.socketPath ?? DEFAULT_SOCKET_PATH,
    timeoutMs: options.timeoutMs ?? 60_000,
    start: options.start ?? true,
    dockerdBinary: options.dockerdBinary ?? 'dockerd',
    dockerdArgs: options.dockerdArgs ?? [],
    logFile: options.logFile ?? '/var/log/troupe-dockerd.log',
    lockFile: options.lockFile ?? '/tmp/troupe-dockerd.lock',
    logger: options.logger ?? noopLogger,
  };
  const { signal } = options;
  throwIfAborted(signal);
  const docker = new Docker({ socketPath: config.socketPath });
  if (await pingSocket(config.socketPath, signal)) return docker;

  if (!config.start) {
    throw new Error(
      `no Docker engine answers on ${config.socketPath} and ensureDocker was told not to start one`,
    );
  }
  const dockerdPath = findBinary(config.dockerdBinary);
  if (dockerdPath === undefined) {
    throw new MissingBinaryError(
      config.dockerdBinary,
      'apt-get install -y docker.io',
      `no Docker engine answers on ${config.socketPath} and \`${config.dockerdBinary}\` is not installed`,
    );
  }
  if (process.getuid?.() !== 0) {
    throw new MissingBinaryError(
      config.dockerdBinary,
      'apt-get install -y docker.io',
      `no Docker engine answers on ${config.socketPath} and only root can start dockerd ` +
        `(uid ${process.getuid?.()}); start the engine as root`,
    );
  }

  let attempt = startAttempts.get(config.socketPath);
  if (attempt === undefined) {
    attempt = startEngine(config, dockerdPath).finally(() =>
      startAttempts.delete(config.socketPath),
    );
    startAttempts.set(config.socketPath, attempt);
  }
  await (signal ? raceSignal(attempt, signal) : attempt);
  return docker;
}

/**
 * True when a Docker engine is likely usable without waiting: its socket exists, or
 * {@link ensureDocker} could start one (root, with `dockerd` installed). Synchronous, so it can
 * decide `it` vs `it.skip` while a test file loads. Never starts anything.
 *
 * @param options.socketPath - Engine socket. @default '/var/run/docker.sock'
 * @param options.dockerdBinary - Daemon binary. @default 'dockerd'
 */
export function dockerAvailable(
  options: { socketPath?: string; dockerdBinary?: string } = {},
): boolean {
  if (existsSync(options.socketPath ?? DEFAULT_SOCKET_PATH)) return true;
  return process.getuid?.() === 0 && findBinary(options.dockerdBinary ?? 'dockerd') !== undefined;
}

/** GET /_ping over the unix socket; false on any failure. */
function pingSocket(socketPath: string, signal?: AbortSignal): Promise<boolean> {
  if (!existsSync(socketPath)) return Promise.resolve(false);
  const probe = signal
    ? AbortSignal.any([signal, AbortSignal.timeout(PING_TIMEOUT_MS)])
    : AbortSignal.timeout(PING_TIMEOUT_MS);
  return new Promise((resolve) => {
    const req = http.get({ socketPath, path: '/_ping', signal: probe }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode === 200));
      res.once('error', () => resolve(false));
    });
    req.once('error', () => resolve(false));
  });
}

async function startEngine(config: DockerConfig, dockerdPath: string): Promise<void> {
  const deadline = AbortSignal.timeout(config.timeoutMs);
  const { logger, lockFile } = config;
  for (;;) {
    if (await pingSocket(config.socketPath, deadline)) return;
    if (deadline.aborted) break;

    if (!daemonAlreadyRunning(config.socketPath)) {
      const lock = await tryLock(lockFile);
      if (lock) {
        try {
          // Another process may have finished starting the engine while we took the lock.
          if (await pingSocket(config.socketPath, deadline)) return;
          const spawned = spawnDaemon(config, dockerdPath);
          await waitForEngine(config, deadline, spawned);
          return;
        } finally {
          await unlink(lockFile).catch(() => undefined);
        }
      }
      await removeLockIfStale(lockFile, config.timeoutMs, logger);
    }
    try {
      await delay(POLL_INTERVAL_MS, deadline);
    } catch {
      break;
    }
  }
  throw new Error(
    `Docker engine did not answer on ${config.socketPath} within ${config.timeoutMs} ms ` +
      `(another process or dockerd instance was starting it)${logTail(config.logFile)}`,
  );
}

function spawnDaemon(config: DockerConfig, dockerdPath: string): ReturnType<typeof spawn> {
  const args = [...config.dockerdArgs];
  if (config.socketPath !== DEFAULT_SOCKET_PATH) args.push('--host', `unix://${config.socketPath}`);
  const logFd = openSync(config.logFile, 'a');
  try {
    // A machine service: detached into its own process group, not killed with the test run.
    const child = spawn(dockerdPath, args, { detached: true, stdio: ['ignore', logFd, logFd] });
    child.once('error', () => undefined);
    child.unref();
    config.logger.info(
      { pid: child.pid, binary: dockerdPath, args, logFile: config.logFile },
      'started dockerd',
    );
    return child;
  } finally {
    closeSync(logFd);
  }
}

async function waitForEngine(
  config: DockerConfig,
  deadline: AbortSignal,
  child: ReturnType<typeof spawn>,
): Promise<void> {
  for (;;) {
    if (await pingSocket(config.socketPath, deadline)) return;
    if (hasExited(child) || child.pid === undefined) {
      throw new Error(
        `dockerd exited during startup (exit code ${child.exitCode}, signal ${child.signalCode})` +
          logTail(config.logFile),
      );
    }
    try {
      await delay(POLL_INTERVAL_MS, deadline);
    } catch {
      throw new Error(
        `dockerd (pid ${child.pid}) did not answer on ${config.socketPath} within ` +
          `${config.timeoutMs} ms${logTail(config.logFile)}`,
        { cause: abortReason(deadline) },
      );
    }
  }
}

/**
 * True when /var/run/docker.pid names a live process: the default engine is up or on its way
 * (started by `scripts/setup` or by hand), so starting a second one would only fail.
 */
function daemonAlreadyRunning(socketPath: string): boolean {
  if (socketPath !== DEFAULT_SOCKET_PATH) return false;
  try {
    const pid = Number.parseInt(readFileSync(DOCKERD_PID_FILE, 'utf8').trim(), 10);
    return Number.isInteger(pid) && pid > 0 && isAlive(pid);
  } catch {
    return false;
  }
}

async function tryLock(lockFile: string): Promise<boolean> {
  try {
    const handle = await open(lockFile, 'wx');
    try {
      await handle.writeFile(`${process.pid}\n`);
    } finally {
      await handle.close();
    }
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/** A lock whose owner died (or that outlived a whole start deadline) is removed. */
async function removeLockIfStale(
  lockFile: string,
  timeoutMs: number,
  logger: TestkitLogger,
): Promise<void> {
  try {
    const [content, info] = await Promise.all([readFile(lockFile, 'utf8'), stat(lockFile)]);
    const owner = Number.parseInt(content.trim(), 10);
    const ownerDead = Number.isInteger(owner) && owner > 0 && !isAlive(owner);
    // An empty lock is one being written right now, unless it has been empty for a while.
    const tooOld = Date.now() - info.mtimeMs > timeoutMs;
    if (ownerDead || tooOld) {
      logger.warn({ lockFile, owner, ownerDead, tooOld }, 'removing stale dockerd lock');
      await unlink(lockFile);
    }
  } catch {
    // Lock vanished between the calls: the next loop iteration tries to take it.
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function logTail(logFile: string, maxBytes = 4000): string {
  let fd: number | undefined;
  try {
    fd = openSync(logFile, 'r');
    const size = fstatSync(fd).size;
    const length = Math.min(size, maxBytes);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    return `\n--- ${logFile} (tail) ---\n${buffer.toString('utf8')}`;
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
