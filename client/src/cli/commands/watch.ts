import { println } from '../cli-io';
import { type CommandContext } from '../command-context';
import { CliError, ExitCode } from '../exit-codes';
import { exitForOutcome, outcomeLine, watchJob } from '../watch-job';

/** `troupe watch <jobId>`: follows a job (progress bar, or JSON lines with --json). */
export async function watchCommand(
  ctx: CommandContext,
  jobId: string,
  opts: { json?: boolean; from?: string },
): Promise<number> {
  const from = opts.from === undefined ? undefined : Number(opts.from);
  if (from !== undefined && !(Number.isInteger(from) && from >= 0)) {
    throw new CliError('--from must be a non-negative integer', ExitCode.USAGE);
  }
  const client = ctx.client();
  await client.getJob(jobId, { signal: ctx.signal }); // NOT_FOUND before any display
  const outcome = await watchJob(client, jobId, ctx.io, {
    json: opts.json === true,
    signal: ctx.signal,
    ...(from !== undefined ? { fromSequence: from } : {}),
  });
  if (!opts.json && outcome.state) println(ctx.io.stderr, outcomeLine(jobId, outcome));
  return exitForOutcome(jobId, outcome, ctx.signal);
}
