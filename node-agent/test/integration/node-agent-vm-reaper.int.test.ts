import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { environmentRef } from '@troupe/node-agent';
import {
  makeTempDir,
  startNatsServer,
  type TempDir,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { TestCluster, type TestProcess } from '@troupe/test-cluster';

// Two TCG boots, one after the other (the boot cap), on a loaded 2-core host.
jest.setTimeout(600_000);

/** Pids of QEMU processes whose command line names a VM in `stateDir`. */
function qemuPids(stateDir: string): number[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((l) => l.includes('qemu-system') && l.includes(stateDir))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}

function overlays(stateDir: string): string[] {
  return readdirSync(stateDir).filter((d) => d.startsWith('env-'));
}

let server: NatsServerHandle;
let c: TestCluster;
let proc: TestProcess | undefined;
let tmp: TempDir;
let stateDir: string;
beforeAll(async () => {
  execFileSync(join(__dirname, '../../../deploy/images/build-vm.sh'), { stdio: 'ignore' });
  server = await startNatsServer();
  c = await TestCluster.start({ nats: server, docker: true, actors: true });
  tmp = await makeTempDir('troupe-vm-reaper-');
  stateDir = tmp.path;
});
afterAll(async () => {
  await proc?.kill('SIGKILL');
  await c.stop();
  await server.stop();
  await tmp?.cleanup();
});

test('kill -9 of a node agent with two VMs: the next agent with its host id leaves no QEMU or overlay', async () => {
  proc = c.spawnNodeAgent('vm-crash', {
    TROUPE_VM: 'on',
    TROUPE_VM_STATE_DIR: stateDir,
    TROUPE_SLOTS: 'sandbox=1,evaluator=1,environment=2',
    TROUPE_LOG_LEVEL: 'warn',
  });
  await c.waitForHost('vm-crash');
  const host = c.coordinator.registry!.get('vm-crash');
  expect(host?.info.backends).toContain('vm');
  expect(host?.info.labels).toMatchObject({
    'environment.vm': 'true',
    'environment.vm.accel': 'tcg',
  });

  const envs = ['vm-a', 'vm-b'].map((id) => environmentRef(c.actors, id));
  for (const env of envs) {
    const status = await env.ask('create', { spec: { kind: 'vm' } }, { timeoutMs: 400_000 });
    expect(status).toMatchObject({ status: 'ready', kind: 'vm' });
  }
  const run = await envs[0]!.ask('runCommand', { cmd: 'echo alive' }, { timeoutMs: 60_000 });
  expect(run.stdout).toBe('alive\n');
  expect(qemuPids(stateDir)).toHaveLength(2);
  expect(overlays(stateDir)).toHaveLength(2);

  expect(await proc.kill('SIGKILL')).toBe('SIGKILL');
  proc = undefined;
  // The VMs outlive their node agent (QEMU runs detached)...
  expect(qemuPids(stateDir)).toHaveLength(2);

  // ...until the next node agent with the host id sweeps at start.
  await c.startNodeAgent({ hostId: 'vm-crash', vm: { enabled: 'on', stateDir } });
  await waitFor(() => qemuPids(stateDir).length === 0, {
    timeoutMs: 10_000,
    message: 'no QEMU process left',
  });
  expect(overlays(stateDir)).toEqual([]);
});
