import { setTimeout as delay } from 'node:timers/promises';
import type { JobResults__Output } from '@troupe/proto';
import { waitFor } from '@troupe/testkit';
import type { ChaosCluster } from './chaos-cluster';
import type { ClusterObserver } from './cluster-observer';
import { describeFault, type FaultKind, type FaultSchedule } from './fault-schedule';
import { injectFault } from './inject-fault';
import { StreamLeaderWatch } from './stream-leaders';
import {
  checkEventLog,
  checkExecutions,
  checkGradedOnce,
  checkSingleActivation,
  type ReceivedEvent,
} from './invariants';

/** A recovery measured after one fault. */
export interface Recovery {
  readonly kind: FaultKind;
  readonly fault: string;
  /** From the heal to the next task graded. */
  readonly seconds: number;
  /**
   * A fault on a NATS server: how long after the heal the cluster's streams all had a leader
   * again (0 when they had one by then; undefined when not seen within the recovery deadline).
   */
  readonly leaderlessSeconds?: number;
  /**
   * From the heal, or from every stream led again when that came later, to the next task graded:
   * the part of the recovery that is Troupe's, not the servers' elections.
   */
  readonly afterLeadersSeconds: number;
}

/** What one schedule found. */
export interface ScheduleReport {
  readonly seed: number;
  readonly jobId: string;
  readonly violations: readonly string[];
  readonly recoveries: readonly Recovery[];
  /** Faults after which no task was left to complete (the job had finished). */
  readonly unmeasured: number;
  readonly wallMs: number;
}

/** Deadlines of one schedule (generous: CI machines are loaded). */
const TASK_TIMEOUT_MS = 120_000;
const RECOVERY_DEADLINE_MS = 120_000;
/** Twice the tasks' own timeout: a job still running then is stuck (and is cancelled). */
const JOB_DEADLINE_MS = 240_000;
const WATCH_END_DEADLINE_MS = 30_000;
/** A cancelled job's grace period (the coordinator's default 30 s) and a margin. */
const CANCEL_FINISH_DEADLINE_MS = 60_000;
const ORPHAN_DEADLINE_MS = 60_000;

/**
 * Runs one seeded schedule: submits a shell-tasks job whose every command carries a marker,
 * injects the schedule's faults one after another while it runs (each healed after its hold,
 * then the next task graded is awaited: the recovery time), waits for the job to end and checks
 * the invariants (docs/reliability.md, Chaos).
 */
export async function runSchedule(
  c: ChaosCluster,
  observer: ClusterObserver,
  schedule: FaultSchedule,
  log: (line: string) => void,
): Promise<ScheduleReport> {
  const started = Date.now();
  const tag = `${schedule.seed.toString(36)}${started.toString(36)}`;
  const markers = new Map<string, string>();
  for (let i = 0; i < schedule.tasks; i++) {
    // Padded ids: no marker is a prefix of another.
    const id = `t${String(i).padStart(3, '0')}`;
    markers.set(id, `chaos-${tag}-${id}`);
  }
  const spec = {
    name: `chaos-${schedule.seed}`,
    kind: 'shell-tasks',
    concurrency: 6,
    taskTimeoutMs: TASK_TIMEOUT_MS,
    // Each fault may cost a running task an attempt (a Docker daemon restart kills every
    // running command), so the job may retry once per fault: with the default two, a task that
    // three restarts hit in a row ended errored (seed 30000).
    retries: { max: Math.max(2, schedule.faults.length) },
    labels: { suite: 'chaos', seed: String(schedule.seed) },
    config: { memoryMb: 64 },
    tasks: [...markers].map(([id, marker]) => ({
      id,
      command: `echo ${marker} && sleep 1`,
    })),
  };
  const client = c.client();
  const violations: string[] = [];
  const recoveries: Recovery[] = [];
  let unmeasured = 0;
  const execsBefore = observer.execs.length;
  const directoryBefore = observer.directory.length;
  const abort = new AbortController();
  let watching: Promise<void> | undefined;
  try {
    const { jobId } = await client.submitJob(spec);
    const events: ReceivedEvent[] = [];
    const watch: {
      events: ReceivedEvent[];
      finishedAtMs?: number;
      endedAtMs?: number;
      error?: string;
    } = { events };
    watching = (async () => {
      try {
        for await (const event of client.watch(jobId, {
          signal: abort.signal,
          maxReconnects: 1_000,
        })) {
          events.push({ event, receivedAtMs: Date.now() });
          if (event.type === 'JOB_FINISHED') watch.finishedAtMs = Date.now();
        }
        if (!abort.signal.aborted) watch.endedAtMs = Date.now();
      } catch (err) {
        watch.error = (err as Error).message;
      }
    })();
    const gradedAfter = (t: number) =>
      events.some((r) => r.event.type === 'TASK_GRADED' && r.receivedAtMs > t);
    const finished = () => watch.finishedAtMs !== undefined || watch.error !== undefined;
    await waitFor(() => gradedAfter(0) || finished(), {
      timeoutMs: RECOVERY_DEADLINE_MS,
      message: `seed ${schedule.seed}: first task graded`,
    });
    for (const fault of schedule.faults) {
      if (finished()) {
        unmeasured++;
        continue;
      }
      // The schedule's own timing, not a synchronisation.
      await delay(fault.gapMs);
      // A process that crashed since is a violation; it is started again before the fault.
      violations.push(...(await c.takeCrashes()));
      const injectedAt = Date.now();
      const injected = await injectFault(c, fault);
      // A server hit: when its streams are led again, the cluster's own part of the recovery.
      const leaders =
        fault.target.role === 'nats'
          ? await StreamLeaderWatch.start(c.nc, RECOVERY_DEADLINE_MS)
          : undefined;
      if (fault.target.role === 'leader' && injected.target.role === 'coordinator') {
        log(`  seed ${schedule.seed}: ${fault.kind} leader = coordinator#${injected.target.index}`);
      }
      await delay(fault.holdMs);
      const healedAt = await injected.heal();
      try {
        await waitFor(() => gradedAfter(healedAt) || finished(), {
          timeoutMs: RECOVERY_DEADLINE_MS,
          message: `seed ${schedule.seed}: a task graded after ${describeFault(fault)} healed`,
        });
        const next = events.find(
          (r) => r.event.type === 'TASK_GRADED' && r.receivedAtMs > healedAt,
        );
        if (next) {
          const seconds = (next.receivedAtMs - healedAt) / 1_000;
          const ledAt = await leaders?.led();
          const leaderlessSeconds =
            leaders === undefined || ledAt === undefined
              ? undefined
              : Math.max(0, ledAt - healedAt) / 1_000;
          const afterLeadersSeconds = Math.max(0, seconds - (leaderlessSeconds ?? 0));
          recoveries.push({
            kind: fault.kind,
            fault: describeFault(fault),
            seconds,
            afterLeadersSeconds,
            ...(leaderlessSeconds !== undefined ? { leaderlessSeconds } : {}),
          });
          const sinceFault = (next.receivedAtMs - injectedAt) / 1_000;
          const led =
            leaders === undefined
              ? ''
              : leaderlessSeconds === undefined
                ? '; streams not all led again'
                : `; streams led again ${leaderlessSeconds.toFixed(2)} s after the heal`;
          log(
            `  seed ${schedule.seed}: ${describeFault(fault)} → recovered in ${seconds.toFixed(2)} s` +
              ` (${sinceFault.toFixed(2)} s after it was injected${led})`,
          );
        } else {
          unmeasured++;
          log(`  seed ${schedule.seed}: ${describeFault(fault)} → job ended, nothing to recover`);
        }
      } catch (err) {
        violations.push(`no recovery: ${(err as Error).message}`);
      } finally {
        leaders?.stop();
      }
    }
    await waitFor(finished, {
      timeoutMs: JOB_DEADLINE_MS,
      message: `seed ${schedule.seed}: job ${jobId} finished`,
    }).catch(async (err: Error) => {
      violations.push(err.message);
      // Free its slots for the next schedules; the watcher then sees the job end, once the
      // cancellation's grace period (30 s) is over. The watch's own end is judged from then: a
      // wait counted from the cancellation reported a watcher that had not ended (seed 8444).
      await client.cancelJob(jobId, 'chaos: job deadline').catch(() => undefined);
      await waitFor(finished, {
        timeoutMs: CANCEL_FINISH_DEADLINE_MS,
        message: `seed ${schedule.seed}: job ${jobId} finished after its cancellation`,
      }).catch((e: Error) => violations.push(e.message));
    });
    await waitFor(() => watch.endedAtMs !== undefined || watch.error !== undefined, {
      timeoutMs: WATCH_END_DEADLINE_MS,
      message: 'watch ended',
    }).catch(() => undefined);
    let results: JobResults__Output | undefined;
    try {
      results = await client.getResults(jobId);
    } catch (err) {
      violations.push(`GetResults: ${(err as Error).message}`);
    }
    violations.push(...checkGradedOnce([...markers.keys()], watch, results));
    violations.push(...checkEventLog(watch, WATCH_END_DEADLINE_MS));
    violations.push(
      ...checkBudget(results),
      ...(await checkOrphans(c, jobId)),
      ...checkSingleActivation(observer.directory.slice(directoryBefore)),
    );
    // Docker reports an exec's events a moment after it ends: wait until every task's command
    // was seen, then judge.
    await waitFor(
      () =>
        checkExecutions(markers, observer.execs.slice(execsBefore)).executions.size ===
        markers.size,
      { timeoutMs: 30_000, message: 'exec events of every task' },
    ).catch(() => undefined);
    violations.push(...checkExecutions(markers, observer.execs.slice(execsBefore)).violations);
    violations.push(...(await c.takeCrashes()));
    return {
      seed: schedule.seed,
      jobId,
      violations,
      recoveries,
      unmeasured,
      wallMs: Date.now() - started,
    };
  } finally {
    abort.abort();
    await watching;
    client.close();
  }
}

/** Budget spent ≤ limit: a shell-tasks job calls no model, so it must have spent nothing. */
function checkBudget(results: JobResults__Output | undefined): string[] {
  const spent = Number(results?.aggregate?.costUsd ?? 0);
  return spent > 0 ? [`job spent $${spent} with a $0 budget`] : [];
}

/** No orphan containers or volumes of the job once it ended (a node agent removes them). */
async function checkOrphans(c: ChaosCluster, jobId: string): Promise<string[]> {
  const label = [`troupe.cluster=${c.cluster}`, `troupe.job=${jobId}`];
  let left = '';
  try {
    await waitFor(
      async () => {
        const containers = await c.docker.listContainers({ all: true, filters: { label } });
        const volumes = (await c.docker.listVolumes({ filters: { label } })).Volumes ?? [];
        left = `${containers.length} containers, ${volumes.length} volumes`;
        return containers.length === 0 && volumes.length === 0;
      },
      { timeoutMs: ORPHAN_DEADLINE_MS, message: 'orphans removed' },
    );
    return [];
  } catch {
    return [`orphans of job ${jobId} after ${ORPHAN_DEADLINE_MS / 1_000} s: ${left}`];
  }
}
