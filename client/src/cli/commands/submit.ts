import { println } from '../cli-io';
import { type CommandContext } from '../command-context';
import { ExitCode } from '../exit-codes';
import { readSpec, withUploadedTaskFile } from '../read-spec';
import { exitForOutcome, outcomeLine, watchJob } from '../watch-job';

/** Options of `troupe submit`. */
export interface SubmitCommandOptions {
  watch?: boolean;
  json?: boolean;
  idempotencyKey?: string;
  resume?: string;
}

/** `troupe submit <spec> [--watch]`: submits a job; with --watch follows it to the end. */
export async function submitCommand(
  ctx: CommandContext,
  specFile: string,
  opts: SubmitCommandOptions,
): Promise<number> {
  const client = ctx.client();
  const { text, format } = await withUploadedTaskFile(
    readSpec(ctx.io.cwd, specFile),
    client,
    ctx.io,
    ctx.signal,
  );
  const job = await client.submitJob(text, {
    format,
    signal: ctx.signal,
    ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {}),
    ...(opts.resume ? { resumeJobId: opts.resume } : {}),
  });
  if (opts.json && !opts.watch) {
    println(ctx.io.stdout, JSON.stringify(job));
    return ExitCode.OK;
  }
  if (!opts.json) println(ctx.io.stdout, job.jobId);
  if (!opts.watch) return ExitCode.OK;
  const outcome = await watchJob(client, job.jobId, ctx.io, {
    json: opts.json === true,
    signal: ctx.signal,
  });
  if (!opts.json) println(ctx.io.stderr, outcomeLine(job.jobId, outcome));
  return exitForOutcome(job.jobId, outcome, ctx.signal);
}
