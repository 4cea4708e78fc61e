import { println } from '../cli-io';
import { type CommandContext } from '../command-context';
import { ExitCode } from '../exit-codes';

/** `troupe delete <jobId...> [--json]`: deletes finished jobs and what they stored. */
export async function deleteCommand(
  ctx: CommandContext,
  jobIds: string[],
  opts: { json?: boolean },
): Promise<number> {
  for (const jobId of jobIds) {
    const deleted = await ctx.client().deleteJob(jobId, { signal: ctx.signal });
    if (opts.json) println(ctx.io.stdout, JSON.stringify({ jobId, ...deleted }));
    else {
      println(
        ctx.io.stdout,
        `job ${jobId} deleted (${deleted.deletedKeys} task records, ${deleted.deletedEvents} events, ${deleted.deletedArtifacts} artifacts)`,
      );
    }
  }
  return ExitCode.OK;
}
