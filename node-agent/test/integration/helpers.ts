import { createHash } from 'node:crypto';
import os from 'node:os';
import type Docker from 'dockerode';
import { ensureDocker, randomClusterName } from '@troupe/testkit';
import {
  DockerSandboxBackend,
  ImageManager,
  managedLabelFilters,
  type SandboxSpecOptions,
} from '@troupe/node-agent';
import { type TroupeError } from '@troupe/proto';
import tar from 'tar-stream';

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

/** The rejection of `p` (fails the test if it resolves). */
export async function rejection(p: Promise<unknown>): Promise<TroupeError> {
  try {
    await p;
  } catch (err) {
    return err as TroupeError;
  }
  throw new Error('expected a rejection');
}

/** A tar of text files. */
export async function tarOf(files: Record<string, string>): Promise<Buffer> {
  const pack = tar.pack();
  for (const [name, content] of Object.entries(files)) {
    pack.entry({ name, mode: 0o755 }, Buffer.from(content));
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack as unknown as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}

/** sha256 hex. */
export const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

export { randomClusterName };
