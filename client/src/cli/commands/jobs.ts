import { type JobState } from '@troupe/proto';
import { println } from '../cli-io';
import { type CommandContext } from '../command-context';
import { CliError, ExitCode } from '../exit-codes';
import { formatPercent, textTable } from '../format';

const STATES = ['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'];

/** `troupe jobs [--state S]... [--label k=v]... [--limit N] [--json]`: lists jobs, newest first. */
export async function jobsCommand(
  ctx: CommandContext,
  opts: { state?: string[]; label?: string[]; limit?: string; json?: boolean },
): Promise<number> {
  const states = (opts.state ?? []).map((s) => s.toUpperCase());
  for (const s of states) {
    if (!STATES.includes(s)) {
      throw new CliError(`--state must be one of ${STATES.join(', ')} (got ${s})`, ExitCode.USAGE);
    }
  }
  const labels: Record<string, string> = {};
  for (const l of opts.label ?? []) {
    const i = l.indexOf('=');
    if (i <= 0) throw new CliError(`--label must be key=value (got ${l})`, ExitCode.USAGE);
    labels[l.slice(0, i)] = l.slice(i + 1);
  }
  const limit = opts.limit === undefined ? 50 : Number(opts.limit);
  if (!(Number.isInteger(limit) && limit > 0)) {
    throw new CliError('--limit must be a positive integer', ExitCode.USAGE);
  }
  const client = ctx.client();
  const jobs = [];
  for await (const j of client.listAllJobs(
    { states: states as JobState[], labels, pageSize: Math.min(limit, 1_000) },
    { signal: ctx.signal },
  )) {
    jobs.push(j);
    if (jobs.length >= limit) break;
  }
  if (opts.json) {
    for (const j of jobs) println(ctx.io.stdout, JSON.stringify(j));
    return ExitCode.OK;
  }
  const rows = jobs.map((j) => {
    const p = j.progress;
    return [
      j.jobId,
      j.name,
      j.kind,
      j.state,
      p ? `${p.done}/${p.total}` : '-',
      p && p.done > 0 ? formatPercent(p.passed / p.done) : '-',
      new Date(j.createdUnixMs).toISOString().replace('T', ' ').slice(0, 19),
    ];
  });
  println(
    ctx.io.stdout,
    textTable(['JOB', 'NAME', 'KIND', 'STATE', 'DONE', 'PASS', 'CREATED'], rows),
  );
  return ExitCode.OK;
}
