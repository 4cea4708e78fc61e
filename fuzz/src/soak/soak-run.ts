import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type GrowthRule, type GrowthVerdict, judgeGrowth } from './growth-trend';
import {
  type ProcessSample,
  sampleProcess,
  SERIES,
  type SeriesKey,
  type SoakedProcess,
} from './process-sampler';
import { startSoakCluster } from './soak-cluster';
import { runSoakWorkload, type SoakWorkloadTally } from './soak-workload';

/**
 * The growth each series may show after the warm-up (see docs/reliability.md, Soak). A Troupe
 * server runs for weeks: 20 MB/h of RSS is ~3.4 GB a week, so anything above it would take a
 * default-sized container down; heap is measured after a full collection (the live set), so
 * 10 MB/h of it is retained objects, not garbage; a descriptor or handle per job (a job every
 * few seconds) is hundreds an hour, while 20/h is below one per three minutes. `minRise` is
 * what the fitted line must also rise over the judged window: a short run's noise (an allocator
 * arena, a pooled socket, a GC that happens to land late) extrapolates to a steep slope but
 * rises by a few MB or descriptors, not by the rise a leak of that slope would make.
 */
export const GROWTH_RULES: Record<SeriesKey, GrowthRule> = {
  rssMb: { maxSlopePerH: 20, minRise: 8 },
  heapMb: { maxSlopePerH: 10, minRise: 4 },
  fds: { maxSlopePerH: 20, minRise: 10 },
  handles: { maxSlopePerH: 20, minRise: 10 },
  // With finished jobs deleted after a retention, what the streams store is bounded: bytes that
  // keep piling up under a steady workload are a leak of the cluster's state (as RSS).
  storedMb: { maxSlopePerH: 20, minRise: 8 },
  // nats-server's file store caches a stream block it reads whole, in a pooled buffer of a size
  // class (4 or 8 MB, up to the block size), and drops it 5 s after its last use; the newest
  // block of a busy stream stays cached, and its buffer moves up a class as the block fills (KV
  // blocks roll at 4 MB, stream blocks at 8 MB: up to an hour at a soak's rate). A step of a
  // buffer or two is that; more, steadily, is blocks cached and never let go.
  blockBuffersMb: { maxSlopePerH: 20, minRise: 24 },
  // What a Go process's heap holds besides that cache, judged like a heap.
  heapOutsideCacheMb: { maxSlopePerH: 10, minRise: 4 },
  // What a Go process holds resident besides that cache, judged like RSS.
  rssOutsideCacheMb: { maxSlopePerH: 20, minRise: 8 },
};

/**
 * Series shown for a process but judged through others when it has them: a Go heap with a block
 * cache is the cache (its own rule) and the rest. Judged whole, nats-server's heap "grew" 27 MB/h
 * over a 30-minute soak while its newest blocks filled and their buffers moved up a size class
 * (16 of its 22 MB were block buffers), with 4–6 MB outside them throughout. Its RSS holds those
 * buffers too: three 30-minute soaks judged it "growing" 33–38 MB/h (a 13 MB rise) while its
 * RSS less the buffers rose 13 MB/h, and a 70-minute soak, long enough for the blocks to roll,
 * found no trend in the whole RSS.
 */
export const JUDGED_THROUGH: Partial<Record<SeriesKey, readonly SeriesKey[]>> = {
  heapMb: ['blockBuffersMb', 'heapOutsideCacheMb'],
  rssMb: ['blockBuffersMb', 'rssOutsideCacheMb'],
};

/**
 * The warm-up left out of the fits: a third of the run, at least 60 s, at most 10 min. In the
 * first minute every process grows as it should (JIT code, connection pools, nats-server's
 * stream caches filling); a leak is what keeps growing after that.
 */
export function warmupFor(durationS: number): number {
  return Math.min(600, Math.max(60, durationS / 3));
}

/** Options of {@link runSoak}. */
export interface SoakOptions {
  /** How long the workload runs, seconds (it also stops after `maxTasks`). */
  durationS: number;
  maxTasks: number;
  /** Seconds between samples. */
  sampleS: number;
  backend: 'docker' | 'process';
  /** Sandbox slots of the node agent, and tasks a job runs at once. */
  slots: number;
  /** Tasks per job (a job runs `slots / parallelJobs` of them at once). */
  jobTasks: number;
  parallelJobs: number;
  image: string;
  /** How long the coordinator keeps finished jobs; `null` keeps them. @default 30000 */
  jobRetentionMs?: number | null;
  /** Folder for logs and probe reports. @default a new temp folder */
  dir?: string;
  /** Also sample these processes (a test's deliberately leaking process). */
  extraProcesses?: SoakedProcess[];
  progress?: (line: string) => void;
  signal?: AbortSignal;
}

/** One sampled process and its verdicts. */
export interface SoakedSeries {
  process: SoakedProcess;
  samples: ProcessSample[];
  verdicts: Partial<Record<SeriesKey, GrowthVerdict>>;
  /** Series fitted for the report but judged through others (see {@link JUDGED_THROUGH}). */
  shown?: Partial<Record<SeriesKey, GrowthVerdict>>;
  /** Set when the process went away during the run. */
  lost?: string;
}

/** What a soak found. */
export interface SoakResult {
  processes: SoakedSeries[];
  tally: SoakWorkloadTally;
  warmupS: number;
  wallS: number;
  dir: string;
  /** Processes that exited while the cluster ran. */
  exited: string[];
  /** `pass` when every series of every process is `ok` and every job passed. */
  verdict: 'pass' | 'fail';
  /** Why it failed (each growing series, lost process, failed job). */
  problems: string[];
}

/**
 * Judges every series of every sampled process (see {@link GROWTH_RULES}); one a process has the
 * {@link JUDGED_THROUGH} series for is fitted for the report only.
 */
export function judgeSeries(series: SoakedSeries[], warmupS: number): void {
  for (const s of series) {
    const has = (key: SeriesKey) => s.samples.some((x) => x[key] !== undefined);
    for (const { key } of SERIES) {
      const points = s.samples
        .filter((x) => x[key] !== undefined)
        .map((x) => ({ t: x.t, v: x[key] as number }));
      if (points.length === 0) continue;
      const verdict = judgeGrowth(points, GROWTH_RULES[key], { warmupS });
      if (JUDGED_THROUGH[key]?.every(has)) (s.shown ??= {})[key] = verdict;
      else s.verdicts[key] = verdict;
    }
  }
}

/**
 * A soak: starts the cluster ({@link startSoakCluster}), samples every process every `sampleS`
 * while {@link runSoakWorkload} runs jobs, stops, and judges each series for growth after the
 * warm-up.
 */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const dir = options.dir ?? (await mkdtemp(path.join(os.tmpdir(), 'troupe-soak-')));
  const say = options.progress ?? (() => undefined);
  say(`soak: starting nats-server, coordinator and node agent (${options.backend}) in ${dir}`);
  const cluster = await startSoakCluster({
    backend: options.backend,
    slots: options.slots,
    jobRetentionMs: options.jobRetentionMs === undefined ? 30_000 : options.jobRetentionMs,
    dir,
    probeMs: Math.max(500, Math.floor((options.sampleS * 1000) / 2)),
  });
  const series: SoakedSeries[] = [...cluster.processes, ...(options.extraProcesses ?? [])].map(
    (process) => ({ process, samples: [], verdicts: {} }),
  );
  const t0 = Date.now();
  let sampling: Promise<void> = Promise.resolve();
  const sampleAll = () => {
    const t = (Date.now() - t0) / 1000;
    sampling = Promise.all(
      series
        .filter((s) => s.lost === undefined)
        .map(async (s) => {
          try {
            s.samples.push(await sampleProcess(s.process, t));
          } catch (err) {
            s.lost = `${s.process.name} (pid ${s.process.pid}) could not be sampled at ${Math.round(t)} s: ${(err as Error).message}`;
          }
        }),
    ).then(() => undefined);
  };
  sampleAll();
  const timer = setInterval(sampleAll, options.sampleS * 1000);
  let live: SoakWorkloadTally = { jobs: 0, tasks: 0, passed: 0, failures: [], cut: 0 };
  const line = () => {
    const now = Date.now();
    const tally = live;
    const parts = series.map((s) => {
      const x = s.samples.at(-1);
      if (!x) return `${s.process.name} -`;
      const heap = x.heapMb !== undefined ? ` heap ${x.heapMb.toFixed(1)}` : '';
      const handles = x.handles !== undefined ? ` handles ${x.handles}` : '';
      const stored =
        (x.blockBuffersMb !== undefined ? ` (block buffers ${x.blockBuffersMb.toFixed(1)})` : '') +
        (x.storedMb !== undefined ? ` stored ${x.storedMb.toFixed(1)}` : '');
      return `${s.process.name} rss ${x.rssMb.toFixed(0)}${heap} fds ${x.fds}${handles}${stored}`;
    });
    say(
      `  ${Math.round((now - t0) / 1000)}/${options.durationS} s: ${tally.tasks} tasks in ${tally.jobs} jobs (${tally.failures.length} failed) | ${parts.join(' | ')}`,
    );
  };
  const progressTimer = setInterval(line, 10_000);
  let tally: SoakWorkloadTally;
  try {
    tally = await runSoakWorkload({
      address: cluster.address,
      token: cluster.token,
      jobTasks: options.jobTasks,
      concurrency: Math.max(1, Math.floor(options.slots / options.parallelJobs)),
      parallelJobs: options.parallelJobs,
      maxTasks: options.maxTasks,
      until: t0 + options.durationS * 1000,
      image: options.image,
      ...(options.signal ? { signal: options.signal } : {}),
      onJob: (t) => (live = t),
    });
    clearInterval(timer);
    await sampling;
    sampleAll();
    await sampling;
  } finally {
    clearInterval(progressTimer);
    clearInterval(timer);
    await sampling;
    await cluster.stop();
  }
  const wallS = (Date.now() - t0) / 1000;
  const warmupS = warmupFor(wallS);
  judgeSeries(series, warmupS);
  const exited = cluster.exited();
  const problems: string[] = [];
  for (const s of series) {
    if (s.lost !== undefined) problems.push(s.lost);
    for (const [key, v] of Object.entries(s.verdicts)) {
      if (v.verdict !== 'ok') problems.push(`${s.process.name} ${key}: ${v.verdict} (${v.reason})`);
    }
  }
  problems.push(...tally.failures.slice(0, 10).map((f) => `job ${f}`));
  if (tally.failures.length > 10) problems.push(`… ${tally.failures.length - 10} more failed jobs`);
  return {
    processes: series,
    tally,
    warmupS,
    wallS,
    dir,
    exited,
    verdict: problems.length === 0 ? 'pass' : 'fail',
    problems,
  };
}

/** The perf convention's metrics of a soak: the worst slope of each series, per process too. */
export function soakMetrics(result: SoakResult): Record<string, number | string> {
  const r = (x: number) => Math.round(x * 100) / 100;
  const names: Record<SeriesKey, string> = {
    rssMb: 'rss_slope_mb_per_h',
    heapMb: 'heap_slope_mb_per_h',
    fds: 'fd_slope_per_h',
    handles: 'handles_slope_per_h',
    storedMb: 'stored_slope_mb_per_h',
    blockBuffersMb: 'block_cache_slope_mb_per_h',
    heapOutsideCacheMb: 'heap_outside_cache_slope_mb_per_h',
    rssOutsideCacheMb: 'rss_outside_cache_slope_mb_per_h',
  };
  const metrics: Record<string, number | string> = {};
  for (const { key } of SERIES) {
    const slopes = result.processes
      .map((s) => s.verdicts[key]?.slopePerH)
      .filter((x): x is number => x !== undefined);
    metrics[names[key]] = slopes.length > 0 ? r(Math.max(...slopes)) : 0;
  }
  metrics['growth_series'] = result.processes.reduce(
    (n, s) => n + Object.values(s.verdicts).filter((v) => v.verdict === 'growth').length,
    0,
  );
  metrics['tasks'] = result.tally.tasks;
  metrics['jobs'] = result.tally.jobs;
  metrics['failed_jobs'] = result.tally.failures.length;
  metrics['cut_jobs'] = result.tally.cut;
  metrics['samples'] = Math.max(0, ...result.processes.map((s) => s.samples.length));
  metrics['warmup_s'] = r(result.warmupS);
  metrics['wall_s'] = r(result.wallS);
  for (const s of result.processes) {
    const p = s.process.name.replace(/-/g, '_');
    for (const { key } of SERIES) {
      const v = s.verdicts[key] ?? s.shown?.[key];
      if (v) metrics[`${p}_${names[key]}`] = r(v.slopePerH);
    }
    const last = s.samples.at(-1);
    if (last) metrics[`${p}_rss_mb_end`] = r(last.rssMb);
    if (last?.heapMb !== undefined) metrics[`${p}_heap_mb_end`] = r(last.heapMb);
    if (last?.storedMb !== undefined) metrics[`${p}_stored_mb_end`] = r(last.storedMb);
    if (last?.blockBuffersMb !== undefined) {
      metrics[`${p}_block_buffers_mb_end`] = r(last.blockBuffersMb);
    }
    if (last?.heapOutsideCacheMb !== undefined) {
      metrics[`${p}_heap_outside_cache_mb_end`] = r(last.heapOutsideCacheMb);
    }
    if (last?.rssOutsideCacheMb !== undefined) {
      metrics[`${p}_rss_outside_cache_mb_end`] = r(last.rssOutsideCacheMb);
    }
  }
  metrics['verdict'] = result.verdict;
  return metrics;
}
