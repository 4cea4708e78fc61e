import { statSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import {
  checkSuite,
  expandCompetitionTasks,
  dryRunTask,
  type EvolveTask,
  EvolveTaskListSchema,
  type SuiteCheck,
} from '@troupe/benchmarks';
import { parseJobSpec } from '@troupe/coordinator';
import { invalidArgument, parseUntrustedText, parseWith } from '@troupe/proto';
import { TroupeClient } from '../../troupe-client';
import { println } from '../cli-io';
import { type CommandContext } from '../command-context';
import { dataDirOf } from '../dev-state';
import { EmbeddedCluster } from '../embedded-cluster';
import { CliError, ExitCode } from '../exit-codes';
import { imageBuildProgressLine } from '../image-build-progress';
import { readSpec } from '../read-spec';
import { watchJob } from '../watch-job';

/** Options of `troupe validate`. */
export interface ValidateCommandOptions {
  /** Only the static checks (layout, size, markers): no seed run, no Docker. */
  run?: boolean;
  logLevel?: string;
}

/** The evolve tasks `target` names: one suite folder, or every task of an evolve job file. */
function tasksOf(ctx: CommandContext, target: string): { tasks: EvolveTask[]; job?: unknown } {
  const full = path.resolve(ctx.io.cwd, target);
  let isDir = false;
  try {
    isDir = statSync(full).isDirectory();
  } catch {
    throw new CliError(`cannot read ${target}: no such file or folder`, ExitCode.USAGE);
  }
  if (isDir || path.basename(full) === 'task.yaml') {
    const suite = isDir ? full : path.dirname(full);
    return { tasks: [{ id: 'seed-check', suite }] };
  }
  const { text, format } = readSpec(ctx.io.cwd, target);
  const raw = parseUntrustedText(text, {
    field: 'spec',
    format: format === 'json' ? 'json' : 'yaml',
  });
  const spec = parseJobSpec(raw);
  if (spec.kind !== 'evolve') {
    throw invalidArgument('spec.kind', 'troupe validate checks evolve jobs and suites', spec.kind);
  }
  const tasks = parseWith(EvolveTaskListSchema, spec.tasks, { prefix: 'spec.tasks' }).map((t) => ({
    ...t,
    suite: path.resolve(ctx.io.cwd, t.suite),
  }));
  return { tasks, job: spec };
}

/**
 * `troupe validate <job or suite>`: a dry run of evolve suites. Checks each suite's layout
 * (task.yaml, seeds, phase files), its size and its seeds' `troupe:param` markers, then (unless
 * `--no-run`) runs every seed program once under the grader in an embedded cluster's sandbox and
 * shows its validation score, or why it did not score (the grader's stderr included). Exits 0
 * when everything passed, 3 when a suite is wrong.
 */
export async function validateCommand(
  ctx: CommandContext,
  target: string,
  opts: ValidateCommandOptions,
): Promise<number> {
  // A folder of MLE-bench competitions is one task per competition, as the driver runs it.
  const tasks = await expandCompetitionTasks(tasksOf(ctx, target).tasks, ctx.io.cwd);
  const checks = new Map<string, SuiteCheck>();
  for (const [i, task] of tasks.entries()) {
    const check = await checkSuite(task.suite, `spec.tasks[${i}].suite`, ctx.io.cwd);
    checks.set(task.id, check);
    println(
      ctx.io.stdout,
      `ok  ${task.id}: suite ${check.name} (${check.suiteDir}): task.yaml, ${check.files} phase files (${check.bytes} bytes)`,
    );
    for (const seed of check.seeds) {
      println(
        ctx.io.stdout,
        `ok  ${task.id}: seed ${seed.file}: ${seed.params.length} marked parameters` +
          (seed.params.length ? ` (${seed.params.join(', ')})` : ''),
      );
    }
  }
  if (opts.run === false) return ExitCode.OK;

  const base = dataDirOf(ctx.io.cwd, ctx.global.dataDir ?? ctx.io.env['TROUPE_DATA_DIR']);
  const dataDir = path.join(base, `validate-${process.pid}-${Date.now().toString(36)}`);
  println(ctx.io.stderr, 'starting an embedded cluster to run the seeds once …');
  const cluster = await EmbeddedCluster.start({
    dataDir,
    cluster: `validate-${process.pid.toString(36)}-${Date.now().toString(36)}`,
    grpcPort: 0,
    advertise: false,
    ...(opts.logLevel ? { logLevel: opts.logLevel } : {}),
    onImageBuildProgress: (line) => {
      const shown = imageBuildProgressLine(line);
      if (shown !== undefined) println(ctx.io.stderr, shown);
    },
  });
  const client = new TroupeClient({ address: cluster.address, token: cluster.token });
  try {
    const spec = {
      kind: 'evolve',
      name: 'troupe-validate',
      concurrency: 1,
      retries: { max: 0 },
      taskTimeoutMs: 1_800_000,
      config: { evaluatorSlots: 1, saveJournal: false },
      tasks: tasks.map((t) => dryRunTask(t, checks.get(t.id)?.seeds.length ?? 1)),
    };
    const job = await client.submitJob(JSON.stringify(spec), {
      format: 'json',
      signal: ctx.signal,
    });
    const outcome = await watchJob(client, job.jobId, ctx.io, {
      json: false,
      quiet: true,
      signal: ctx.signal,
    });
    if (!outcome.state) {
      await client.cancelJob(job.jobId, 'interrupted', { timeoutMs: 5_000 }).catch(() => undefined);
      throw new CliError('interrupted', ExitCode.INTERRUPTED);
    }
    const results = await client.getResults(job.jobId);
    let failed = 0;
    for (const t of results.tasks) {
      const details = (t.detailsJson ? JSON.parse(t.detailsJson) : {}) as Record<string, unknown>;
      if (t.status === 'TASK_PASSED') {
        println(
          ctx.io.stdout,
          `ok  ${t.taskId}: the seeds scored under the grader, best validation score ${String(details['validationScore'])}`,
        );
        continue;
      }
      failed++;
      // The task's error is cut to 200 characters: the summary artifact has the whole failure.
      let lastFailure: string | undefined;
      const summary = t.artifacts.find((a) => a.endsWith('/journal-summary.json'));
      if (summary) {
        try {
          const { data } = await client.downloadArtifact(results.jobId, summary);
          const parsed = JSON.parse(Buffer.from(data).toString('utf8')) as {
            lastFailure?: unknown;
          };
          if (typeof parsed.lastFailure === 'string') lastFailure = parsed.lastFailure;
        } catch {
          // The short error still says what failed.
        }
      }
      println(
        ctx.io.stdout,
        `FAIL ${t.taskId}: ${t.error || `${t.status} (${String(details['status'])})`}` +
          (lastFailure ? `\n     ${lastFailure}` : ''),
      );
    }
    return failed === 0 ? ExitCode.OK : ExitCode.INVALID;
  } finally {
    client.close();
    await cluster.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
