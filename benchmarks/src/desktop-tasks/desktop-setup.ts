import { type UntypedActorRef } from '@troupe/actors';
import { TroupeError } from '@troupe/proto';
import type { SetupStep } from './desktop-task-spec';

/**
 * Runs a desktop task's setup steps on environment `env`, in order: files written under the home
 * directory, commands that must exit 0, applications launched and waited for by window title.
 * Every failure throws (an infrastructure error of the attempt, which the job may retry).
 */
export async function runSetupSteps(
  env: UntypedActorRef,
  steps: readonly SetupStep[],
  signal: AbortSignal | undefined,
): Promise<void> {
  const call = (msg: string, payload: unknown, timeoutMs = 60_000): Promise<unknown> =>
    env.ask(msg, payload, { timeoutMs, ...(signal ? { signal } : {}) });
  for (const [i, step] of steps.entries()) {
    if ('files' in step) {
      for (const [path, text] of Object.entries(step.files)) {
        await call('putFile', { path, file: text });
      }
    } else if ('command' in step) {
      const r = (await call('runCommand', { cmd: step.command, timeoutMs: 60_000 }, 90_000)) as {
        exitCode: number;
        stderr: string;
      };
      if (r.exitCode !== 0) {
        throw new TroupeError(
          'INTERNAL',
          `setup[${i}] exited ${r.exitCode}: ${r.stderr.slice(0, 500)}`,
        );
      }
    } else {
      await call(
        'launch',
        {
          cmd: step.launch,
          // Applications start slowly on a loaded host; a timeout here is an infrastructure
          // failure (the attempt is retried).
          timeoutMs: 120_000,
          ...(step.waitTitle ? { waitTitle: step.waitTitle } : {}),
        },
        150_000,
      );
    }
  }
}
