import type { ChildProcess } from 'node:child_process';

/** True once the child has exited (or could not be spawned at all). */
export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/**
 * Resolves true when `child` exits within `timeoutMs`, false otherwise. A child that failed to
 * spawn counts as exited.
 */
export function waitForExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (hasExited(child) || child.pid === undefined) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (exited: boolean): void => {
      clearTimeout(timer);
      child.removeListener('exit', onExit);
      resolve(exited);
    };
    const onExit = (): void => done(true);
    const timer = setTimeout(() => done(false), timeoutMs);
    child.once('exit', onExit);
  });
}

const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;

/**
 * Kills `child` with SIGKILL if this process exits while it is still running, so a crashed or
 * interrupted test run does not leave servers behind. Detached daemons are never tracked here.
 */
export function killOnProcessExit(child: ChildProcess): void {
  liveChildren.add(child);
  child.once('exit', () => liveChildren.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const c of liveChildren) {
      try {
        c.kill('SIGKILL');
      } catch {
        // Already gone: nothing to clean up.
      }
    }
  });
}
