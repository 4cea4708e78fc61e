import { type Job__Output, type JobResults__Output } from '@troupe/proto';
import { formatDuration, formatPercent, formatUsd, statusWord, textTable } from './format';

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Options of {@link resultsJson}. */
export interface ResultsJsonOptions {
  /**
   * Where an artifact was copied on this machine (`troupe run` copies them before its cluster
   * stops); each task then lists `files: {<artifact path>: <local file>}`. @default none
   */
  localFile?: (artifactPath: string) => string | undefined;
}

/** Results for machines: the job and its results with every `*_json` field decoded. */
export function resultsJson(
  job: Job__Output,
  r: JobResults__Output,
  options: ResultsJsonOptions = {},
): Record<string, unknown> {
  const filesOf = (artifacts: string[]): Record<string, string> | undefined => {
    const { localFile } = options;
    if (!localFile) return undefined;
    const out: Record<string, string> = {};
    for (const a of artifacts) {
      const f = localFile(a);
      if (f !== undefined) out[a] = f;
    }
    return out;
  };
  const agg = r.aggregate;
  return {
    jobId: r.jobId,
    name: job.name,
    kind: job.kind,
    state: r.state,
    reason: job.reason,
    labels: job.labels,
    aggregate: agg
      ? {
          total: agg.total,
          passed: agg.passed,
          failed: agg.failed,
          errored: agg.errored,
          timedOut: agg.timedOut,
          cancelled: agg.cancelled,
          pending: agg.pending,
          ...(agg.passRate !== undefined ? { passRate: agg.passRate } : {}),
          costUsd: agg.costUsd,
          promptTokens: agg.promptTokens,
          completionTokens: agg.completionTokens,
          wallMs: agg.wallMs,
          ...(agg.extraJson ? { extra: parseJson(agg.extraJson) } : {}),
        }
      : null,
    tasks: r.tasks.map((t) => ({
      taskId: t.taskId,
      status: t.status,
      ...(t.score !== undefined ? { score: t.score } : {}),
      attempts: t.attempts,
      costUsd: t.costUsd,
      tokens: t.tokens,
      durationMs: t.durationMs,
      stopReason: t.stopReason,
      error: t.error,
      artifacts: t.artifacts,
      ...(options.localFile ? { files: filesOf(t.artifacts) } : {}),
      ...(t.detailsJson ? { details: parseJson(t.detailsJson) } : {}),
    })),
  };
}

/** Results as a plain-text table with a summary line. */
export function resultsTable(job: Job__Output, r: JobResults__Output): string {
  const agg = r.aggregate;
  const head = `job ${r.jobId}  ${job.name} (${job.kind})  ${r.state}${job.reason ? `: ${job.reason}` : ''}`;
  const rows = r.tasks.map((t) => [
    t.taskId,
    statusWord(t.status),
    t.score === undefined ? '-' : String(Math.round(t.score * 1000) / 1000),
    String(t.attempts),
    formatDuration(t.durationMs),
    formatUsd(t.costUsd),
    String(t.tokens),
    t.stopReason || '-',
    t.error ? t.error.replace(/\s+/g, ' ').slice(0, 80) : '',
  ]);
  const table = textTable(
    ['TASK', 'STATUS', 'SCORE', 'ATTEMPTS', 'TIME', 'COST', 'TOKENS', 'STOP', 'ERROR'],
    rows,
  );
  const summary = agg
    ? `total ${agg.total}  passed ${agg.passed}  failed ${agg.failed}  errored ${agg.errored}  ` +
      `timed out ${agg.timedOut}  cancelled ${agg.cancelled}  pending ${agg.pending}  pass rate ${formatPercent(agg.passRate)}  ` +
      `cost ${formatUsd(agg.costUsd)}  wall ${formatDuration(agg.wallMs)}`
    : '';
  return [head, '', table, '', summary].join('\n');
}
