import {
  ArtifactStore,
  ExecReplySchema,
  isSandboxLost,
  type NodeAgent,
  readTar,
  sandboxRef,
  TroupeLabel,
} from '@troupe/node-agent';
import { jetstreamManager } from '@nats-io/jetstream';
import { kvBucketName } from '@troupe/proto';
import { startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';
import { TestCluster } from '@troupe/test-cluster';
import { PASSIVATE_QUIET_MS } from '../../src/internal/actor-support';
import { dockerFixture, type DockerFixture, leftovers, rejection, sha256, tarOf } from './helpers';

let server: NatsServerHandle;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server.stop();
});

describe('sandbox actor on a node agent', () => {
  let c: TestCluster;
  let fx: DockerFixture;
  let agent: NodeAgent;
  let artifacts: ArtifactStore;

  beforeAll(async () => {
    fx = await dockerFixture();
    c = await TestCluster.start({ nats: server, cluster: fx.cluster, docker: true, actors: true });
    agent = await c.startNodeAgent({
      hostId: 'agent-1',
      slots: { sandbox: 4, evaluator: 2, environment: 1 },
      labels: { zone: 'z1' },
    });
    artifacts = await ArtifactStore.open(c.actors.nc, { cluster: c.cluster });
  });
  afterAll(async () => {
    await c.stop();
  });

  test('registers its kinds, slots, backends and labels with the coordinator', () => {
    const host = c.coordinator.registry!.get('agent-1')!;
    expect(host.state).toBe('ALIVE');
    expect(host.info.kinds.sort()).toEqual(['environment', 'evaluator', 'sandbox']);
    expect(host.info.slots).toEqual({ sandbox: 4, evaluator: 2, environment: 1 });
    expect(host.info.backends).toContain('docker');
    expect(host.info.labels).toEqual({ zone: 'z1' });
  });

  test('create, exec, files in and out, export to the object store, destroy', async () => {
    const sb = sandboxRef(c.actors, 'sb-main');
    const script = Buffer.from('#!/bin/sh\necho "args: $*"\n');
    const spec = {
      image: fx.busybox,
      files: {
        'hello.txt': 'hi there',
        'bin/run.sh': { base64: script.toString('base64'), mode: 0o755 },
      },
    };
    const created = await sb.ask('create', { spec, jobId: 'job-1' }, { timeoutMs: 60_000 });
    expect(created.sandboxId).toBe('sb-main');
    expect(created.status).toBe('ready');
    expect(created.metadata.labels).toEqual({
      cluster: c.cluster,
      host: 'agent-1',
      actor: 'sandbox/sb-main',
      job: 'job-1',
    });
    const containerId = created.metadata.containerId!;
    const info = await fx.docker.getContainer(containerId).inspect();
    expect(info.Config.Labels[TroupeLabel.ACTOR]).toBe('sandbox/sb-main');
    expect(info.Config.Labels[TroupeLabel.JOB]).toBe('job-1');
    expect(info.HostConfig.NetworkMode).toBe('none');

    // Idempotent for the same spec; a different one is refused, naming the field.
    const again = await sb.ask('create', { spec, jobId: 'job-1' }, { timeoutMs: 10_000 });
    expect(again.metadata.containerId).toBe(containerId);
    const other = await rejection(
      sb.ask('create', { spec: { ...spec, memoryMb: 256 }, jobId: 'job-1' }),
    );
    expect(other.code).toBe('ALREADY_EXISTS');
    expect(other.message).toMatch(/^create\.spec: /);

    // Every exec reply has the wire shape callers validate against.
    const cat = ExecReplySchema.parse(await sb.ask('exec', { cmd: ['cat', 'hello.txt'] }));
    expect(cat).toMatchObject({ exitCode: 0, stdout: 'hi there', timedOut: false });
    const run = ExecReplySchema.parse(
      await sb.ask('exec', { cmd: './bin/run.sh a b && echo "$X" >&2', env: { X: 'y' } }),
    );
    expect(run).toMatchObject({ exitCode: 0, stdout: 'args: a b\n', stderr: 'y\n' });
    const stdin = await sb.ask('exec', { cmd: ['wc', '-c'], stdin: 'abcde' });
    expect(stdin.stdout.trim()).toBe('5');
    const timed = ExecReplySchema.parse(
      await sb.ask('exec', { cmd: ['sleep', '30'], timeoutMs: 300 }),
    );
    expect(timed).toMatchObject({ timedOut: true, exitCode: 137 });

    // Bad payloads are refused at the boundary, naming the field.
    const bad = await rejection(sb.ask('exec', { cmd: [] }));
    expect(bad.code).toBe('INVALID_ARGUMENT');
    expect(bad.message).toMatch(/^exec\.cmd/);

    // Output larger than a NATS message is trimmed from the middle and counted.
    const big = ExecReplySchema.parse(
      await sb.ask(
        'exec',
        {
          cmd: 'echo START; yes abcdefghij | head -c 3000000; echo; echo END',
          maxOutputBytes: 4_000_000,
        },
        { timeoutMs: 30_000 },
      ),
    );
    expect(big.exitCode).toBe(0);
    expect(big.stdout.startsWith('START\n')).toBe(true);
    expect(big.stdout.endsWith('END\n')).toBe(true);
    expect(big.stdoutDroppedBytes).toBeGreaterThan(2_000_000);

    // Files in: a map, and a tar from the object store.
    await sb.ask('putFiles', { destDir: '/workspace/src', files: { 'main.py': 'print(1)\n' } });
    const inputTar = await tarOf({ 'data/input.txt': 'from the store' });
    await artifacts.put('jobs/job-1/inputs/data.tar', inputTar);
    const put = await sb.ask('putFiles', {
      destDir: '/workspace',
      artifact: 'jobs/job-1/inputs/data.tar',
    });
    expect(put.artifact).toEqual({
      name: 'jobs/job-1/inputs/data.tar',
      size: inputTar.length,
      digest: sha256(inputTar),
    });
    const missing = await rejection(
      sb.ask('putFiles', { destDir: '/workspace', artifact: 'jobs/job-1/nope.tar' }),
    );
    expect(missing.code).toBe('NOT_FOUND');
    expect(missing.message).toMatch(/^putFiles\.artifact: /);

    // Files out: inline for small trees, to the object store for workspaces.
    const got = await sb.ask('getFiles', { srcPath: '/workspace/.' });
    const entries = await readTar(Buffer.from(got.tarBase64, 'base64'));
    const byName = new Map(entries.map((e) => [e.name.replace(/^\.\//, ''), e]));
    expect(byName.get('hello.txt')?.content.toString()).toBe('hi there');
    expect(byName.get('src/main.py')?.content.toString()).toBe('print(1)\n');
    expect(byName.get('data/input.txt')?.content.toString()).toBe('from the store');
    expect((byName.get('bin/run.sh')?.mode ?? 0) & 0o777).toBe(0o755);
    const tooBig = await rejection(sb.ask('getFiles', { srcPath: '/workspace/.', maxBytes: 100 }));
    expect(tooBig.code).toBe('INVALID_ARGUMENT');
    expect(tooBig.message).toMatch(/^`getFiles\.maxBytes`: .*use exportFiles/);

    const exported = await sb.ask('exportFiles', {
      srcPath: '/workspace/.',
      artifact: 'jobs/job-1/tasks/t1/workspace.tar',
    });
    const stored = await artifacts.get('jobs/job-1/tasks/t1/workspace.tar');
    expect(exported).toEqual({
      artifact: 'jobs/job-1/tasks/t1/workspace.tar',
      size: stored.length,
      digest: sha256(stored),
    });
    const info2 = await artifacts.info('jobs/job-1/tasks/t1/workspace.tar');
    expect(info2).toMatchObject({
      contentType: 'application/x-tar',
      meta: { sandbox: 'sb-main', jobId: 'job-1', hostId: 'agent-1', srcPath: '/workspace/.' },
    });
    expect((await readTar(stored)).map((e) => e.name)).toEqual(
      expect.arrayContaining(['./hello.txt', './src/main.py']),
    );

    const status = await sb.ask('status', {});
    expect(status).toMatchObject({
      status: 'ready',
      hostId: 'agent-1',
      containerId,
      jobId: 'job-1',
    });

    await sb.ask('destroy', {});
    const destroyedAt = performance.now();
    // Without a container the activation gives its slot back at once — not after the quiet
    // period (500 ms) of activations that never held one, which cost every task that much.
    await waitFor(
      async () =>
        (await c.actors.directory.get({ kind: 'sandbox', id: 'sb-main' })).entry.state ===
        'SLEEPING',
      { timeoutMs: 10_000, intervalMs: 10, message: 'sb-main passivated after destroy' },
    );
    expect(performance.now() - destroyedAt).toBeLessThan(PASSIVATE_QUIET_MS * 0.9);
    expect(await leftovers(fx.docker, c.cluster)).toEqual({ containers: [], volumes: [] });
    expect(await sb.ask('destroy', {})).toEqual({});
    const gone = await rejection(sb.ask('exec', { cmd: ['true'] }));
    expect(gone.code).toBe('NOT_FOUND');
    expect(gone.message).toMatch(/was destroyed/);
    expect(isSandboxLost(gone)).toBe(false);
    expect((await sb.ask('status', {})).status).toBe('destroyed');
  });

  test('background tasks: start, poll, wait (returns the running status), kill', async () => {
    const sb = sandboxRef(c.actors, 'sb-bg');
    await sb.ask('create', { spec: { image: fx.busybox } }, { timeoutMs: 60_000 });
    const { taskId } = await sb.ask('startBackground', {
      cmd: 'echo started; exec sleep 60',
    });
    await waitFor(async () => (await sb.ask('poll', { taskId })).stdout === 'started\n', {
      timeoutMs: 10_000,
      message: 'background output',
    });
    const waited = await sb.ask('wait', { taskId, timeoutMs: 100 });
    expect(waited.state).toBe('running');
    const killed = await sb.ask('kill', { taskId });
    expect(killed).toMatchObject({ state: 'killed', exitCode: 137 });
    const unknown = await rejection(sb.ask('poll', { taskId: 'nope' }));
    expect(unknown.code).toBe('NOT_FOUND');
    await sb.ask('destroy', {});
  });

  test('a startBackground asked again with its idempotency key starts nothing', async () => {
    // Chaos seed 8704: one execution's sandbox recorded eight runs of its task's command, which
    // the task asked to start once (an ask run again after its answer was lost).
    const sb = sandboxRef(c.actors, 'sb-key');
    await sb.ask('create', { spec: { image: fx.busybox } }, { timeoutMs: 60_000 });
    const start = { cmd: 'echo run >> runs.txt', idempotencyKey: 'the-command' };
    const first = await sb.ask('startBackground', start);
    expect(first.repeated).toBeUndefined();
    const again = await sb.ask('startBackground', start);
    expect(again).toEqual({ taskId: first.taskId, repeated: true });
    expect((await sb.ask('wait', { taskId: first.taskId, timeoutMs: 10_000 })).state).toBe(
      'exited',
    );
    // Another key (or none) is another command.
    const other = await sb.ask('startBackground', { ...start, idempotencyKey: 'another' });
    expect(other.taskId).not.toBe(first.taskId);
    await sb.ask('wait', { taskId: other.taskId, timeoutMs: 10_000 });
    expect((await sb.ask('exec', { cmd: 'cat runs.txt' })).stdout).toBe('run\nrun\n');
    const status = await sb.ask('status', {});
    expect(status.commands.map((cmd) => cmd.taskId)).toEqual([first.taskId, other.taskId]);
    await sb.ask('destroy', {});
    // Still answered from the record once the sandbox is gone: the command was started.
    expect(await sb.ask('startBackground', start)).toEqual({
      taskId: first.taskId,
      repeated: true,
    });
  });

  test('destroy removes the container only once the state holding its commands is stored', async () => {
    // Removing a container cannot be rolled back. A commit that failed after it (a NATS server
    // lost mid-turn) left the command ends read from the container recorded nowhere, and the
    // caller's retry ran the command again. Here the state bucket refuses every write.
    const sb = sandboxRef(c.actors, 'sb-store-first');
    await sb.ask('create', { spec: { image: fx.busybox } }, { timeoutMs: 60_000 });
    const { taskId } = await sb.ask('startBackground', { cmd: 'echo ended-unobserved' });
    const containers = () => c.containers(['troupe.actor=sandbox/sb-store-first']);
    expect(await containers()).toHaveLength(1);
    // Ended, as Docker tells, while nobody asked the sandbox: only destroy reads its end.
    const recorded = await c.actors.states.read(sb.address);
    const handle = (recorded?.record.data as { commands: { handle: string }[] }).commands[0]!
      .handle;
    await waitFor(async () => (await fx.docker.getExec(handle).inspect()).Running === false, {
      timeoutMs: 30_000,
      message: 'the command ended',
    });
    const jsm = await jetstreamManager(c.actors.nc);
    const stream = `KV_${kvBucketName(c.cluster, 'state')}`;
    const { config } = await jsm.streams.info(stream);
    await jsm.streams.update(stream, { ...config, max_msg_size: 16 });
    try {
      const refused = await rejection(sb.ask('destroy', {}, { timeoutMs: 5_000 }));
      expect(refused.code).toBe('UNAVAILABLE');
      expect(await containers()).toHaveLength(1);
    } finally {
      await jsm.streams.update(stream, config);
    }
    await waitFor(
      async () => {
        await sb.ask('destroy', {}, { timeoutMs: 10_000 });
        return true;
      },
      { timeoutMs: 30_000, message: 'destroy succeeds once the bucket takes writes again' },
    );
    expect(await containers()).toEqual([]);
    const status = await sb.ask('status', {});
    expect(status.status).toBe('destroyed');
    expect(status.commands).toEqual([
      expect.objectContaining({
        taskId,
        ended: expect.objectContaining({ state: 'exited', stdout: 'ended-unobserved\n' }),
      }),
    ]);
  });

  test('a sandbox that was never created answers NOT_FOUND; a bad spec names the field', async () => {
    const sb = sandboxRef(c.actors, 'sb-none');
    const err = await rejection(sb.ask('exec', { cmd: ['true'] }));
    expect(err.code).toBe('NOT_FOUND');
    expect(err.message).toMatch(/has not been created/);
    const badSpec = await rejection(
      sb.ask('create', { spec: { image: fx.busybox, env: { OPENAI_API_KEY: 'x' } } }),
    );
    expect(badSpec.code).toBe('INVALID_ARGUMENT');
    expect(badSpec.message).toMatch(/spec\.env\.OPENAI_API_KEY: looks like a secret/);
    const noImage = await rejection(
      sb.ask('create', { spec: { image: 'troupe-no-such-image:latest' } }, { timeoutMs: 30_000 }),
    );
    expect(noImage.code).toBe('NOT_FOUND');
    expect(noImage.message).toMatch(/deploy\/images\/build\.sh/);
    // Activations without a container do not keep their slot.
    await waitFor(() => agent.system.activationCount === 0, {
      timeoutMs: 10_000,
      message: 'activations without a container passivated',
    });
  });
});
