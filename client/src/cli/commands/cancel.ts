import { println } from '../cli-io';
import { type CommandContext } from '../command-context';
import { ExitCode } from '../exit-codes';

/** `troupe cancel <jobId> [--reason r]`: requests cancellation. */
export async function cancelCommand(
  ctx: CommandContext,
  jobId: string,
  opts: { reason?: string; json?: boolean },
): Promise<number> {
  const job = await ctx.client().cancelJob(jobId, opts.reason ?? 'user', { signal: ctx.signal });
  if (opts.json) println(ctx.io.stdout, JSON.stringify(job));
  else {
    println(
      ctx.io.stdout,
      job.state === 'RUNNING' || job.state === 'QUEUED'
        ? `job ${jobId}: cancellation requested`
        : `job ${jobId} is already ${job.state}`,
    );
  }
  return ExitCode.OK;
}
