import { type TroupeClient } from '../troupe-client';
import { type CliIo, println } from './cli-io';
import { CliError, ExitCode } from './exit-codes';
import { formatDuration, formatPercent, formatUsd } from './format';
import { ProgressDisplay, progressMode } from './progress-display';
import { type JobProgressView } from './progress-tracker';

/** How a watched job ended. */
export interface WatchOutcome {
  /** The final state (SUCCEEDED, FAILED, CANCELLED); undefined when the watch was interrupted. */
  state?: string;
  reason?: string;
  view: JobProgressView;
}

/**
 * Follows a job's events with a progress display until JOB_FINISHED (or `signal`), reconnecting
 * when the stream breaks.
 */
export async function watchJob(
  client: TroupeClient,
  jobId: string,
  io: CliIo,
  options: { json: boolean; fromSequence?: number; signal: AbortSignal; quiet?: boolean },
): Promise<WatchOutcome> {
  const display = new ProgressDisplay(io, options.quiet ? 'none' : progressMode(io, options.json));
  try {
    for await (const e of client.watch(jobId, {
      signal: options.signal,
      ...(options.fromSequence ? { fromSequence: options.fromSequence } : {}),
      onReconnect: ({ attempt, error }) => {
        if (!options.json)
          println(io.stderr, `troupe: watch reconnecting (${attempt}): ${error.message}`);
      },
    })) {
      display.add(e);
    }
  } finally {
    display.stop();
  }
  const view = display.tracker.view();
  return {
    ...(view.finalState ? { state: view.finalState } : {}),
    ...(view.finalReason ? { reason: view.finalReason } : {}),
    view,
  };
}

/** One line about how a job ended. */
export function outcomeLine(jobId: string, o: WatchOutcome): string {
  const v = o.view;
  return (
    `job ${jobId} ${o.state ?? 'still running'}${o.reason ? `: ${o.reason}` : ''} — ` +
    `${v.passed}/${v.total} passed (${formatPercent(v.passRate)}), ${formatUsd(v.spendUsd)}`
  );
}

/**
 * The exit code for a watched job: 0 when it ran to completion (SUCCEEDED, whatever the pass
 * rate); otherwise a {@link CliError} with a one-line reason.
 */
export function exitForOutcome(jobId: string, o: WatchOutcome, signal: AbortSignal): number {
  if (o.state === 'SUCCEEDED') return ExitCode.OK;
  if (o.state === undefined) {
    if (signal.aborted)
      throw new CliError(`interrupted; job ${jobId} keeps running`, ExitCode.INTERRUPTED);
    throw new CliError(`the watch of job ${jobId} ended without a result`, ExitCode.UNAVAILABLE);
  }
  throw new CliError(
    `job ${jobId} ${o.state}${o.reason ? `: ${o.reason}` : ''}`,
    ExitCode.JOB_NOT_COMPLETED,
  );
}

/** Elapsed time since `startMs` for summaries. */
export function elapsedSince(startMs: number): string {
  return formatDuration(Date.now() - startMs);
}
