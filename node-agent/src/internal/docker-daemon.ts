import type Docker from 'dockerode';
import { retryWithBackoff, throwIfAborted } from '@troupe/proto';
import { dockerStatus } from './docker-errors';

/**
 * Socket errors of a client that cannot reach the engine at all: its socket is gone (`ENOENT`, a
 * daemon restarting removes it), nobody listens on it (`ECONNREFUSED`), or the daemon went away
 * in the middle of a request (`ECONNRESET`, `EPIPE`, "socket hang up").
 */
const UNREACHABLE_CODES = new Set(['ENOENT', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE']);

/**
 * Of those, the ones of a request the daemon never read: no connection was made (`ENOENT`,
 * `ECONNREFUSED`), or the daemon had closed it before the request was written (`EPIPE`: a pooled
 * keep-alive connection to a daemon that went away).
 */
const NOT_CONNECTED_CODES = new Set(['ENOENT', 'ECONNREFUSED', 'EPIPE']);

/**
 * How `err` (or an error it was caused by) failed to reach the daemon: `hang-up` for a connection
 * cut mid-request, the socket error's code otherwise; undefined for an answer from the daemon
 * (those carry an HTTP status) or any other error.
 */
function unreachableBy(err: unknown): string | undefined {
  for (let e = err, depth = 0; typeof e === 'object' && e !== null && depth < 5; depth++) {
    const { code, statusCode, message, cause } = e as {
      code?: unknown;
      statusCode?: unknown;
      message?: unknown;
      cause?: unknown;
    };
    if (typeof statusCode === 'number') return undefined;
    if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return code;
    if (typeof message === 'string' && /socket hang up/.test(message)) return 'hang-up';
    e = cause;
  }
  return undefined;
}

/**
 * Whether `err` (or an error it was caused by) says the Docker daemon could not be reached, as
 * opposed to an answer from it (those carry an HTTP status). A daemon restart looks like this for
 * 5–20 s: it is the node's outage, not the failure of what was being asked.
 */
export function isDaemonUnreachable(err: unknown): boolean {
  return unreachableBy(err) !== undefined;
}

/**
 * Whether `err` is what a Docker daemon restart looks like: unreachable (see
 * {@link isDaemonUnreachable}), or a server error (5xx), which a daemon shutting down answers
 * while it closes its stores (`database not open`). Worth trying again once it answers.
 */
export function isDaemonOutage(err: unknown): boolean {
  if (isDaemonUnreachable(err)) return true;
  for (let e = err, depth = 0; typeof e === 'object' && e !== null && depth < 5; depth++) {
    const status = dockerStatus(e);
    if (status !== undefined) return status >= 500;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Whether `err` says the request never reached the daemon, so that it did nothing and may be
 * made again. A connection cut mid-request (`ECONNRESET`, "socket hang up") may have done its
 * work.
 */
export function neverReachedDaemon(err: unknown): boolean {
  const by = unreachableBy(err);
  return by !== undefined && NOT_CONNECTED_CODES.has(by);
}

/**
 * Waits until the daemon answers a ping again: polls every 250 ms, doubling up to 2 s, the last
 * pause cut to end at `untilMs` for a last ping. Resolves true when it answers, false when
 * `untilMs` (epoch ms) passes first; rejects when `signal` aborts.
 */
export async function waitForDaemon(
  docker: Docker,
  untilMs: number,
  signal?: AbortSignal,
): Promise<boolean> {
  throwIfAborted(signal);
  // dockerode takes `abortSignal` here, though its types do not say so.
  const ping = docker.ping.bind(docker) as (opts: { abortSignal: AbortSignal }) => Promise<unknown>;
  let lastPingFailure: unknown;
  try {
    await retryWithBackoff(
      () =>
        ping({ abortSignal: AbortSignal.timeout(2_000) }).catch((err: unknown) => {
          lastPingFailure = err;
          throw err;
        }),
      {
        isRetryable: () => true,
        untilMs,
        firstPauseMs: 250,
        maxPauseMs: 2_000,
        clipLastPause: true,
        // Unref'd: a destroy's background wait never keeps a process that is exiting.
        unref: true,
        signal,
      },
    );
    return true;
  } catch (err) {
    // Still away at untilMs: the last ping's failure. Anything else is the abort.
    if (err === lastPingFailure) return false;
    throw err;
  }
}
