import { execFileSync } from 'node:child_process';
import net from 'node:net';
import type { Sandbox } from '@troupe/node-agent';
import { waitFor } from '@troupe/testkit';
import {
  dockerBridgeGateway,
  dockerFixture,
  leftovers,
  removeLeftovers,
  type DockerFixture,
} from './helpers';

// The root config's project-level testTimeout is not applied by jest: set it here.
jest.setTimeout(120_000);

const MiB = 1024 * 1024;

describe('default sandbox policy (Docker)', () => {
  let fx: DockerFixture;
  let sb: Sandbox;
  let server: net.Server;
  let port: number;
  let gateway: string;

  beforeAll(async () => {
    fx = await dockerFixture();
    server = net.createServer((socket) => socket.end('host-service\n'));
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
    port = (server.address() as net.AddressInfo).port;
    gateway = await dockerBridgeGateway(fx.docker);
    // Set in the node agent's environment: must never show up inside a sandbox.
    process.env.TROUPE_TEST_HOST_SECRET = 'must-not-leak';
    sb = await fx.backend.create(fx.spec());
  });

  afterAll(async () => {
    delete process.env.TROUPE_TEST_HOST_SECRET;
    server.close();
    await fx.backend.close();
    await removeLeftovers(fx.docker, fx.cluster);
  });

  test('the container is created with the policy settings and labels', async () => {
    const info = await fx.docker.getContainer(sb.metadata().containerId!).inspect();
    const hc = info.HostConfig;
    expect(hc.NetworkMode).toBe('none');
    expect(hc.ReadonlyRootfs).toBe(true);
    expect(hc.CapDrop).toEqual(['ALL']);
    expect(hc.CapAdd ?? []).toEqual([]);
    expect(hc.Privileged).toBe(false);
    expect(hc.SecurityOpt).toEqual(['no-new-privileges']);
    expect(hc.Memory).toBe(512 * MiB);
    expect(hc.MemorySwap).toBe(512 * MiB);
    expect(hc.NanoCpus).toBe(1e9);
    expect(hc.PidsLimit).toBe(256);
    expect(hc.Init).toBe(true);
    expect(hc.Binds ?? []).toEqual([]);
    expect(info.Config.User).toBe('1000:1000');
    expect(info.Mounts.map((m) => [m.Type, m.Destination])).toEqual([['volume', '/workspace']]);
    expect(info.Config.Labels).toMatchObject({
      'troupe.managed': 'true',
      'troupe.cluster': fx.cluster,
      'troupe.host': 'test-host',
      'troupe.actor': 'sandbox/test',
      'troupe.job': '',
      'troupe.sandbox': sb.id,
      'troupe.policy-exceptions': '',
    });
    expect(sb.metadata().policyExceptions).toEqual([]);
    const volume = await fx.docker.getVolume(sb.metadata().workspace).inspect();
    expect(volume.Labels).toMatchObject({ 'troupe.cluster': fx.cluster, 'troupe.sandbox': sb.id });
  });

  test('runs as uid 1000 with no capabilities and no-new-privileges', async () => {
    const r = await sb.exec([
      'sh',
      '-c',
      'id -u; id -g; grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/self/status',
    ]);
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines.slice(0, 2)).toEqual(['1000', '1000']);
    expect(r.stdout).toMatch(/CapEff:\s+0000000000000000/);
    expect(r.stdout).toMatch(/CapBnd:\s+0000000000000000/);
    expect(r.stdout).toMatch(/NoNewPrivs:\s+1/);
  });

  test('has only a loopback interface and cannot reach the host', async () => {
    const links = await sb.exec(['ls', '/sys/class/net']);
    expect(links.stdout.trim().split(/\s+/)).toEqual(['lo']);
    const ip = await sb.exec(['ip', '-o', 'link']);
    expect(ip.stdout.trim().split('\n')).toHaveLength(1);
    expect(ip.stdout).toMatch(/^1: lo:/);
    for (const target of [gateway, '127.0.0.1']) {
      const nc = await sb.exec(['sh', '-c', `echo | nc -w 2 ${target} ${port}`], {
        timeoutMs: 10_000,
      });
      expect(nc.stdout).not.toContain('host-service');
      expect(nc.exitCode).not.toBe(0);
      const wget = await sb.exec(
        ['wget', '-T', '2', '-q', '-O', '-', `http://${target}:${port}/`],
        {
          timeoutMs: 10_000,
        },
      );
      expect(wget.exitCode).not.toBe(0);
    }
  });

  test('the same probe reaches the host from a bridge sandbox (so the check above can fail)', async () => {
    const bridged = await fx.backend.create(fx.spec({ network: 'bridge' }, 'sandbox/bridged'));
    try {
      expect(bridged.metadata().policyExceptions).toEqual(['network:bridge']);
      const info = await fx.docker.getContainer(bridged.metadata().containerId!).inspect();
      expect(info.Config.Labels['troupe.policy-exceptions']).toBe('network:bridge');
      const nc = await bridged.exec(['sh', '-c', `echo | nc -w 2 ${gateway} ${port}`], {
        timeoutMs: 10_000,
      });
      expect(nc.stdout).toContain('host-service');
    } finally {
      await bridged.destroy();
    }
  });

  test('the root filesystem is read-only; the workspace and /tmp are writable', async () => {
    for (const p of ['/etc/x', '/x', '/home/troupe/x', '/usr/x']) {
      const r = await sb.exec(['touch', p]);
      expect(r.exitCode).not.toBe(0);
      expect(r.stderr).toMatch(/Read-only file system/);
    }
    const ok = await sb.exec(['sh', '-c', 'touch /workspace/ok /tmp/ok && echo done']);
    expect(ok).toMatchObject({ exitCode: 0, stdout: 'done\n' });
  });

  test('has no Docker socket and none of the host environment', async () => {
    const sock = await sb.exec(['sh', '-c', 'ls -la /var/run/docker.sock /run/docker.sock']);
    expect(sock.exitCode).not.toBe(0);
    const env = await sb.exec(['env']);
    expect(env.stdout).not.toContain('must-not-leak');
    expect(env.stdout).not.toContain('TROUPE_TEST_HOST_SECRET');
    expect(env.stdout).not.toMatch(/^HOME=\/root$/m);
  });

  test('refuses secret-looking environment keys unless allowed, and records the allowance', async () => {
    await expect(
      fx.backend.create(fx.spec({ env: { OPENAI_API_KEY: 'sk-x' } })),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('env.OPENAI_API_KEY'),
    });
    await expect(sb.exec(['true'], { env: { GH_TOKEN: 'x' } })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  test('a memory hog is OOM-killed and reported as such', async () => {
    const small = await fx.backend.create(fx.spec({ memoryMb: 64, tmpfsMb: 8 }, 'sandbox/hog'));
    try {
      const r = await small.exec(
        ['sh', '-c', 'x=$(head -c 400000000 /dev/zero | tr "\\0" a); echo survived'],
        { timeoutMs: 60_000 },
      );
      expect(r.timedOut).toBe(false);
      expect(r.exitCode).toBe(137);
      expect(r.oomKilled).toBe(true);
      expect(r.stdout).not.toContain('survived');
      // The sandbox itself survives its command's OOM kill.
      expect(await small.exec(['true'])).toMatchObject({ exitCode: 0, oomKilled: false });
    } finally {
      await small.destroy();
    }
  });

  test('a fork bomb is held at the pids limit, the host survives, and a timeout clears it', async () => {
    const limit = 64;
    const bombed = await fx.backend.create(fx.spec({ pidsLimit: limit }, 'sandbox/bomb'));
    try {
      const container = fx.docker.getContainer(bombed.metadata().containerId!);
      // awk keeps forking when fork fails (a shell would exit), so the table stays full until
      // the timeout: the kill helper cannot even start, which forces the hard-reset path.
      const bomb = bombed.exec(['awk', 'BEGIN { while (1) system("sleep 1000 &") }'], {
        timeoutMs: 4_000,
      });
      const peak = await waitFor(
        async () => {
          const stats = (await container.stats({ stream: false })) as {
            pids_stats?: { current?: number };
          };
          const current = stats.pids_stats?.current ?? 0;
          return current >= limit - 2 ? current : 0;
        },
        { timeoutMs: 20_000, message: 'the bomb filling the pids limit' },
      );
      expect(peak).toBeLessThanOrEqual(limit);
      // The host can still start processes.
      expect(execFileSync('sh', ['-c', 'echo alive']).toString()).toBe('alive\n');
      const r = await bomb;
      expect(r.timedOut).toBe(true);
      // With the table full, the kill helper cannot start: the sandbox was hard-reset.
      expect(bombed.metadata().restarts).toBe(1);
      const ps = await bombed.exec(['ps', '-o', 'pid,args']);
      expect(ps.exitCode).toBe(0);
      expect(ps.stdout).not.toMatch(/sleep 1000/);
      expect(ps.stdout).not.toMatch(/awk/);
    } finally {
      await bombed.destroy();
    }
  });

  test('a timed-out command is killed with its whole tree, even when it ignores SIGTERM', async () => {
    const script = [
      'trap "" TERM',
      '(trap "" TERM; sleep 1001 & sleep 1002) &',
      'setsid sh -c "trap \\"\\" TERM; sleep 1003 & sleep 1004" &',
      'sleep 1005',
    ].join('\n');
    const started = performance.now();
    const r = await sb.exec(['sh', '-c', script], { timeoutMs: 1_500 });
    expect(r.timedOut).toBe(true);
    expect(r.exitCode).toBe(137);
    expect(performance.now() - started).toBeGreaterThanOrEqual(1_500);
    const ps = await sb.exec(['ps', '-o', 'pid,ppid,args']);
    expect(ps.stdout).not.toMatch(/sleep 100\d/);
    expect(sb.metadata().restarts).toBe(0);
  });

  test('leaves no containers or volumes behind', async () => {
    await sb.destroy();
    await sb.destroy(); // idempotent
    expect(sb.status).toBe('destroyed');
    expect(await leftovers(fx.docker, fx.cluster)).toEqual({ containers: [], volumes: [] });
  });
});
