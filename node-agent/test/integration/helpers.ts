import os from 'node:os';
import type Docker from 'dockerode';
import { ensureDocker, randomClusterName } from '@troupe/testkit';
import {
  DockerSandboxBackend,
  ImageManager,
  managedLabelFilters,
  type SandboxSpecOptions,
} from '@troupe/node-agent';

/** The host label every integration test uses (clusters isolate tests from each other). */
export const HOST = 'test-host';

/** Everything one integration test file needs. */
export interface DockerFixture {
  docker: Docker;
  cluster: string;
  backend: DockerSandboxBackend;
  /** `troupe-busybox:<hash>`: built from deploy/images/busybox on first use (about 1 s). */
  busybox: string;
  /** A spec for the busybox image with this file's labels. */
  spec(overrides?: Partial<SandboxSpecOptions>, actor?: string): SandboxSpecOptions;
}

let busyboxRef: Promise<string> | undefined;

/** Docker, a fresh cluster name, a backend and the busybox image. */
export async function dockerFixture(
  backendOptions: Partial<ConstructorParameters<typeof DockerSandboxBackend>[0]> = {},
): Promise<DockerFixture> {
  const docker = await ensureDocker();
  busyboxRef ??= new ImageManager({ docker }).ensure('busybox').then((img) => img.ref);
  const busybox = await busyboxRef;
  const cluster = randomClusterName();
  const backend = new DockerSandboxBackend({ docker, ...backendOptions });
  return {
    docker,
    cluster,
    backend,
    busybox,
    spec: (overrides = {}, actor = 'sandbox/test') => ({
      image: busybox,
      ...overrides,
      labels: { cluster, host: HOST, actor, ...overrides.labels },
    }),
  };
}

/** Containers and volumes that still carry `cluster`'s labels. */
export async function leftovers(
  docker: Docker,
  cluster: string,
): Promise<{ containers: string[]; volumes: string[] }> {
  const filters = { label: managedLabelFilters(cluster) };
  const containers = await docker.listContainers({ all: true, filters });
  const volumes = (await docker.listVolumes({ filters })).Volumes ?? [];
  return { containers: containers.map((c) => c.Id), volumes: volumes.map((v) => v.Name) };
}

/** Removes whatever a failed test left behind with `cluster`'s labels (a safety net only). */
export async function removeLeftovers(docker: Docker, cluster: string): Promise<void> {
  const left = await leftovers(docker, cluster);
  await Promise.all(
    left.containers.map((id) =>
      docker
        .getContainer(id)
        .remove({ force: true, v: true })
        .catch(() => undefined),
    ),
  );
  await Promise.all(
    left.volumes.map((name) =>
      docker
        .getVolume(name)
        .remove()
        .catch(() => undefined),
    ),
  );
}

/** The host's address on Docker's default bridge (docker0): what a bridged container reaches it by. */
export async function dockerBridgeGateway(docker: Docker): Promise<string> {
  const docker0 = os.networkInterfaces().docker0?.find((a) => a.family === 'IPv4');
  if (docker0) return docker0.address;
  const info = (await docker.getNetwork('bridge').inspect()) as {
    IPAM?: { Config?: { Gateway?: string; Subnet?: string }[] };
  };
  const config = info.IPAM?.Config?.[0];
  if (config?.Gateway) return config.Gateway;
  // The default bridge takes the subnet's first address (172.17.0.0/16 -> 172.17.0.1).
  const base = config?.Subnet?.split('/')[0]?.split('.');
  if (base?.length !== 4) throw new Error('cannot tell the address of the docker bridge');
  return [...base.slice(0, 3), String(Number(base[3]) + 1)].join('.');
}

export { randomClusterName };
