import {
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
  createManagedContainer,
  lockedDownHostConfig,
  managedLabels,
  removeContainerAndVolumes,
  tmpfsOptions,
} from './internal/container-policy';
import { isDaemonUnreachable, waitForDaemon } from './internal/docker-daemon';
import { dockerError, dockerStatus, ignoreNotFound } from './internal/docker-errors';
import { BOOT_SCRIPT, DockerSandbox } from './internal/docker-sandbox';
import { ExecEndLog } from './internal/exec-end-log';
import { randomId } from './internal/ids';
import { TroupeLabel } from './labels';
import type { Sandbox, SandboxSnapshot } from './sandbox';
import type { CreateSandboxOptions, ForkSandboxOptions, SandboxBackend } from './sandbox-backend';
import { parseSandboxSpec, type SandboxSpec, type SandboxSpecOptions } from './sandbox-spec';

const MiB = 1024 * 1024;

/** Validated numeric settings of a {@link DockerSandboxBackend}. */
export const DockerSandboxBackendConfigSchema = z
  .object({
    /** Foreground exec timeout when the caller gives none. @default 60000 */
    defaultExecTimeoutMs: z.int().min(1).default(60_000),
    /** Output kept per stream of an exec (head + tail). @default 1048576 */
    maxOutputBytes: z.int().min(0).default(MiB),
    /** Deadline for a started container to become ready. @default 60000 */
    readyTimeoutMs: z.int().min(1).default(60_000),
    /**
     * How long a killed process tree may take to die before the sandbox is hard-reset. Above
     * the engine's own 2 s wait for an exec's output to close.
     * @default 3000
     */
    killGraceMs: z.int().min(1).default(3_000),
    /**
     * How long a create that finds the Docker daemon unreachable (its socket gone or refusing: a
     * daemon restarting) waits for it to answer again before it fails; it then creates afresh,
     * after removing what the failed attempt may have left. 0 fails at once.
     * @default 60000
     */
    daemonWaitMs: z.int().min(0).default(60_000),
  })
  .strict();

/** Validated settings of a {@link DockerSandboxBackend}. */
export type DockerSandboxBackendConfig = z.output<typeof DockerSandboxBackendConfigSchema>;

/** Options of {@link DockerSandboxBackend}. */
export interface DockerSandboxBackendOptions extends z.input<
  typeof DockerSandboxBackendConfigSchema
> {
  /** A dockerode client (e.g. `new Docker()` or the testkit's `ensureDocker()`). */
  docker: Docker;
  /** Logger. @default a logger that drops everything */
  logger?: Logger;
}

/**
 * Sandboxes as Docker containers under the Troupe policy: `NetworkMode: none`, a numeric
 * non-root user, read-only root, a per-sandbox named volume at the workspace (Docker copies the
 * image's `/workspace` ownership into it, which is what makes it writable for uid 1000 without any
 * root step), a `/tmp` tmpfs, memory (no swap), CPU and pids limits, `CapDrop: ALL`,
 * `no-new-privileges`, docker-init as PID 1, no Docker socket and no host environment. Every
 * container and volume carries the `troupe.*` labels the {@link Reaper} works from.
 */
export class DockerSandboxBackend implements SandboxBackend {
  readonly kind = 'docker' as const;
  /** The dockerode client. */
  readonly docker: Docker;
  /** Validated settings. */
  readonly config: DockerSandboxBackendConfig;
  private readonly log: Logger;
  private readonly live = new Set<DockerSandbox>();
  /** Docker's record of the sandboxes' exec ends, read when a daemon restart took one. */
  private readonly execEnds: ExecEndLog;

  constructor(options: DockerSandboxBackendOptions) {
    const { docker, logger, ...rest } = options;
    if (docker === undefined || docker === null) {
      throw new TroupeError(ErrorCode.INVALID_ARGUMENT, '`docker`: a dockerode client is required');
    }
    this.docker = docker;
    this.config = parseWith(DockerSandboxBackendConfigSchema, rest, { prefix: 'options' });
    this.log = (logger ?? noopLogger).child({ component: 'docker-sandbox-backend' });
    this.execEnds = new ExecEndLog(docker, this.log);
  }

  /** Sandboxes created by this instance and not destroyed yet. */
  get size(): number {
    return this.live.size;
  }

  /**
   * Creates a sandbox. When the daemon cannot be reached (a restart removes its socket for a few
   * seconds), waits up to `daemonWaitMs` for it to answer again, removes what the failed attempt
   * may have left, and creates afresh: a daemon restart is the node's outage, and failing the
   * create at once failed the task that asked for it (the chaos harness's `docker-restart`).
   */
  async create(
    specOptions: SandboxSpecOptions | SandboxSpec,
    options: CreateSandboxOptions = {},
  ): Promise<Sandbox> {
    const spec = parseSandboxSpec(specOptions);
    const until = Date.now() + this.config.daemonWaitMs;
    for (;;) {
      throwIfAborted(options.signal);
      const id = randomId('sbx').slice(0, 16);
      try {
        return await this.createAs(id, spec, options);
      } catch (err) {
        if (!isDaemonUnreachable(err) || Date.now() >= until) throw err;
        this.log.warn(
          { err, sandbox: id, actor: spec.labels.actor },
          'Docker daemon unreachable: creating again once it answers',
        );
        if (!(await waitForDaemon(this.docker, until, options.signal))) throw err;
        const { name, volumes } = objectNames(id, spec);
        await removeContainerAndVolumes(this.docker, name, volumes).catch((e: unknown) =>
          this.log.warn(
            { err: e, sandbox: id },
            'could not remove a failed create (the reaper will)',
          ),
        );
      }
    }
  }

  private async createAs(
    id: string,
    spec: SandboxSpec,
    options: CreateSandboxOptions,
  ): Promise<Sandbox> {
    const { signal } = options;
    const createdAt = Date.now();
    const labels = managedLabels(spec.labels, id, spec.policyExceptions);
    if (options.poolId !== undefined) labels[TroupeLabel.POOL] = options.poolId;
    const { name, volumes } = objectNames(id, spec);
    const tmpfs: Record<string, string> = { '/tmp': tmpfsOptions(spec.tmpfsMb) };
    for (const [target, sizeMb] of Object.entries(spec.tmpfs)) tmpfs[target] = tmpfsOptions(sizeMb);
    const log = this.log.child({ sandbox: id, actor: spec.labels.actor, jobId: spec.labels.job });
    let container: Docker.Container | undefined;
    const cleanup = (): Promise<void> =>
      // By name: an aborted create may have made the container without telling us its id.
      removeContainerAndVolumes(this.docker, container ?? name, volumes).catch(() => undefined);
    let sandbox: DockerSandbox | undefined;
    try {
      container = await createManagedContainer(
        this.docker,
        {
          name,
          Image: spec.image,
          Entrypoint: ['/bin/sh', '-c', BOOT_SCRIPT, 'troupe-boot', spec.workdir],
          Cmd: [],
          User: spec.user,
          WorkingDir: spec.workdir,
          Hostname: 'sandbox',
          Env: Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
          Labels: { ...labels, [TroupeLabel.ROLE]: 'sandbox' },
          NetworkDisabled: spec.network === 'none',
          AttachStdin: false,
          AttachStdout: false,
          AttachStderr: false,
          OpenStdin: false,
          Tty: false,
          HostConfig: lockedDownHostConfig({
            network: spec.network,
            readOnlyRoot: spec.readOnlyRoot,
            memoryMb: spec.memoryMb,
            cpus: spec.cpus,
            pidsLimit: spec.pidsLimit,
            tmpfs,
            volumes,
          }),
        },
        volumes,
        labels,
        signal,
      );
      const info = await container.inspect({ abortSignal: signal });
      // Following before the sandbox runs anything: a failure is logged and tried again later.
      await this.execEnds.start();
      sandbox = new DockerSandbox(
        {
          docker: this.docker,
          logger: log,
          defaultExecTimeoutMs: this.config.defaultExecTimeoutMs,
          maxOutputBytes: this.config.maxOutputBytes,
          readyTimeoutMs: this.config.readyTimeoutMs,
          killGraceMs: this.config.killGraceMs,
          daemonWaitMs: this.config.daemonWaitMs,
          execEnds: this.execEnds,
          onDestroyed: (s) => this.live.delete(s),
        },
        {
          id,
          spec,
          container,
          containerId: container.id,
          imageId: info.Image,
          volumes: volumes.map(({ name, target }) => ({ name, target })),
          poolId: options.poolId,
          createdAt,
        },
      );
      this.live.add(sandbox);
      await sandbox.start(signal);
      if (options.waitReady ?? true) await sandbox.ready({ signal });
    } catch (err) {
      if (sandbox) {
        await sandbox.destroy().catch(() => undefined);
      } else {
        await cleanup();
      }
      if (dockerStatus(err) === 404 && container === undefined) {
        throw new TroupeError(
          ErrorCode.NOT_FOUND,
          `image ${spec.image} is not present on this engine; no registry is used: build it with ` +
            `deploy/images/build.sh <name> (or ImageManager.ensure)`,
          { cause: err, details: { field: 'spec.image', image: spec.image } },
        );
      }
      log.warn({ err }, 'sandbox creation failed');
      throw dockerError(`create sandbox for ${spec.labels.actor}`, err);
    }
    log.info(
      { image: spec.image, policyExceptions: spec.policyExceptions, poolId: options.poolId },
      'sandbox created',
    );
    return sandbox;
  }

  async fork(snapshot: SandboxSnapshot, options: ForkSandboxOptions = {}): Promise<Sandbox> {
    if (snapshot.backend !== 'docker') {
      throw new TroupeError(
        ErrorCode.INVALID_ARGUMENT,
        '`snapshot`: was taken by the process backend, not Docker',
      );
    }
    const { policyExceptions: _p, ...spec } = snapshot.spec;
    return this.create(
      {
        ...spec,
        image: snapshot.imageId,
        // The snapshot already holds the seeded (and since changed) workspace.
        files: {},
        labels: { ...snapshot.spec.labels, ...options.labels },
      },
      { waitReady: options.waitReady, signal: options.signal },
    );
  }

  async removeSnapshot(
    snapshot: SandboxSnapshot,
    options: { signal?: AbortSignal } = {},
  ): Promise<void> {
    try {
      // Removing the tag (forced) deletes the image, or only untags it while forks still use it.
      await ignoreNotFound(() =>
        this.docker.getImage(snapshot.ref).remove({ force: true, abortSignal: options.signal }),
      );
    } catch (err) {
      throw dockerError(`remove snapshot ${snapshot.ref}`, err);
    }
  }

  async close(options: { signal?: AbortSignal } = {}): Promise<void> {
    const all = [...this.live];
    const results = await Promise.allSettled(all.map((s) => s.destroy(options)));
    const failed = results.filter((r) => r.status === 'rejected').length;
    if (failed > 0) this.log.warn({ failed }, 'some sandboxes could not be destroyed on close');
    this.execEnds.close();
  }
}

/** The container name and volumes of sandbox `id` (the same for every attempt that uses `id`). */
function objectNames(id: string, spec: SandboxSpec) {
  return {
    name: `troupe-${spec.labels.cluster}-${id}`,
    volumes: [
      { name: `troupe-${id}-ws`, target: spec.workdir, role: 'workspace' },
      ...spec.volumes.map((target, i) => ({ name: `troupe-${id}-v${i}`, target, role: 'volume' })),
    ],
  };
}
