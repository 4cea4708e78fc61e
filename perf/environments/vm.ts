/**
 * The `vm` backend's figures for perf/environments: one QEMU guest booted from the offline image
 * (`deploy/images/build-vm.sh`), driven through the same library calls as the desktop.
 *
 * - `vm_boot_ms`: `backend.create` from nothing (overlay, QEMU start, kernel, init, Xvfb and
 *   openbox, agent ready, golden `savevm`)
 * - `vm_restore_ms`: `env.reset()` = `loadvm golden` (whole machine, no reboot);
 *   `vm_restore_vs_boot_ratio` = restore / boot (goal ≤ 0.1)
 * - `vm_screenshot_p50_ms`, `vm_action_p50_ms` (MOVE_TO / CLICK), as for the desktop
 * - `idle_vms_per_host`: how many idle VMs a 2-core 24 GiB host keeps live. Method: a second VM
 *   is booted next to the first and both are left idle; the larger QEMU resident set (guest
 *   memory touched plus QEMU's own, TCG cache included) is the per-VM cost, and the figure is
 *   min(the backend's memory-aware cap for 24 GiB, ⌊(24 GiB − 2 GiB reserve) / that RSS⌋). CPU
 *   is not the limit for idle VMs (an idle TCG guest uses a few % of a core); boots are (one at a
 *   time under TCG).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { probeAccel, vmCapacity, VmEnvironmentBackend } from '@troupe/node-agent';
import { nowUs, quantile, round } from '../lib/report';

const IMAGE_DIR = '/var/lib/troupe/vm-images';
const HOST_MEM_MB = 24 * 1024;
const RESERVE_MB = 2 * 1024;

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

function pidOf(backendId: string): number {
  return Number(backendId.replace(/^qemu:/, ''));
}

/** Boots VMs and measures; resolves with the `vm_*` metrics. */
export async function measureVm(
  samples: number,
  timeEach: (n: number, fn: (i: number) => Promise<unknown>) => Promise<number[]>,
): Promise<Record<string, number | string>> {
  const dir = join(IMAGE_DIR, 'vm-desktop');
  const decision = await probeAccel({
    qemuBinary: 'qemu-system-x86_64',
    image: { kernel: join(dir, 'vmlinuz'), initrd: join(dir, 'initrd.img') },
  });
  const stateDir = mkdtempSync(join(os.tmpdir(), 'troupe-perf-vms-'));
  const backend = new VmEnvironmentBackend({
    imageDir: IMAGE_DIR,
    stateDir,
    accel: decision.accel,
    readyTimeoutMs: 600_000,
  });
  const spec = {
    image: 'vm-desktop',
    width: 1280,
    height: 800,
    memoryMb: 1024,
    cpus: 1,
    pidsLimit: 512,
    labels: { cluster: 'perf', host: 'perf', actor: 'environment/perf-vm', job: '' },
  };
  const m: Record<string, number | string> = { vm_accel: decision.accel };
  try {
    const t0 = nowUs();
    const env = await backend.create(spec);
    m['vm_boot_ms'] = round((nowUs() - t0) / 1000, 1);
    await env.launch(['xterm', '-T', 'Terminal'], {
      waitTitle: 'Terminal|troupe@',
      timeoutMs: 120_000,
    });
    await env.screenshot();
    await env.act({ action_type: 'MOVE_TO', x: 1, y: 1 });
    const shots = await timeEach(samples, () => env.screenshot());
    const actions = await timeEach(samples, (i) =>
      env.act(
        i % 2 === 0
          ? { action_type: 'MOVE_TO', x: 100 + i, y: 100 + i }
          : { action_type: 'CLICK', x: 5 + i, y: 700 },
      ),
    );
    const restores = await timeEach(3, () => env.reset());
    m['vm_restore_ms'] = round(quantile(restores, 0.5), 1);
    m['vm_restore_vs_boot_ratio'] = round(Number(m['vm_restore_ms']) / Number(m['vm_boot_ms']), 4);
    m['vm_screenshot_p50_ms'] = round(quantile(shots, 0.5), 1);
    m['vm_screenshot_p90_ms'] = round(quantile(shots, 0.9), 1);
    m['vm_action_p50_ms'] = round(quantile(actions, 0.5), 1);
    m['vm_action_p90_ms'] = round(quantile(actions, 0.9), 1);

    const second = await backend.create({
      ...spec,
      labels: { ...spec.labels, actor: 'environment/perf-vm-2' },
    });
    const rss = Math.max(rssMb(pidOf(env.backendId)), rssMb(pidOf(second.backendId)));
    m['vm_idle_rss_mb'] = round(rss, 0);
    m['idle_vms_per_host'] = Math.min(
      vmCapacity(HOST_MEM_MB, spec.memoryMb, { reserveMb: RESERVE_MB }),
      Math.floor((HOST_MEM_MB - RESERVE_MB) / rss),
    );
  } finally {
    await backend.close();
    rmSync(stateDir, { recursive: true, force: true });
  }
  return m;
}
