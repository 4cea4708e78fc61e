import { execFile } from 'node:child_process';
import { access } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ErrorCode, type Logger, TroupeError } from '@troupe/proto';
import type { NodeAgentConfig } from './config';
import type { HostResources } from './host-capacity';
import { type AccelDecision, probeAccel } from './vm-accel-probe';
import { vmCapacity, VmEnvironmentBackend } from './vm-environment-backend';
import { type VmReapResult, VmReaper } from './vm-reaper';

const execFileAsync = promisify(execFile);

/** The label a host offering `vm` environments carries (placement hints match it). */
export const VM_LABEL = 'environment.vm';
/** The label naming its accelerator (`kvm` or `tcg`). */
export const VM_ACCEL_LABEL = 'environment.vm.accel';

/** What a node agent runs for the `vm` kind. */
export interface VmHost {
  backend: VmEnvironmentBackend;
  reaper: VmReaper;
  accel: AccelDecision;
  /** Labels to advertise. */
  labels: Record<string, string>;
  /** The first sweep's result. */
  swept: VmReapResult;
}

/**
 * Sets up the `vm` environment kind when the host can run it (QEMU answers and the VM image is
 * built; `enabled: on` turns a missing piece into an error): sweeps VMs a dead node agent left,
 * chooses the accelerator (probe, cached in the state dir), sizes the caps from the host's memory
 * and cores, and starts the warm set. Resolves `undefined` when `vm` is not offered.
 */
export async function startVmHost(
  config: NodeAgentConfig['vm'],
  context: {
    cluster: string;
    hostId: string;
    resources: HostResources;
    reaper: { intervalMs: number; minAgeMs: number };
    log: Logger;
    signal?: AbortSignal;
  },
): Promise<VmHost | undefined> {
  const { log } = context;
  if (config.enabled === 'off') return undefined;
  const stateDir = config.stateDir ?? join(os.tmpdir(), 'troupe-vms');
  const imageDir = join(config.imageDir, 'vm-desktop');
  const image = { kernel: join(imageDir, 'vmlinuz'), initrd: join(imageDir, 'initrd.img') };
  const missing: string[] = [];
  await execFileAsync(config.qemuBinary, ['--version'], { signal: context.signal }).catch(() =>
    missing.push(config.qemuBinary),
  );
  for (const f of [image.kernel, image.initrd, join(imageDir, 'disk.qcow2')]) {
    await access(f).catch(() => missing.push(f));
  }
  if (missing.length > 0) {
    const msg = 'vm environments unavailable: missing ' + missing.join(', ');
    if (config.enabled === 'on') {
      throw new TroupeError(
        ErrorCode.UNAVAILABLE,
        `${msg} (build with deploy/images/build-vm.sh)`,
        {
          details: { field: 'vm.enabled', missing },
        },
      );
    }
    log.info({ missing }, 'vm environments not offered (QEMU or the VM image is missing)');
    return undefined;
  }
  const reaper = new VmReaper({
    stateDir,
    cluster: context.cluster,
    host: context.hostId,
    intervalMs: context.reaper.intervalMs,
    minAgeMs: context.reaper.minAgeMs,
    logger: log,
  });
  const swept = await reaper.start(context.signal ? { signal: context.signal } : {});
  const accel: AccelDecision =
    config.accel === 'auto'
      ? await probeAccel({
          qemuBinary: config.qemuBinary,
          image,
          deadlineMs: config.probeDeadlineMs,
          cacheFile: join(stateDir, 'accel-probe.json'),
          logger: log,
          ...(context.signal ? { signal: context.signal } : {}),
        })
      : { accel: config.accel, kvm: config.accel === 'kvm' ? 'booted' : 'no-device' };
  const maxLive = config.maxLive ?? vmCapacity(context.resources.memMb, 1024);
  const maxBoots =
    config.maxBoots ??
    (accel.accel === 'kvm'
      ? context.resources.cpu
      : Math.max(1, Math.floor(context.resources.cpu / 2)));
  const backend = new VmEnvironmentBackend({
    imageDir: config.imageDir,
    stateDir,
    qemuBinary: config.qemuBinary,
    qemuImgBinary: config.qemuImgBinary,
    accel: accel.accel,
    readyTimeoutMs: config.readyTimeoutMs,
    maxLive,
    maxBoots,
    warm: config.warm,
    owner: { cluster: context.cluster, host: context.hostId },
    logger: log,
  });
  backend.startWarm();
  log.info(
    { accel: accel.accel, kvmProbe: accel.kvm, maxLive, maxBoots, warm: config.warm },
    'vm environments offered',
  );
  return {
    backend,
    reaper,
    accel,
    labels: { [VM_LABEL]: 'true', [VM_ACCEL_LABEL]: accel.accel },
    swept,
  };
}
