import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isSandboxLost, sandboxRef } from '@troupe/node-agent';
import { makeTempDir, startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';
import {
  NODE_AGENT_MAIN,
  spawnNodeProcess,
  TestCluster,
  type TestProcess,
} from '@troupe/test-cluster';
import { dockerFixture, type DockerFixture, leftovers, rejection } from './helpers';

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});

describe('troupe-node-agent process', () => {
  let c: TestCluster;
  let fx: DockerFixture;
  let proc: TestProcess | undefined;
  beforeEach(async () => {
    fx = await dockerFixture();
    c = await TestCluster.start({ nats: server, cluster: fx.cluster, docker: true, actors: true });
  });
  afterEach(async () => {
    await proc?.kill('SIGKILL');
    proc = undefined;
    await c.stop();
  });

  const start = (hostId: string): TestProcess =>
    c.spawnNodeAgent(hostId, { TROUPE_SLOTS: 'sandbox=2,evaluator=1', TROUPE_LOG_LEVEL: 'warn' });

  test('kill -9 with a live sandbox: the next agent with the host id reaps it, the sandbox is lost', async () => {
    proc = start('crash-host');
    await c.waitForHost('crash-host');
    const sb = sandboxRef(c.actors, 'sb-doomed');
    await sb.ask('create', { spec: { image: fx.busybox } }, { timeoutMs: 60_000 });
    const { taskId } = await sb.ask('startBackground', { cmd: ['sleep', '1000'] });
    expect((await sb.ask('exec', { cmd: ['echo', 'alive'] })).stdout).toBe('alive\n');

    expect(await proc.kill('SIGKILL')).toBe('SIGKILL');
    const orphaned = await leftovers(fx.docker, c.cluster);
    expect(orphaned.containers).toHaveLength(1);
    expect(orphaned.volumes).toHaveLength(1);

    // A new node agent with the same host id: its start-up sweep removes everything.
    await c.startNodeAgent({ hostId: 'crash-host' });
    expect(await leftovers(fx.docker, c.cluster)).toEqual({ containers: [], volumes: [] });

    const lost = await rejection(sb.ask('exec', { cmd: ['true'] }, { timeoutMs: 20_000 }));
    expect(lost.code).toBe('UNAVAILABLE');
    expect(lost.message).toMatch(/^sandbox lost: sb-doomed: /);
    expect(lost.retryable).toBe(false);
    expect(isSandboxLost(lost)).toBe(true);
    expect(lost.details).toMatchObject({ sandboxLost: true, hostId: 'crash-host' });
    expect(isSandboxLost(await rejection(sb.ask('create', { spec: { image: 'x' } })))).toBe(true);
    const status = await sb.ask('status', {});
    expect(status.status).toBe('lost');
    expect(status.lostReason).toMatch(/ended with an earlier activation/);
    // The command was still running when the container went: reported killed, so a caller
    // waiting for its end (a task's retry) learns at once that it did not finish.
    expect(status.commands).toEqual([
      expect.objectContaining({
        taskId,
        ended: expect.objectContaining({
          state: 'killed',
          error: 'killed with its container by the restarted node agent',
        }),
      }),
    ]);
    expect(await sb.ask('destroy', {})).toEqual({});

    // The job layer's retry: a new sandbox on the new agent.
    const fresh = sandboxRef(c.actors, 'sb-retry');
    await fresh.ask('create', { spec: { image: fx.busybox } }, { timeoutMs: 60_000 });
    expect((await fresh.ask('exec', { cmd: ['echo', 'ok'] })).stdout).toBe('ok\n');
    await fresh.ask('destroy', {});
  });

  test('kill -9 after a command finished: the next agent reads its end, and status reports it', async () => {
    proc = start('end-host');
    await c.waitForHost('end-host');
    const sb = sandboxRef(c.actors, 'sb-ended');
    await sb.ask('create', { spec: { image: fx.busybox } }, { timeoutMs: 60_000 });
    const { taskId } = await sb.ask('startBackground', { cmd: ['sh', '-c', 'sleep 1; exit 7'] });

    const [recorded] = (await sb.ask('status', {})).commands;
    expect(recorded).toEqual(expect.objectContaining({ taskId, handle: expect.any(String) }));

    expect(await proc.kill('SIGKILL')).toBe('SIGKILL');
    // The command runs to its end with nobody to see it (only Docker knows the exit code).
    const exec = fx.docker.getExec(recorded!.handle!);
    await waitFor(
      async () => {
        const info = await exec.inspect();
        return !info.Running && typeof info.ExitCode === 'number';
      },
      { timeoutMs: 20_000, message: 'the command to end' },
    );

    // The next agent with the host id reads the end from Docker, posts it and removes the
    // container; the first ask of the sandbox (a task's retry asking what became of its
    // command) sees that end, and the command is not run again.
    await c.startNodeAgent({ hostId: 'end-host' });
    const status = await sb.ask('status', {}, { timeoutMs: 30_000 });
    expect(status.commands).toEqual([
      expect.objectContaining({
        taskId,
        ended: expect.objectContaining({ state: 'exited', exitCode: 7 }),
      }),
    ]);
    expect(await sb.ask('destroy', {})).toEqual({});
  });

  test('SIGTERM drains: sandboxes destroyed, host deregistered, exit 0', async () => {
    proc = start('term-host');
    await c.waitForHost('term-host');
    const sb = sandboxRef(c.actors, 'sb-term');
    await sb.ask('create', { spec: { image: fx.busybox } }, { timeoutMs: 60_000 });
    expect((await leftovers(fx.docker, c.cluster)).containers).toHaveLength(1);

    expect(await proc.kill('SIGTERM')).toBe(0);
    expect(await leftovers(fx.docker, c.cluster)).toEqual({ containers: [], volumes: [] });
    expect(c.coordinator.registry!.get('term-host')).toBeUndefined();
    expect(proc.output()).not.toMatch(/"level":50/); // no errors logged
  });
});

test('a bad config prints every issue and exits 2 before connecting', async () => {
  const dir = await makeTempDir('troupe-node-agent-config-');
  try {
    const file = path.join(dir.path, 'node-agent.yaml');
    await writeFile(file, 'slots:\n  sandbox: -1\nsurprise: true\nbackend: process\n');
    const proc = spawnNodeProcess(NODE_AGENT_MAIN, ['--config', file], {
      env: {
        TROUPE_CLUSTER: 'Bad_Name',
        TROUPE_NODE_LABELS: 'oops',
        // Nothing listens here: a process that got as far as connecting would fail differently.
        TROUPE_NATS_URL: 'nats://127.0.0.1:1',
      },
    });
    expect(await proc.exited).toBe(2);
    const out = proc.output();
    expect(out).toContain(
      "troupe-node-agent: TROUPE_NODE_LABELS: 'oops' is not key=value (expected k=v,k=v)",
    );
    expect(out).toContain('troupe-node-agent: config.cluster: must match [a-z0-9-]{1,32}');
    expect(out).toMatch(/troupe-node-agent: config\.slots\.sandbox: /);
    expect(out).toContain('troupe-node-agent: config.surprise: unknown field');
    expect(out).not.toMatch(/NATS|connect/i);
  } finally {
    await dir.cleanup();
  }
});
