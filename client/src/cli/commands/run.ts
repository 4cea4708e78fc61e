import { rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { TroupeClient } from '../../troupe-client';
import { println } from '../cli-io';
import { type CommandContext } from '../command-context';
import { dataDirOf } from '../dev-state';
import { EmbeddedCluster } from '../embedded-cluster';
import { imageBuildProgressLine } from '../image-build-progress';
import { CliError, ExitCode } from '../exit-codes';
import { renderHtmlReport } from '../html-report';
import { downloadReportArtifacts } from '../report-artifacts';
import { resultsJson, resultsTable } from '../results-format';
import { readSpec, withUploadedTaskFile } from '../read-spec';
import { exitForOutcome, outcomeLine, watchJob } from '../watch-job';
import { intOption } from './int-option';
import { modelsOption } from './models-option';

/** Options of `troupe run`. */
export interface RunCommandOptions {
  json?: boolean;
  sandboxSlots?: string;
  processBackend?: boolean;
  /** Models file (`--models`, or `TROUPE_MODELS_FILE`). */
  models?: string;
  /** Skills directory pushed to the skill store (`--skills`, or `TROUPE_SKILLS_DIR`). */
  skills?: string;
  keepData?: boolean;
  logLevel?: string;
  /** Also write the HTML report (artifacts copied to `<file>.files/`) before stopping. */
  html?: string;
}

/**
 * `troupe run <spec>`: one shot — starts an embedded cluster, submits the spec, shows progress,
 * prints the results (a table, or JSON with --json) and stops. Exits 0 when the job ran to
 * completion whatever its pass rate; otherwise non-zero with a one-line reason.
 */
export async function runCommand(
  ctx: CommandContext,
  specFile: string,
  opts: RunCommandOptions,
): Promise<number> {
  const { text, format } = readSpec(ctx.io.cwd, specFile);
  const sandboxSlots = intOption('--sandbox-slots', opts.sandboxSlots);
  const base = dataDirOf(ctx.io.cwd, ctx.global.dataDir ?? ctx.io.env['TROUPE_DATA_DIR']);
  const dataDir = path.join(base, `run-${process.pid}-${Date.now().toString(36)}`);
  println(ctx.io.stderr, 'starting an embedded cluster …');
  const cluster = await EmbeddedCluster.start({
    dataDir,
    // A cluster of its own: node agents reap the sandboxes of their cluster and host that they do
    // not know, so two `troupe run`s on one Docker daemon sharing a name would destroy each
    // other's sandboxes.
    cluster: `run-${process.pid.toString(36)}-${Date.now().toString(36)}`,
    grpcPort: 0,
    advertise: false,
    ...(sandboxSlots !== undefined ? { sandboxSlots } : {}),
    ...(opts.processBackend ? { processBackend: true } : {}),
    ...modelsOption(ctx, opts.models, opts.skills),
    ...(opts.logLevel ? { logLevel: opts.logLevel } : {}),
    // A fresh machine builds the job's images on first use, for minutes: say so.
    onImageBuildProgress: (line) => {
      const shown = imageBuildProgressLine(line);
      if (shown !== undefined) println(ctx.io.stderr, shown);
    },
  });
  const client = new TroupeClient({ address: cluster.address, token: cluster.token });
  try {
    const spec = await withUploadedTaskFile({ text, format }, client, ctx.io, ctx.signal);
    const job = await client.submitJob(spec.text, { format: spec.format, signal: ctx.signal });
    println(ctx.io.stderr, `job ${job.jobId} (${job.name}, ${job.kind}) submitted`);
    const outcome = await watchJob(client, job.jobId, ctx.io, { json: false, signal: ctx.signal });
    if (!outcome.state) {
      await client.cancelJob(job.jobId, 'interrupted', { timeoutMs: 5_000 }).catch(() => undefined);
      throw new CliError(`interrupted; job ${job.jobId} cancelled`, ExitCode.INTERRUPTED);
    }
    println(ctx.io.stderr, outcomeLine(job.jobId, outcome));
    const [full, results] = await Promise.all([
      client.getJob(job.jobId),
      client.getResults(job.jobId),
    ]);
    // The run's data directory goes when the cluster stops: the tasks' artifacts (an evolve
    // task's selected program, reports, logs) are copied out first, beside the HTML report or
    // into <data-dir>/results/<jobId>/, and the JSON names each copy.
    const file = opts.html ? path.resolve(ctx.io.cwd, opts.html) : undefined;
    const filesDir = file ? `${file}.files` : path.join(base, 'results', job.jobId);
    const artifactHref = await downloadReportArtifacts(
      client,
      results,
      ctx.io.cwd,
      filesDir,
      ctx.signal,
    );
    const localFile = (artifact: string): string | undefined => {
      const href = artifactHref(artifact);
      return href === undefined ? undefined : path.resolve(ctx.io.cwd, href);
    };
    if (file) {
      const dir = path.dirname(file);
      const href = (artifact: string): string | undefined => {
        const copy = localFile(artifact);
        return copy === undefined ? undefined : path.relative(dir, copy).split(path.sep).join('/');
      };
      writeFileSync(file, renderHtmlReport(full, results, { artifactHref: href }));
      println(ctx.io.stderr, `wrote ${file}`);
    }
    if (results.tasks.some((t) => t.artifacts.some((a) => localFile(a) !== undefined))) {
      println(ctx.io.stderr, `artifacts kept in ${filesDir}`);
    }
    ctx.io.stdout.write(
      opts.json
        ? `${JSON.stringify(resultsJson(full, results, { localFile }), null, 2)}\n`
        : `${resultsTable(full, results)}\n`,
    );
    return exitForOutcome(job.jobId, outcome, ctx.signal);
  } finally {
    client.close();
    println(ctx.io.stderr, 'stopping the embedded cluster …');
    await cluster.stop();
    if (!opts.keepData) rmSync(dataDir, { recursive: true, force: true });
  }
}
