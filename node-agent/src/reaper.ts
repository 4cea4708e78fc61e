import { type Logger, noopLogger, parseWith } from '@troupe/proto';
import type Docker from 'dockerode';
import { z } from 'zod';
import { PeriodicSweep } from './internal/periodic-sweep';
import { dockerError, dockerStatus } from './internal/docker-errors';
import { managedLabelFilters, TroupeLabel } from './labels';
import { SandboxLabelsSchema } from './sandbox-spec';

/** Validated settings of a {@link Reaper}. */
export const ReaperConfigSchema = z
  .object({
    /** Cluster whose objects this reaper looks after. */
    cluster: SandboxLabelsSchema.shape.cluster,
    /** Host id whose objects this reaper looks after (never another host's). */
    host: SandboxLabelsSchema.shape.host,
    /** Pause between periodic sweeps. @default 60000 */
    intervalMs: z.int().min(100).default(60_000),
    /**
     * Objects younger than this are left alone, so a sandbox whose actor is still registering is
     * not mistaken for an orphan.
     * @default 30000
     */
    minAgeMs: z.int().min(0).default(30_000),
  })
  .strict();

/** Validated settings of a {@link Reaper}. */
export type ReaperConfig = z.output<typeof ReaperConfigSchema>;

/** Options of {@link Reaper}. */
export interface ReaperOptions extends z.input<typeof ReaperConfigSchema> {
  /** A dockerode client. */
  docker: Docker;
  /**
   * Whether the actor named by an object's `troupe.actor` label still owns it (for example: the
   * directory says the actor lives on this host). Called at most once per actor per sweep. An
   * error counts as "owned" (never remove on doubt).
   */
  isOwned: (actor: string, labels: Readonly<Record<string, string>>) => boolean | Promise<boolean>;
  /**
   * Ids of the warm pools alive in this node agent. Objects with a `troupe.pool` label are owned
   * exactly when their pool id is listed (idle and handed-out pool sandboxes alike, since Docker
   * cannot relabel a container). Without this option pool objects go through `isOwned('pool', …)`.
   */
  livePoolIds?: () => Iterable<string>;
  /**
   * Called for an orphaned container just before it is removed, to read what only it still knows
   * (how its commands ended). An error is logged; the container is removed all the same.
   */
  beforeRemove?: (container: {
    id: string;
    labels: Readonly<Record<string, string>>;
  }) => Promise<void>;
  /** Logger. @default a logger that drops everything */
  logger?: Logger;
}

/** What one sweep removed. */
export interface ReapResult {
  /** Ids of the removed containers. */
  containers: string[];
  /** Names of the removed volumes. */
  volumes: string[];
  /** Objects that could not be removed (retried next sweep). */
  failures: number;
}

/**
 * Removes the containers and volumes of one host of one cluster whose owner is gone: at start and
 * then every `intervalMs`. It finds them by the `troupe.*` labels alone, so it also cleans up after
 * a node agent that was `kill -9`ed. A volume goes when its sandbox has no container left and it
 * is older than `minAgeMs`, or with its orphaned container.
 */
export class Reaper {
  /** Validated settings. */
  readonly config: ReaperConfig;
  private readonly docker: Docker;
  private readonly isOwned: ReaperOptions['isOwned'];
  private readonly livePoolIds: ReaperOptions['livePoolIds'];
  private readonly beforeRemove: ReaperOptions['beforeRemove'];
  private readonly log: Logger;
  private readonly schedule: PeriodicSweep<ReapResult>;

  constructor(options: ReaperOptions) {
    const { docker, isOwned, livePoolIds, beforeRemove, logger, ...rest } = options;
    this.config = parseWith(ReaperConfigSchema, rest, { prefix: 'options' });
    this.docker = docker;
    this.isOwned = isOwned;
    this.livePoolIds = livePoolIds;
    this.beforeRemove = beforeRemove;
    this.log = (logger ?? noopLogger).child({
      component: 'reaper',
      cluster: this.config.cluster,
      hostId: this.config.host,
    });
    this.schedule = new PeriodicSweep(
      (signal) => this.doSweep(signal),
      this.config.intervalMs,
      this.log,
    );
  }

  /** A first sweep now, then one every `intervalMs` until {@link stop}. */
  start(options: { signal?: AbortSignal } = {}): Promise<ReapResult> {
    return this.schedule.start(options);
  }

  /** Stops the periodic sweeps and waits for one in flight. */
  stop(): Promise<void> {
    return this.schedule.stop();
  }

  /** One sweep (concurrent calls share it). */
  sweep(options: { signal?: AbortSignal } = {}): Promise<ReapResult> {
    return this.schedule.sweep(options);
  }

  private async owned(
    labels: Record<string, string>,
    cache: Map<string, Promise<boolean>>,
    pools: Set<string> | undefined,
  ): Promise<boolean> {
    const pool = labels[TroupeLabel.POOL];
    if (pool !== undefined && pools !== undefined) return pools.has(pool);
    const actor = labels[TroupeLabel.ACTOR] ?? '';
    let answer = cache.get(actor);
    if (answer === undefined) {
      answer = Promise.resolve()
        .then(() => this.isOwned(actor, labels))
        .catch((err: unknown) => {
          this.log.warn({ err, actor }, 'ownership check failed: keeping its objects');
          return true;
        });
      cache.set(actor, answer);
    }
    return answer;
  }

  private async doSweep(signal?: AbortSignal): Promise<ReapResult> {
    const { cluster, host, minAgeMs } = this.config;
    const filters = { label: managedLabelFilters(cluster, host) };
    const now = Date.now();
    const cache = new Map<string, Promise<boolean>>();
    const pools = this.livePoolIds ? new Set(this.livePoolIds()) : undefined;
    const result: ReapResult = { containers: [], volumes: [], failures: 0 };
    let containers: Docker.ContainerInfo[];
    let volumes: Docker.VolumeInspectInfo[];
    try {
      containers = await this.docker.listContainers({ all: true, filters, abortSignal: signal });
    } catch (err) {
      throw dockerError('list managed containers', err);
    }
    const liveSandboxes = new Set<string>();
    for (const c of containers) {
      const labels = c.Labels ?? {};
      const sandbox = labels[TroupeLabel.SANDBOX] ?? '';
      const young = now - c.Created * 1000 < minAgeMs;
      if (young || (await this.owned(labels, cache, pools))) {
        liveSandboxes.add(sandbox);
        continue;
      }
      await this.beforeRemove?.({ id: c.Id, labels }).catch((err: unknown) => {
        this.log.warn({ err, container: c.Id.slice(0, 12) }, 'could not read an orphan first');
      });
      try {
        await this.docker.getContainer(c.Id).remove({ force: true, v: true, abortSignal: signal });
        result.containers.push(c.Id);
        this.log.info(
          { container: c.Id.slice(0, 12), actor: labels[TroupeLabel.ACTOR], sandbox },
          'reaped orphaned container',
        );
      } catch (err) {
        if (dockerStatus(err) === 404) continue;
        result.failures += 1;
        liveSandboxes.add(sandbox);
        this.log.warn({ err, container: c.Id.slice(0, 12) }, 'could not remove orphaned container');
      }
    }
    try {
      volumes = (await this.docker.listVolumes({ filters, abortSignal: signal })).Volumes ?? [];
    } catch (err) {
      throw dockerError('list managed volumes', err);
    }
    for (const v of volumes) {
      const labels = v.Labels ?? {};
      const sandbox = labels[TroupeLabel.SANDBOX] ?? '';
      if (liveSandboxes.has(sandbox)) continue;
      const createdAt = Date.parse((v as { CreatedAt?: string }).CreatedAt ?? '');
      if (Number.isFinite(createdAt) && now - createdAt < minAgeMs) continue;
      try {
        await this.docker.getVolume(v.Name).remove({ abortSignal: signal });
        result.volumes.push(v.Name);
        this.log.info(
          { volume: v.Name, actor: labels[TroupeLabel.ACTOR] },
          'reaped orphaned volume',
        );
      } catch (err) {
        if (dockerStatus(err) === 404) continue;
        result.failures += 1;
        this.log.warn({ err, volume: v.Name }, 'could not remove orphaned volume');
      }
    }
    if (result.containers.length + result.volumes.length > 0) {
      this.log.info(
        { containers: result.containers.length, volumes: result.volumes.length },
        'sweep removed orphans',
      );
    }
    return result;
  }
}
