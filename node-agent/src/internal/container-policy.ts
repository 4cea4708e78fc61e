import { raceSignal, throwIfAborted } from '@troupe/proto';
import type Docker from 'dockerode';
import { TroupeLabel } from '../labels';
import { ignoreNotFound } from './docker-errors';

// The one place that says how a Troupe container is locked down, labelled and removed. Sandboxes
// and desktop environments both go through it, so "the same limits and reaping as sandboxes"
// holds by construction rather than by two copies kept in step.

const MiB = 1024 * 1024;

/** Who owns a container: the labels the reaper and the orphan sweep key on. */
export interface ContainerOwner {
  cluster: string;
  host: string;
  actor: string;
  job: string;
}

/** A named volume the container mounts; `role` is its `troupe.role` label. */
export interface ManagedVolume {
  name: string;
  target: string;
  role: string;
}

/** The labels of a managed container (and, with its role, of each of its volumes). */
export function managedLabels(
  owner: ContainerOwner,
  id: string,
  policyExceptions: readonly string[] = [],
): Record<string, string> {
  return {
    [TroupeLabel.MANAGED]: 'true',
    [TroupeLabel.CLUSTER]: owner.cluster,
    [TroupeLabel.HOST]: owner.host,
    [TroupeLabel.ACTOR]: owner.actor,
    [TroupeLabel.JOB]: owner.job,
    [TroupeLabel.SANDBOX]: id,
    [TroupeLabel.POLICY_EXCEPTIONS]: policyExceptions.join(','),
  };
}

/** A `/tmp`-style tmpfs mount option string of `sizeMb`. */
export function tmpfsOptions(sizeMb: number): string {
  return `rw,nosuid,nodev,size=${sizeMb}m,mode=1777`;
}

/** What {@link lockedDownHostConfig} varies; everything else is fixed policy. */
export interface ContainerLimits {
  /** `none` unless a policy exception allows more. */
  network: string;
  readOnlyRoot: boolean;
  memoryMb: number;
  cpus: number;
  pidsLimit: number;
  /** Mount target → tmpfs options ({@link tmpfsOptions}). */
  tmpfs: Record<string, string>;
  volumes: readonly ManagedVolume[];
}

/**
 * The host config of every Troupe container: an init process, no capabilities, no privilege
 * escalation, memory without swap, a CPU and PID cap, a private IPC namespace, no restarts and a
 * small log (programs' output is captured by exec, not by the log driver).
 */
export function lockedDownHostConfig(limits: ContainerLimits): Docker.HostConfig {
  return {
    Init: true,
    NetworkMode: limits.network,
    ReadonlyRootfs: limits.readOnlyRoot,
    CapDrop: ['ALL'],
    CapAdd: [],
    SecurityOpt: ['no-new-privileges'],
    Privileged: false,
    Memory: limits.memoryMb * MiB,
    MemorySwap: limits.memoryMb * MiB,
    NanoCpus: Math.round(limits.cpus * 1e9),
    PidsLimit: limits.pidsLimit,
    Tmpfs: limits.tmpfs,
    Mounts: limits.volumes.map((v) => ({ Type: 'volume', Source: v.name, Target: v.target })),
    IpcMode: 'private',
    RestartPolicy: { Name: 'no' },
    AutoRemove: false,
    LogConfig: { Type: 'json-file', Config: { 'max-size': '64k', 'max-file': '1' } },
  };
}

/** Creates the volumes, each labelled as its container is plus its role. */
async function createManagedVolumes(
  docker: Docker,
  volumes: readonly ManagedVolume[],
  labels: Record<string, string>,
): Promise<void> {
  await Promise.all(
    volumes.map((v) =>
      docker.createVolume({ Name: v.name, Labels: { ...labels, [TroupeLabel.ROLE]: v.role } }),
    ),
  );
}

/**
 * Creates the managed `volumes` and then the container `create` describes (named: `create.name`),
 * without aborting either request: Docker carries on with a create whose client has gone, and a
 * container (or volume) made after the caller's cleanup stayed until the reaper's next sweep
 * (chaos seed 8225: a sandbox fenced while its container was being created left it for 90 s). An
 * abort of `signal` still ends the wait at once; what the engine makes after it is removed as
 * soon as the engine answers.
 */
export async function createManagedContainer(
  docker: Docker,
  create: Docker.ContainerCreateOptions & { name: string },
  volumes: readonly ManagedVolume[],
  labels: Record<string, string>,
  signal?: AbortSignal,
): Promise<Docker.Container> {
  throwIfAborted(signal);
  const making = (async () => {
    await createManagedVolumes(docker, volumes, labels);
    return docker.createContainer(create);
  })();
  try {
    return await raceSignal(making, signal);
  } catch (err) {
    if (signal?.aborted) {
      void making
        .then(
          (late) => removeContainerAndVolumes(docker, late, volumes),
          () => removeContainerAndVolumes(docker, create.name, volumes),
        )
        .catch(() => undefined);
    }
    throw err;
  }
}

/**
 * Removes a container (by name when its create was aborted before the id came back) with its
 * anonymous volumes, then the named ones; anything already gone is fine.
 */
export async function removeContainerAndVolumes(
  docker: Docker,
  container: Docker.Container | string,
  volumes: readonly Pick<ManagedVolume, 'name'>[],
  signal?: AbortSignal,
): Promise<void> {
  const c = typeof container === 'string' ? docker.getContainer(container) : container;
  await ignoreNotFound(() => c.remove({ force: true, v: true, abortSignal: signal }));
  await Promise.all(volumes.map((v) => ignoreNotFound(() => docker.getVolume(v.name).remove())));
}
