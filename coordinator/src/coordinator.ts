import { randomBytes } from 'node:crypto';
import {
  delay,
  fromZodError,
  kvBucketName,
  natsConnectionOptions,
  TroupeError,
} from '@troupe/proto';
import {
  type AnyActorDefinition,
  ActorSystem,
  type Logger,
  noopLogger,
  PlacementService,
  createKv,
  kvKeys,
  retireActor,
} from '@troupe/actors';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { type KV } from '@nats-io/kv';
import { BudgetLedger } from './budget/budget-ledger';
import { BudgetLedgerActor } from './budget/budget-ledger-actor';
import { LedgerStateFeed } from './budget/ledger-state-feed';
import { registerBudgetMetrics } from './budget/budget-metrics';
import { RateLimitActor } from './budget/rate-limit-actor';
import { ActorReaper } from './actor-reaper';
import { JobSweeper } from './job-sweeper';
import { ClusterPlacement } from './cluster-placement';
import { ConfigSchema, type CoordinatorConfig, type CoordinatorOptions } from './config';
import { type JobPolicy } from './fair-queue';
import { HostRegistry } from './host-registry';
import { LeaderLease } from './leader-lease';
import { MetricsServer } from './metrics';
import { cancelReminder, openRemindersKv, ReminderService } from './reminders';
import { DriverRegistry } from './jobs/driver-registry';
import { JobApiServer } from './jobs/job-api-server';
import { JobManager, type JobManagerOptions } from './jobs/job-manager';
import { isFinalPhase } from './jobs/job-state';
import { limitHeapGrowth } from './internal/heap-growth';

/** What {@link Coordinator.start} takes besides the config. */
export interface CoordinatorDeps {
  logger?: Logger;
  /** Use this connection instead of connecting (not closed on stop). */
  connection?: NatsConnection;
  /**
   * Kinds the coordinator process hosts itself.
   * @default the budget ledger and rate-limit actors
   */
  hosting?: readonly AnyActorDefinition[];
  /** Scheduling policy per job. @default the job manager's (from each job's spec) */
  jobPolicy?: (jobId: string) => JobPolicy;
  /**
   * Job kinds this coordinator runs (`registerBuiltinDrivers` of `@troupe/benchmarks` fills one).
   * With drivers or a `grpc` config section the coordinator hosts the job and task actors.
   */
  drivers?: DriverRegistry;
  /** Tuning of the job manager (cancel grace, actor idle times). */
  jobs?: Omit<JobManagerOptions, 'drivers' | 'logger'>;
}

/** The services that run only on the leader. */
interface LeaderServices {
  registry: HostRegistry;
  placement: ClusterPlacement;
  placer: PlacementService;
  reminders: ReminderService;
  reaper?: ActorReaper;
  sweeper?: JobSweeper;
}

/** Pauses between attempts to start the leader's services: 250 ms, doubling up to 5 s. */
const LEADER_RETRY_FIRST_MS = 250;
const LEADER_RETRY_MAX_MS = 5_000;

/**
 * Stops the leader's services, the last started first; each is safe to stop unstarted. The
 * placement is stopped before the placer's stop waits for its placements in flight: one waiting
 * for a free slot waits until its deadline (an ask's, up to minutes) unless the placement lets it
 * go. Stopped after the placer, a coordinator that stepped down with all hosts declared dead (a
 * NATS server stopped) took 5 minutes to stop its services, and to start them again when it was
 * elected a moment later; no actor was placed meanwhile (chaos run 23, seed 9304).
 */
async function stopLeaderServices(s: LeaderServices): Promise<void> {
  await s.reaper?.stop();
  await s.sweeper?.stop();
  s.reminders.stop();
  s.placement.stop();
  await s.placer.stop();
  s.registry.stop();
}

/**
 * The coordinator: host registry with heartbeats, cluster placement under a weighted fair
 * scheduler, wake-on-post, recovery of dead hosts' actors, durable reminders, and leader election
 * so a standby takes over with all state in JetStream.
 */
export class Coordinator {
  private leaderServices?: LeaderServices;
  private transition: Promise<void> = Promise.resolve();
  /** Aborted by {@link stop}: ends a retried start of the leader's services. */
  private readonly stopping = new AbortController();
  private metrics?: MetricsServer;
  /** Port of the metrics endpoint, when enabled. */
  metricsPort?: number;
  /** The job manager, when this coordinator runs jobs. */
  jobs?: JobManager;
  private grpc?: JobApiServer;
  /** Port of the gRPC job API, when served. */
  grpcPort?: number;

  private constructor(
    readonly config: CoordinatorConfig,
    readonly id: string,
    readonly system: ActorSystem,
    private readonly nc: NatsConnection,
    private readonly ownsConnection: boolean,
    private readonly log: Logger,
    private readonly deps: CoordinatorDeps,
    private lease?: LeaderLease,
  ) {}

  /** Validates the config, connects, and starts competing for leadership. */
  static async start(
    options: CoordinatorOptions,
    deps: CoordinatorDeps = {},
  ): Promise<Coordinator> {
    const parsed = ConfigSchema.safeParse(options);
    if (!parsed.success) throw fromZodError(parsed.error, { prefix: 'config' });
    const config = parsed.data;
    const id = config.coordinatorId ?? `coord-${randomBytes(4).toString('hex')}`;
    const log = (deps.logger ?? noopLogger).child({ component: 'coordinator', coordinatorId: id });
    limitHeapGrowth(config.heapGrowthPercent);
    const nc =
      deps.connection ??
      (await connect({
        ...natsConnectionOptions(config.nats),
        name: `troupe-coordinator-${id}`,
        noAsyncTraces: true, // see ActorSystem: saves two Error allocations per request
      }));
    const jobs =
      deps.drivers || config.grpc
        ? new JobManager({
            ...deps.jobs,
            drivers: deps.drivers ?? new DriverRegistry(),
            logger: log,
          })
        : undefined;
    const base = deps.hosting ?? [BudgetLedgerActor, RateLimitActor];
    const taken = new Set(base.map((d) => d.kind));
    const clash = jobs?.definitions.find((d) => taken.has(d.kind));
    if (clash) {
      if (!deps.connection) await nc.close();
      throw new TroupeError(
        'ALREADY_EXISTS',
        `actor kind '${clash.kind}' of the job layer or a driver is also among the coordinator's own hosted kinds`,
        { details: { field: 'drivers', kind: clash.kind } },
      );
    }
    const hosting = [...base, ...(jobs?.definitions ?? [])];
    const system = await ActorSystem.start({
      cluster: config.cluster,
      connection: nc,
      hostId: id,
      logger: log,
      hosting,
      placement: 'none',
      register: hosting.length > 0,
      replicas: config.replicas,
    });
    const c = new Coordinator(config, id, system, nc, !deps.connection, log, deps);
    if (jobs) {
      try {
        await jobs.start({
          cluster: config.cluster,
          nc,
          refs: system,
          hostId: id,
          replicas: config.replicas,
          isLeader: () => c.isLeader,
          directory: system.directory,
        });
        c.jobs = jobs;
        if (config.grpc) {
          c.grpc = await JobApiServer.start({
            jobs,
            nodes: () => c.registry,
            budget: new BudgetLedger(system),
            ledgers: new LedgerStateFeed({
              cluster: config.cluster,
              jsm: system.jsm,
              states: system.states,
            }),
            config: config.grpc,
            logger: log,
          });
          c.grpcPort = c.grpc.port;
        }
      } catch (err) {
        jobs.stop();
        await system.shutdown({ graceMs: 0 });
        if (!deps.connection) await nc.close();
        throw err;
      }
    }
    if (config.metrics.port !== null) {
      c.metrics = new MetricsServer(c.metricsSource());
      // Budget per scope of the cluster ledger, from the leader only (one series per cluster).
      const ledger = new BudgetLedger(system);
      registerBudgetMetrics(c.metrics.registry, async () =>
        c.isLeader ? [await ledger.snapshot()] : [],
      );
      c.metricsPort = await c.metrics.listen(config.metrics.port, config.metrics.host);
    }
    const leases = await createKv(nc, kvBucketName(config.cluster, 'leases'), {
      history: 1,
      replicas: config.replicas,
    });
    c.lease = new LeaderLease({
      kv: leases,
      holderId: id,
      log,
      leaseMs: config.leaseMs,
      renewMs: config.renewMs,
      onElected: () => c.queue(() => c.becomeLeader()),
      onDeposed: () => c.queue(() => c.stepDown()),
    });
    await c.lease.start();
    return c;
  }

  /** True while this coordinator leads the cluster. */
  get isLeader(): boolean {
    return this.lease?.isLeader ?? false;
  }

  /** The host registry (leader only). */
  get registry(): HostRegistry | undefined {
    return this.leaderServices?.registry;
  }

  /** Cluster placement (leader only). */
  get placement(): ClusterPlacement | undefined {
    return this.leaderServices?.placement;
  }

  /** Waits until leadership transitions in progress have finished. */
  async settled(): Promise<void> {
    await this.transition;
  }

  private queue(fn: () => Promise<void>): Promise<void> {
    this.transition = this.transition.then(fn).catch((err: unknown) => {
      this.log.error({ err }, 'leadership transition failed');
    });
    return this.transition;
  }

  /**
   * Starts the leader's services, again and again while this coordinator leads and they fail to
   * start. Their streams may be electing leaders of their own after a NATS server loss (a start
   * then times out): a leader that gave up after one try held the lease with no placer, registry
   * or reminders running — no actor was woken, placed or recovered until the lease moved, which
   * with a single coordinator is never.
   */
  private async becomeLeader(): Promise<void> {
    for (let attempt = 1; this.isLeader && !this.stopping.signal.aborted; attempt++) {
      const steps: Record<string, number> = {};
      try {
        await this.startLeaderServices(steps);
        return;
      } catch (err) {
        const pauseMs = Math.min(LEADER_RETRY_MAX_MS, LEADER_RETRY_FIRST_MS * 2 ** (attempt - 1));
        this.log.error({ err, attempt, pauseMs, steps }, 'leader services did not start: retrying');
        await delay(pauseMs, this.stopping.signal, { unref: true }).catch(() => undefined);
      }
    }
  }

  /**
   * Builds and starts the leader's services. When one fails to start, those built are stopped
   * (a placer whose watcher failed would otherwise go on answering activation requests) and the
   * error is thrown.
   */
  private async startLeaderServices(steps: Record<string, number>): Promise<void> {
    const { cluster, replicas } = this.config;
    // How long each step took, logged with the outcome: a start that takes seconds (a request
    // lost while a stream elected its leader waits out the JetStream API's 5 s) shows where.
    const timed = async <T>(name: string, step: () => Promise<T>): Promise<T> => {
      const t0 = performance.now();
      try {
        return await step();
      } finally {
        steps[name] = Math.round(performance.now() - t0);
      }
    };
    const bucket = (name: 'nodes' | 'directory') =>
      timed(`${name}Kv`, () =>
        createKv(this.nc, kvBucketName(cluster, name), { history: 1, replicas }),
      );
    const nodesKv = await bucket('nodes');
    const directoryKv = await bucket('directory');
    const remindersKv = await timed('remindersKv', () =>
      openRemindersKv(this.nc, cluster, replicas),
    );
    const jsm = await jetstreamManager(this.nc);
    // The registry's callbacks reach services built after it.
    const late: { placer?: PlacementService; placement?: ClusterPlacement } = {};
    const reaper = this.actorReaper(late);
    const registry = new HostRegistry({
      nc: this.nc,
      cluster,
      kv: nodesKv,
      log: this.log.child({ component: 'registry' }),
      heartbeatMs: this.config.heartbeatMs,
      missedHeartbeats: this.config.missedHeartbeats,
      onHostDead: () => void late.placer?.sweep(),
      onCapacityChanged: () => late.placement?.kickAll(),
    });
    const placement = new ClusterPlacement({
      registry,
      directoryKv,
      log: this.log.child({ component: 'placement' }),
      kindLimits: this.config.kindLimits,
      ...(reaper ? { onEntry: reaper.observe } : {}),
      ...(this.deps.jobPolicy
        ? { jobPolicy: this.deps.jobPolicy }
        : this.jobs
          ? { jobPolicy: this.jobs.policyOf }
          : {}),
    });
    const placer = new PlacementService({
      transport: this.system.transport,
      jsm,
      directory: this.system.directory,
      states: this.system.states,
      log: this.log.child({ component: 'placer' }),
      selectHost: placement.select,
      peekDirectory: placement.peek,
      // The recovery sweep's entries from the directory watch, not a listing of every actor.
      sweepCandidates: placement.sweepCandidates,
      // Actors placed on this coordinator start by a direct call; posts to its live ones (job
      // actors) are hinted without a directory read per message.
      ...(this.system.localHost ? { localHost: this.system.localHost } : {}),
      hostAlive: async (hostId, incarnation) => registry.isAlive(hostId, incarnation),
      onPlacementFailed: placement.placementFailed,
      activationTimeoutMs: this.config.activationTimeoutMs,
      sweepIntervalMs: this.config.sweepIntervalMs,
    });
    late.placer = placer;
    late.placement = placement;
    const reminders = new ReminderService(this.nc, cluster, remindersKv, this.system, this.log);
    const sweeper = this.jobSweeper(remindersKv);
    const services: LeaderServices = {
      registry,
      placement,
      placer,
      reminders,
      ...(reaper ? { reaper } : {}),
      ...(sweeper ? { sweeper } : {}),
    };
    try {
      await timed('registry', () => registry.start());
      await timed('placement', () => placement.start());
      await timed('placer', () => placer.start());
      await timed('reminders', () => reminders.start());
    } catch (err) {
      await stopLeaderServices(services);
      throw err;
    }
    reaper?.start();
    sweeper?.start();
    this.leaderServices = services;
    this.log.info({ steps }, 'leader services started');
    // The hosts loaded from KV got a full grace period; those whose process is gone (the previous
    // leader's, after a kill) are declared dead now, so their actors are recovered at once.
    void registry
      .checkPresence()
      .catch((err: unknown) => this.log.warn({ err }, 'host presence check failed'));
  }

  /**
   * The leader's {@link ActorReaper}, when this coordinator runs jobs and keeps finished jobs'
   * actors for a limited time (`actorRetentionMs`).
   */
  private actorReaper(late: { placement?: ClusterPlacement }): ActorReaper | undefined {
    const retentionMs = this.config.actorRetentionMs;
    const jobs = this.jobs;
    if (retentionMs === null || !jobs) return undefined;
    return new ActorReaper({
      retentionMs,
      intervalMs: this.config.sweepIntervalMs,
      finishedAt: async (jobId) => {
        const job = await jobs.store.findJob(jobId);
        // No record at all: deleted (DeleteJob, the job retention; a job's actors exist only
        // after its record): its actors go at once. One this version cannot read stays.
        if (job === undefined) return 0;
        if (job === 'unreadable') return undefined;
        return isFinalPhase(job.state) ? job.finishedUnixMs : undefined;
      },
      retire: (addr) => retireActor(this.system, addr),
      onRetired: (key) => late.placement?.forget(key),
      log: this.log.child({ component: 'reaper' }),
    });
  }

  /**
   * The leader's {@link JobSweeper}, when this coordinator runs jobs: deletes finished jobs after
   * `jobRetentionMs` and retires deleted jobs' job actors.
   */
  private jobSweeper(remindersKv: KV): JobSweeper | undefined {
    const jobs = this.jobs;
    if (!jobs) return undefined;
    const retentionMs = this.config.jobRetentionMs;
    // A listing of every job per pass: no more often than a tenth of the retention allows.
    const intervalMs =
      retentionMs === null
        ? this.config.sweepIntervalMs * 6
        : Math.min(60_000, Math.max(this.config.sweepIntervalMs, retentionMs / 10));
    return new JobSweeper({
      retentionMs,
      intervalMs,
      jobs: {
        listJobs: () => jobs.store.listJobs(),
        delete: (jobId) => jobs.delete(jobId),
        goneJobs: () => jobs.store.goneJobs(),
        forgetDeletedJob: (jobId) => jobs.store.forgetDeletedJob(jobId),
        jobRecordStored: async (jobId) => (await jobs.store.findJob(jobId)) !== undefined,
      },
      // The job actor's reminders (ids name the job: `start-sweep-<jobId>-…`, `retry-<jobId>-…`,
      // `cancel-<jobId>`), cancelled so none wakes its actor again once retired.
      cancelReminders: async (jobId) => {
        const ids = (await kvKeys(remindersKv, '>')).filter((id) => id.includes(jobId));
        for (const id of ids) await cancelReminder(remindersKv, id);
        return ids.length;
      },
      retire: (addr) => retireActor(this.system, addr),
      log: this.log.child({ component: 'job-sweeper' }),
    });
  }

  private async stepDown(): Promise<void> {
    const s = this.leaderServices;
    this.leaderServices = undefined;
    if (!s) return;
    await stopLeaderServices(s);
    this.log.info({}, 'leader services stopped');
  }

  /** Steps down (handing the lease over), stops hosting, and closes the connection. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.grpc?.stop(Math.min(5_000, this.config.shutdownGraceMs));
    await this.lease?.stop();
    await this.transition;
    await this.system.shutdown({ graceMs: this.config.shutdownGraceMs });
    await this.metrics?.close();
    this.jobs?.stop();
    if (this.ownsConnection) await this.nc.drain();
  }

  private metricsSource() {
    return {
      isLeader: () => this.isLeader,
      queueDepth: () => this.leaderServices?.placement.queueDepth() ?? {},
      liveByKind: () => {
        const out: Record<string, number> = {};
        for (const h of this.leaderServices?.registry.list() ?? []) {
          for (const [k, n] of Object.entries(h.load)) out[k] = (out[k] ?? 0) + n;
        }
        return out;
      },
      hostsByState: () => {
        const out: Record<string, number> = { ALIVE: 0, DRAINING: 0, DEAD: 0 };
        for (const h of this.leaderServices?.registry.list() ?? [])
          out[h.state] = (out[h.state] ?? 0) + 1;
        return out;
      },
      placements: () => this.leaderServices?.placement.placements ?? 0,
      actorsRetired: () => this.leaderServices?.reaper?.retired ?? 0,
      jobsDeleted: () => this.leaderServices?.sweeper?.deleted ?? 0,
      remindersFired: () => this.leaderServices?.reminders.fired ?? 0,
    };
  }
}
