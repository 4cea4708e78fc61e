import { decideAccel, vmCapacity } from '@troupe/node-agent';
import { probeArgv, PROBE_MARKER, qemuArgv } from '../../src/internal/qemu-argv';
import { parseSnapshotTable } from '../../src/internal/vm-machine';

const base = {
  id: 'env-abc',
  memoryMb: 1024,
  cpus: 1,
  kernel: '/img/vmlinuz',
  initrd: '/img/initrd.img',
  disk: '/state/env-abc/disk.qcow2',
  agentSocket: '/state/env-abc/agent.sock',
  qmpSocket: '/state/env-abc/qmp.sock',
  consoleLog: '/state/env-abc/console.log',
  pidFile: '/state/env-abc/qemu.pid',
  screen: { width: 1024, height: 768 },
};

function after(argv: string[], flag: string): string[] {
  return argv.flatMap((a, i) => (a === flag ? [argv[i + 1] as string] : []));
}

describe('QEMU argv', () => {
  test('a TCG guest: no network device, no defaults, the overlay on virtio, agent and QMP on unix sockets', () => {
    const argv = qemuArgv({ ...base, accel: 'tcg' });
    expect(argv).toContain('-nodefaults');
    expect(after(argv, '-nic')).toEqual(['none']);
    expect(argv.filter((a) => /netdev|virtio-net|e1000|user,/.test(a))).toEqual([]);
    expect(after(argv, '-accel')).toEqual(['tcg,tb-size=64']);
    expect(after(argv, '-cpu')).toEqual(['qemu64']);
    expect(after(argv, '-name')).toEqual(['troupe-env-env-abc,process=troupe-env-env-abc']);
    expect(after(argv, '-drive')[0]).toMatch(
      /^file=\/state\/env-abc\/disk\.qcow2,if=virtio,format=qcow2/,
    );
    expect(after(argv, '-chardev')).toEqual([
      'socket,id=agent,path=/state/env-abc/agent.sock,server=on,wait=off',
    ]);
    expect(after(argv, '-device')).toEqual([
      'virtio-rng-pci',
      'virtio-serial-pci',
      'virtserialport,chardev=agent,name=troupe.agent',
    ]);
    expect(after(argv, '-qmp')).toEqual(['unix:/state/env-abc/qmp.sock,server=on,wait=off']);
    expect(after(argv, '-append')[0]).toContain('troupe.screen=1024x768');
    expect(after(argv, '-m')).toEqual(['1024']);
    expect(after(argv, '-pidfile')).toEqual(['/state/env-abc/qemu.pid']);
  });

  test('KVM uses the host CPU; fractional cpus round up to whole vCPUs', () => {
    const argv = qemuArgv({ ...base, accel: 'kvm', cpus: 1.5, tcgCacheMb: 32 });
    expect(after(argv, '-accel')).toEqual(['kvm']);
    expect(after(argv, '-cpu')).toEqual(['host']);
    expect(after(argv, '-smp')).toEqual(['2']);
  });

  test('the probe boots kernel and initramfs only, console on stdout, asking for the marker', () => {
    const argv = probeArgv({ kernel: '/k', initrd: '/i' }, 'kvm');
    expect(after(argv, '-append')[0]).toContain('troupe.probe=1');
    expect(after(argv, '-serial')).toEqual(['stdio']);
    expect(argv).not.toContain('-drive');
    expect(after(argv, '-accel')).toEqual(['kvm']);
    expect(PROBE_MARKER).toBe('TROUPE-PROBE-OK');
  });
});

describe('accelerator decision', () => {
  test('KVM only when the probe guest booted under it', () => {
    expect(decideAccel('booted')).toBe('kvm');
    expect(decideAccel('timeout')).toBe('tcg');
    expect(decideAccel('failed')).toBe('tcg');
    expect(decideAccel('no-device')).toBe('tcg');
  });
});

describe('VM capacity', () => {
  test('memory-aware: 24 GiB host, 1 GiB VMs', () => {
    expect(vmCapacity(24 * 1024, 1024)).toBe(19);
    expect(vmCapacity(4 * 1024, 1024)).toBe(1);
    expect(vmCapacity(1024, 1024)).toBe(1);
  });
});

describe('info snapshots', () => {
  test('tags and sizes', () => {
    const text =
      'List of snapshots present on all disks:\r\n' +
      'ID        TAG               VM SIZE                DATE     VM CLOCK     ICOUNT\r\n' +
      '--        golden            247 MiB 2026-12-01 17:47:27 00:00:18.573           \r\n' +
      '--        step-1            1.5 GiB 2026-12-01 17:48:27 00:01:18.573           \r\n';
    expect(parseSnapshotTable(text)).toEqual([
      { name: 'golden', size: 247 * 2 ** 20 },
      { name: 'step-1', size: 1.5 * 2 ** 30 },
    ]);
    expect(parseSnapshotTable('There is no snapshot available.\r\n')).toEqual([]);
  });
});
