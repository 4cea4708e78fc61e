import { setTimeout as sleep } from 'node:timers/promises';
import type Docker from 'dockerode';

/**
 * Socket errors of a client that cannot reach the engine at all: its socket is gone (`ENOENT`, a
 * daemon restarting removes it), nobody listens on it (`ECONNREFUSED`), or the daemon went away
 * in the middle of a request (`ECONNRESET`, `EPIPE`, "socket hang up").
 */
const UNREACHABLE_CODES = new Set(['ENOENT', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE']);

/**
 * Whether `err` (or an error it was caused by) says the Docker daemon could not be reached, as
 * opposed to an answer from it (those carry an HTTP status). A daemon restart looks like this for
 * 5–20 s: it is the node's outage, not the failure of what was being asked.
 */
export function isDaemonUnreachable(err: unknown): boolean {
  for (let e = err, depth = 0; typeof e === 'object' && e !== null && depth < 5; depth++) {
    const { code, statusCode, message, cause } = e as {
      code?: unknown;
      statusCode?: unknown;
      message?: unknown;
      cause?: unknown;
    };
    if (typeof statusCode === 'number') return false;
    if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return true;
    if (typeof message === 'string' && /socket hang up/.test(message)) return true;
    e = cause;
  }
  return false;
}

/**
 * Waits until the daemon answers a ping again: polls every 250 ms, doubling up to 2 s. Resolves
 * true when it answers, false when `untilMs` (epoch ms) passes first; rejects when `signal`
 * aborts.
 */
export async function waitForDaemon(
  docker: Docker,
  untilMs: number,
  signal?: AbortSignal,
): Promise<boolean> {
  for (let pauseMs = 250; ; pauseMs = Math.min(pauseMs * 2, 2_000)) {
    signal?.throwIfAborted();
    try {
      // dockerode takes `abortSignal` here, though its types do not say so.
      const ping = docker.ping.bind(docker) as (opts: {
        abortSignal: AbortSignal;
      }) => Promise<unknown>;
      await ping({ abortSignal: AbortSignal.timeout(2_000) });
      return true;
    } catch {
      // Still away.
    }
    const left = untilMs - Date.now();
    if (left <= 0) return false;
    // Unref'd: a destroy's background wait never keeps a process that is exiting.
    await sleep(
      Math.min(pauseMs, left),
      undefined,
      signal ? { signal, ref: false } : { ref: false },
    );
  }
}
