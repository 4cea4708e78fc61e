import {
  delay,
  ErrorCode,
  type Logger,
  noopLogger,
  parseWith,
  throwIfAborted,
  TroupeError,
} from '@troupe/proto';
import type Docker from 'dockerode';
import { z } from 'zod';
import {
  type CreateEnvironmentOptions,
  type Environment,
  type EnvironmentBackend,
  type EnvironmentSpec,
  GOLDEN_SNAPSHOT,
} from './environment';
import type { AgentChannel } from './internal/agent-channel';
import { openDockerAgentChannel } from './internal/docker-agent-channel';
import { AgentEnvironment } from './internal/agent-environment';
import {
  createManagedContainer,
  lockedDownHostConfig,
  managedLabels,
  removeContainerAndVolumes,
  tmpfsOptions,
} from './internal/container-policy';
import { dockerError, dockerStatus } from './internal/docker-errors';
import { randomId } from './internal/ids';
import { TroupeLabel } from './labels';

const USER = '1000:1000';
const AGENT_CMD = ['python3', '/opt/troupe/agent.py'];

/** Validated settings of a {@link DesktopEnvironmentBackend}. */
export const DesktopEnvironmentBackendConfigSchema = z
  .object({
    /** Deadline for a started container's display and window manager to come up. @default 60000 */
    readyTimeoutMs: z.int().min(1).default(60_000),
    /** Size of the `/tmp` tmpfs (X sockets, application scratch). @default 256 */
    tmpfsMb: z.int().min(16).default(256),
  })
  .strict();

/** Validated settings of a {@link DesktopEnvironmentBackend}. */
export type DesktopEnvironmentBackendConfig = z.output<
  typeof DesktopEnvironmentBackendConfigSchema
>;

/** Options of {@link DesktopEnvironmentBackend}. */
export interface DesktopEnvironmentBackendOptions extends z.input<
  typeof DesktopEnvironmentBackendConfigSchema
> {
  /** A dockerode client. */
  docker: Docker;
  /** Logger. @default a logger that drops everything */
  logger?: Logger;
}

const PingSchema = z.object({ width: z.number(), height: z.number(), wm: z.boolean() });

/**
 * The `desktop` environment kind: a Docker container of the `troupe-desktop` image (Xvfb, openbox,
 * xterm, mousepad, gnumeric, pcmanfm) under the sandbox policy — no network, uid 1000, read-only
 * root, `CapDrop: ALL`, `no-new-privileges`, memory/CPU/pids limits, docker-init as PID 1 — with
 * the home directory and the snapshots on two labelled named volumes, so the {@link Reaper}
 * removes an orphan exactly as it removes a sandbox's. One persistent agent per container
 * (`python3 /opt/troupe/agent.py` over a long-lived `docker exec`) serves every call.
 *
 * Snapshots are tars of the home directory (documents, `~/.config` — application settings, with
 * GSettings on its keyfile backend) on the snapshots volume; restoring one first ends every
 * process started after the session (applications, commands), so the screen returns to the bare
 * desktop: process memory (an unsaved document) is not part of a snapshot.
 */
export class DesktopEnvironmentBackend implements EnvironmentBackend {
  readonly kind = 'desktop' as const;
  /** Validated settings. */
  readonly config: DesktopEnvironmentBackendConfig;
  private readonly docker: Docker;
  private readonly log: Logger;
  private readonly live = new Set<Environment>();

  constructor(options: DesktopEnvironmentBackendOptions) {
    const { docker, logger, ...rest } = options;
    this.docker = docker;
    this.config = parseWith(DesktopEnvironmentBackendConfigSchema, rest, { prefix: 'options' });
    this.log = (logger ?? noopLogger).child({ component: 'desktop-environment-backend' });
  }

  /** Environments created by this instance and not destroyed yet. */
  get size(): number {
    return this.live.size;
  }

  async create(
    spec: EnvironmentSpec,
    options: CreateEnvironmentOptions = {},
  ): Promise<Environment> {
    const { signal } = options;
    throwIfAborted(signal);
    const id = randomId('env').slice(0, 16);
    const labels = managedLabels(spec.labels, id);
    const volumes = [
      { name: `troupe-${id}-home`, target: '/home/troupe', role: 'workspace' },
      { name: `troupe-${id}-snap`, target: '/snapshots', role: 'volume' },
    ];
    const name = `troupe-${spec.labels.cluster}-${id}`;
    const log = this.log.child({ environment: id, actor: spec.labels.actor });
    let container: Docker.Container | undefined;
    let channel: AgentChannel | undefined;
    const teardown = (abort?: AbortSignal): Promise<void> =>
      removeContainerAndVolumes(this.docker, container ?? name, volumes, abort);
    try {
      container = await createManagedContainer(
        this.docker,
        {
          name,
          Image: spec.image,
          User: USER,
          Hostname: 'desktop',
          Env: [`TROUPE_SCREEN=${spec.width}x${spec.height}`],
          Labels: { ...labels, [TroupeLabel.ROLE]: 'environment' },
          NetworkDisabled: true,
          HostConfig: lockedDownHostConfig({
            network: 'none',
            readOnlyRoot: true,
            memoryMb: spec.memoryMb,
            cpus: spec.cpus,
            pidsLimit: spec.pidsLimit,
            tmpfs: { '/tmp': tmpfsOptions(this.config.tmpfsMb) },
            volumes,
          }),
        },
        volumes,
        labels,
        signal,
      );
      await container.start({ abortSignal: signal });
      channel = await openDockerAgentChannel(this.docker, container, AGENT_CMD, USER);
      await this.waitReady(channel, spec, signal);
      const env = new AgentEnvironment({
        id,
        kind: 'desktop',
        backendId: container.id,
        screen: { width: spec.width, height: spec.height },
        channel,
        teardown: async (abort) => {
          try {
            await teardown(abort);
          } finally {
            this.live.delete(env);
          }
        },
      });
      this.live.add(env);
      await env.snapshot(GOLDEN_SNAPSHOT, { signal });
      log.info({ image: spec.image }, 'desktop environment ready');
      return env;
    } catch (err) {
      channel?.close();
      await teardown().catch(() => undefined);
      if (dockerStatus(err) === 404 && container === undefined) {
        throw new TroupeError(
          ErrorCode.NOT_FOUND,
          `image ${spec.image} is not present on this engine; no registry is used: build it with ` +
            'deploy/images/build.sh desktop',
          { cause: err, details: { field: 'spec.image', image: spec.image } },
        );
      }
      log.warn({ err }, 'desktop environment creation failed');
      throw dockerError(`create desktop environment for ${spec.labels.actor}`, err);
    }
  }

  /** Pings the agent until the display answers and a window manager runs. */
  private async waitReady(
    channel: AgentChannel,
    spec: EnvironmentSpec,
    signal?: AbortSignal,
  ): Promise<void> {
    const deadline = Date.now() + this.config.readyTimeoutMs;
    const timeout = AbortSignal.timeout(this.config.readyTimeoutMs);
    const wait = signal ? AbortSignal.any([signal, timeout]) : timeout;
    for (;;) {
      const reply = PingSchema.parse(await channel.request('ping', {}, wait));
      if (reply.width !== spec.width || reply.height !== spec.height) {
        throw new TroupeError(
          ErrorCode.INTERNAL,
          `the display is ${reply.width}x${reply.height}, not the ${spec.width}x${spec.height} asked`,
        );
      }
      if (reply.wm) return;
      if (Date.now() > deadline) {
        throw new TroupeError(ErrorCode.TIMEOUT, 'the window manager did not start in time');
      }
      await delay(50, wait);
    }
  }

  async close(options: { signal?: AbortSignal } = {}): Promise<void> {
    const results = await Promise.allSettled([...this.live].map((e) => e.destroy(options)));
    const failed = results.filter((r) => r.status === 'rejected').length;
    if (failed > 0) this.log.warn({ failed }, 'some environments could not be destroyed on close');
  }
}
