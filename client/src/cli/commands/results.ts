import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { println } from '../cli-io';
import { type CommandContext } from '../command-context';
import { CliError, ExitCode } from '../exit-codes';
import { renderHtmlReport } from '../html-report';
import { downloadReportArtifacts } from '../report-artifacts';
import { resultsJson, resultsTable } from '../results-format';

/**
 * `troupe results <jobId> [--format table|json|html] [--output file]`. An HTML report written to a
 * file gets the tasks' artifacts copied to `<file>.files/` and linked.
 */
export async function resultsCommand(
  ctx: CommandContext,
  jobId: string,
  opts: { format?: string; output?: string },
): Promise<number> {
  const format = opts.format ?? 'table';
  if (format !== 'table' && format !== 'json' && format !== 'html') {
    throw new CliError(`--format must be table, json or html (got ${format})`, ExitCode.USAGE);
  }
  const client = ctx.client();
  const [job, results] = await Promise.all([
    client.getJob(jobId, { signal: ctx.signal }),
    client.getResults(jobId, { signal: ctx.signal }),
  ]);
  // An HTML report written to a file links copies of the tasks' artifacts (trajectories, grader
  // logs, workspaces) kept beside it in `<file>.files/`.
  const artifactHref =
    format === 'html' && opts.output
      ? await downloadReportArtifacts(
          client,
          results,
          path.dirname(path.resolve(ctx.io.cwd, opts.output)),
          `${path.resolve(ctx.io.cwd, opts.output)}.files`,
          ctx.signal,
        )
      : undefined;
  const text =
    format === 'json'
      ? JSON.stringify(resultsJson(job, results), null, 2)
      : format === 'html'
        ? renderHtmlReport(job, results, artifactHref ? { artifactHref } : {})
        : resultsTable(job, results);
  if (opts.output) {
    const file = path.resolve(ctx.io.cwd, opts.output);
    try {
      writeFileSync(file, text.endsWith('\n') ? text : `${text}\n`);
    } catch (err) {
      throw new CliError(`cannot write ${opts.output}: ${(err as Error).message}`, ExitCode.USAGE);
    }
    println(ctx.io.stderr, `wrote ${file}`);
  } else {
    ctx.io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }
  return ExitCode.OK;
}
