import { spawn } from 'node:child_process';
import { access, readFile, realpath, writeFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fromAbortSignal, type Logger, noopLogger } from '@troupe/proto';
import { PROBE_MARKER, probeArgv, type VmImageFiles } from './internal/qemu-argv';
import type { VmAccel } from './vm-accel';

/** How the KVM probe guest fared. */
export type KvmProbeOutcome = 'booted' | 'timeout' | 'failed' | 'no-device';

/** The accelerator chosen and why. */
export interface AccelDecision {
  accel: VmAccel;
  /** The KVM probe's outcome. */
  kvm: KvmProbeOutcome;
  /** How long the probe guest took to print its marker, when it did. */
  probeMs?: number;
}

/**
 * KVM only when the probe guest booted under it: `/dev/kvm` existing proves nothing on a nested
 * (PVM) host, where a stock kernel hangs right after the boot loader.
 */
export function decideAccel(kvm: KvmProbeOutcome): VmAccel {
  return kvm === 'booted' ? 'kvm' : 'tcg';
}

/** Options of {@link probeAccel}. */
export interface ProbeAccelOptions {
  /** `qemu-system-x86_64`. */
  qemuBinary: string;
  /** The kernel and initramfs of a VM image (their initramfs answers `troupe.probe=1`). */
  image: VmImageFiles;
  /** @default '/dev/kvm' */
  kvmDevice?: string;
  /** How long the KVM guest may take to print its marker. @default 15000 */
  deadlineMs?: number;
  /**
   * Where the decision is cached, keyed by kernel and QEMU binary, so later starts skip the probe.
   * None: always probe.
   */
  cacheFile?: string;
  logger?: Logger;
  signal?: AbortSignal;
}

/** Boots the probe guest once under `accel`; resolves with the time to the marker, or the outcome. */
export function bootProbe(
  qemuBinary: string,
  image: VmImageFiles,
  accel: VmAccel,
  deadlineMs: number,
  signal?: AbortSignal,
): Promise<{ outcome: 'booted' | 'timeout' | 'failed'; ms: number; output: string }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(fromAbortSignal(signal));
      return;
    }
    const child = spawn(qemuBinary, probeArgv(image, accel), { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let settled = false;
    const finish = (outcome: 'booted' | 'timeout' | 'failed'): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      child.kill('SIGKILL');
      resolve({ outcome, ms: Date.now() - started, output: output.slice(-1_000) });
    };
    const onAbort = (): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(fromAbortSignal(signal as AbortSignal));
    };
    const timer = setTimeout(() => finish('timeout'), deadlineMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    const onData = (b: Buffer): void => {
      output = (output + b.toString('utf8')).slice(-4_000);
      if (output.includes(PROBE_MARKER)) finish('booted');
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', () => finish('failed'));
    // 'close', not 'exit': on 'exit' the pipes may still hold the marker, not yet read.
    child.once('close', () => finish(output.includes(PROBE_MARKER) ? 'booted' : 'failed'));
  });
}

/**
 * Chooses the accelerator for this host's VMs: boots a tiny probe guest (the image's kernel and
 * busybox initramfs) under KVM with a deadline and uses KVM when its marker appears, TCG
 * otherwise. Without `/dev/kvm` no probe runs. The decision is cached in `cacheFile`.
 */
export async function probeAccel(options: ProbeAccelOptions): Promise<AccelDecision> {
  const log = (options.logger ?? noopLogger).child({ component: 'vm-accel-probe' });
  const key = `${await realpath(options.image.kernel).catch(() => options.image.kernel)}|${options.qemuBinary}`;
  if (options.cacheFile) {
    try {
      const cached = JSON.parse(await readFile(options.cacheFile, 'utf8')) as AccelDecision & {
        key?: string;
      };
      if (cached.key === key && (cached.accel === 'kvm' || cached.accel === 'tcg')) {
        return {
          accel: cached.accel,
          kvm: cached.kvm,
          ...(cached.probeMs ? { probeMs: cached.probeMs } : {}),
        };
      }
    } catch {
      // no cache yet
    }
  }
  let decision: AccelDecision;
  const device = await access(options.kvmDevice ?? '/dev/kvm').then(
    () => true,
    () => false,
  );
  if (!device) {
    decision = { accel: 'tcg', kvm: 'no-device' };
  } else {
    const r = await bootProbe(
      options.qemuBinary,
      options.image,
      'kvm',
      options.deadlineMs ?? 15_000,
      options.signal,
    );
    decision = {
      accel: decideAccel(r.outcome),
      kvm: r.outcome,
      ...(r.outcome === 'booted' ? { probeMs: r.ms } : {}),
    };
    if (r.outcome !== 'booted')
      log.info(
        { outcome: r.outcome, tail: r.output.slice(-300) },
        'KVM probe guest did not boot: using TCG',
      );
  }
  log.info({ accel: decision.accel, kvm: decision.kvm }, 'VM accelerator chosen');
  if (options.cacheFile) {
    await mkdir(dirname(options.cacheFile), { recursive: true });
    await writeFile(options.cacheFile, JSON.stringify({ ...decision, key }));
  }
  return decision;
}
