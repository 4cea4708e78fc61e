import { ChaosCluster } from './chaos-cluster';
import type { ChaosProfile } from './chaos-profile';
import { ClusterObserver } from './cluster-observer';
import { FaultKind, makeSchedule } from './fault-schedule';
import { percentile } from './percentile';
import { runSchedule, type ScheduleReport } from './run-schedule';

/** Options of {@link runChaos}. */
export interface RunChaosOptions {
  readonly profile: ChaosProfile;
  /** Seed of the first schedule; schedule `i` uses `seed + i`. */
  readonly seed: number;
  /** @default the profile's */
  readonly schedules?: number;
  readonly log: (line: string) => void;
  /** When it aborts, no further schedule starts (the one running finishes and is reported). */
  readonly signal?: AbortSignal;
  /** Keep every process's output in this folder (see {@link ChaosCluster.start}). */
  readonly logDir?: string;
}

/** What a chaos run found (the JSON line's metrics, and every schedule's report). */
export interface ChaosSummary {
  readonly metrics: Record<string, number | string | null>;
  readonly reports: readonly ScheduleReport[];
  /** Violations after the cluster stopped (orphan processes). */
  readonly teardownViolations: readonly string[];
}

/**
 * Starts one chaos cluster, runs the schedules on it one after another and stops it, checking
 * that no process outlived it. Every violation is logged with the command replaying its seed.
 */
export async function runChaos(options: RunChaosOptions): Promise<ChaosSummary> {
  const { profile, log } = options;
  const count = options.schedules ?? profile.schedules;
  const started = Date.now();
  const c = await ChaosCluster.start({
    log,
    ...(options.logDir ? { logDir: options.logDir } : {}),
  });
  const reports: ScheduleReport[] = [];
  const teardownViolations: string[] = [];
  try {
    const observer = await ClusterObserver.start(c);
    try {
      for (let i = 0; i < count; i++) {
        if (options.signal?.aborted) {
          log(`stopped after ${i} of ${count} schedules (${String(options.signal.reason)})`);
          break;
        }
        const seed = options.seed + i;
        const schedule = makeSchedule(seed, profile);
        log(
          `schedule ${i + 1}/${count} seed ${seed}: ${schedule.faults.length} faults, ${schedule.tasks} tasks`,
        );
        const report = await runSchedule(c, observer, schedule, log);
        reports.push(report);
        const elapsed = ((Date.now() - started) / 1_000).toFixed(0);
        log(
          `schedule ${i + 1}/${count} seed ${seed}: ${report.violations.length} violations, ` +
            `${(report.wallMs / 1_000).toFixed(1)} s (${elapsed} s so far)`,
        );
        for (const v of report.violations) {
          log(`  VIOLATION seed ${seed}: ${v}`);
        }
        if (report.violations.length > 0) {
          log(`  replay: npm run chaos -- --profile ${profile.name} --seed ${seed} --schedules 1`);
        }
      }
    } finally {
      observer.stop();
    }
  } finally {
    await c.stop();
    const live = c.liveProcesses();
    for (const p of live) teardownViolations.push(`process outlived the cluster: ${p}`);
    const orphans = await c.docker.listContainers({
      all: true,
      filters: { label: [`troupe.cluster=${c.cluster}`] },
    });
    if (orphans.length > 0) {
      teardownViolations.push(`${orphans.length} containers of the cluster left after it stopped`);
    }
  }
  for (const v of teardownViolations) log(`VIOLATION: ${v}`);
  const recoveries = reports.flatMap((r) => r.recoveries);
  const all = recoveries.map((x) => x.seconds);
  const round = (x: number | undefined) => (x === undefined ? null : Math.round(x * 100) / 100);
  const metrics: Record<string, number | string | null> = {
    profile: profile.name,
    seed: options.seed,
    schedules: reports.length,
    violations: reports.reduce((n, r) => n + r.violations.length, 0) + teardownViolations.length,
    failing_seeds: reports
      .filter((r) => r.violations.length > 0)
      .map((r) => r.seed)
      .join(','),
    faults: reports.reduce((n, r) => n + r.recoveries.length + r.unmeasured, 0),
    recoveries: all.length,
    unmeasured: reports.reduce((n, r) => n + r.unmeasured, 0),
    recovery_p50_s: round(percentile(all, 50)),
    recovery_p99_s: round(percentile(all, 99)),
    // Without the time a NATS server's fault left streams leaderless (the servers' elections).
    recovery_after_leaders_p99_s: round(
      percentile(
        recoveries.map((x) => x.afterLeadersSeconds),
        99,
      ),
    ),
  };
  const leaderless = recoveries.flatMap((x) =>
    x.leaderlessSeconds === undefined ? [] : [x.leaderlessSeconds],
  );
  if (leaderless.length > 0) {
    metrics['nats_leaderless_n'] = leaderless.length;
    metrics['nats_leaderless_p99_s'] = round(percentile(leaderless, 99));
  }
  for (const kind of Object.values(FaultKind)) {
    const of = recoveries.filter((x) => x.kind === kind);
    if (of.length === 0) continue;
    const key = kind.replace(/-/g, '_');
    metrics[`${key}_n`] = of.length;
    metrics[`${key}_recovery_p99_s`] = round(
      percentile(
        of.map((x) => x.seconds),
        99,
      ),
    );
    metrics[`${key}_after_leaders_p99_s`] = round(
      percentile(
        of.map((x) => x.afterLeadersSeconds),
        99,
      ),
    );
  }
  metrics['wall_s'] = Math.round((Date.now() - started) / 1_000);
  return { metrics, reports, teardownViolations };
}
