import type { VmAccel } from '../vm-accel';

/** The files of a VM image (`deploy/images/build-vm.sh`). */
export interface VmImageFiles {
  /** Kernel (`vmlinuz`). */
  kernel: string;
  /** Busybox initramfs that loads the virtio and ext4 modules. */
  initrd: string;
}

/** What one QEMU guest is started with. */
export interface QemuMachineArgs extends VmImageFiles {
  /** Environment id; the process is named `troupe-env-<id>` so the reaper can recognise it. */
  id: string;
  accel: VmAccel;
  memoryMb: number;
  cpus: number;
  /** The per-environment qcow2 overlay. */
  disk: string;
  /** Unix socket of the agent's virtio-serial port (QEMU listens). */
  agentSocket: string;
  /** Unix socket of the QMP monitor (QEMU listens). */
  qmpSocket: string;
  /** Where the guest's serial console goes. */
  consoleLog: string;
  pidFile: string;
  screen: { width: number; height: number };
  /** TCG translation cache size. @default 64 */
  tcgCacheMb?: number;
}

/** The name QEMU processes of environment `id` carry (`-name`, visible in `/proc/<pid>/cmdline`). */
export function qemuProcessName(id: string): string {
  return `troupe-env-${id}`;
}

/**
 * The argv (without the binary) of a desktop guest: no default devices, no network device at all
 * (`-nic none`), no display, direct kernel boot, the overlay on virtio-blk, the agent on a
 * virtio-serial port named `troupe.agent` behind a unix socket, QMP on another, and the serial
 * console to a file. The guest's only channel to the host is the agent's port.
 */
export function qemuArgv(a: QemuMachineArgs): string[] {
  const accel =
    a.accel === 'kvm'
      ? ['-accel', 'kvm', '-cpu', 'host']
      : ['-accel', `tcg,tb-size=${a.tcgCacheMb ?? 64}`, '-cpu', 'qemu64'];
  return [
    '-name',
    `${qemuProcessName(a.id)},process=${qemuProcessName(a.id)}`,
    '-nodefaults',
    '-no-user-config',
    '-display',
    'none',
    '-machine',
    'pc',
    ...accel,
    '-m',
    String(a.memoryMb),
    '-smp',
    String(Math.max(1, Math.ceil(a.cpus))),
    '-kernel',
    a.kernel,
    '-initrd',
    a.initrd,
    '-append',
    `console=ttyS0 root=/dev/vda rw quiet troupe.screen=${a.screen.width}x${a.screen.height}`,
    '-drive',
    // cache=unsafe: the overlay dies with the VM, and savevm flushes what a snapshot needs.
    `file=${a.disk},if=virtio,format=qcow2,cache=unsafe,discard=unmap`,
    '-nic',
    'none',
    '-serial',
    `file:${a.consoleLog}`,
    // Entropy from the host's /dev/urandom, so the guest's CRNG need not wait for TCG jitter.
    '-device',
    'virtio-rng-pci',
    '-device',
    'virtio-serial-pci',
    '-chardev',
    `socket,id=agent,path=${a.agentSocket},server=on,wait=off`,
    '-device',
    'virtserialport,chardev=agent,name=troupe.agent',
    '-qmp',
    `unix:${a.qmpSocket},server=on,wait=off`,
    '-pidfile',
    a.pidFile,
    '-no-reboot',
  ];
}

/**
 * The argv of the accelerator probe: the image's kernel and initramfs with `troupe.probe=1`, which
 * prints `TROUPE-PROBE-OK` on the serial console (stdout) and powers off; no disk, no devices.
 */
export function probeArgv(files: VmImageFiles, accel: VmAccel): string[] {
  const cpu =
    accel === 'kvm' ? ['-accel', 'kvm', '-cpu', 'host'] : ['-accel', 'tcg', '-cpu', 'qemu64'];
  return [
    '-nodefaults',
    '-no-user-config',
    '-display',
    'none',
    '-machine',
    'pc',
    ...cpu,
    '-m',
    '256',
    '-kernel',
    files.kernel,
    '-initrd',
    files.initrd,
    '-append',
    'console=ttyS0 quiet troupe.probe=1',
    '-serial',
    'stdio',
    '-nic',
    'none',
    '-no-reboot',
  ];
}

/** The marker the probe guest prints when it reached `init`. */
export const PROBE_MARKER = 'TROUPE-PROBE-OK';
