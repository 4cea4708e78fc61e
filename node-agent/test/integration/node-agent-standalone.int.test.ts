import { evaluatorRef, readTar, sandboxRef } from '@troupe/node-agent';
import { TestCluster } from '@troupe/test-cluster';
import { makeTempDir, startNatsServer, type NatsServerHandle, type TempDir } from '@troupe/testkit';
import { tarOf } from './helpers';

let server: NatsServerHandle;
let dir: TempDir;
beforeAll(async () => {
  server = await startNatsServer();
  dir = await makeTempDir('troupe-standalone-');
});
afterAll(async () => {
  await dir.cleanup();
  await server.stop();
});

test('standalone with the process backend: places its own activations, no Docker needed', async () => {
  const c = await TestCluster.start({
    nats: server,
    coordinator: false,
    nodeAgent: {
      hostId: 'laptop',
      backend: 'process',
      allowProcessBackend: true,
      processBackend: { rootDir: dir.path },
      standalone: true,
      shutdownGraceMs: 1_000,
    },
    docker: false,
    actors: true,
  });
  const agent = c.nodeAgent;
  const client = c.actors;
  try {
    expect(agent.backend.kind).toBe('process');
    expect(agent.backends).toContain('process');
    const sb = sandboxRef(client, 'dev-1');
    const created = await sb.ask('create', { spec: { image: 'ignored', files: { 'a.txt': 'A' } } });
    expect(created.metadata.policyExceptions).toContain('backend:process');
    expect((await sb.ask('exec', { cmd: ['cat', 'a.txt'] })).stdout).toBe('A');
    await sb.ask('exec', { cmd: 'echo 42 > solution.txt' });
    const exported = await sb.ask('exportFiles', {
      srcPath: '/workspace/.',
      artifact: 'ws/dev-1.tar',
    });
    const names = (await readTar(await agent.artifacts.get(exported.artifact))).map((e) => e.name);
    expect(names).toEqual(expect.arrayContaining(['./a.txt', './solution.txt']));

    await agent.artifacts.put(
      'graders/g.tar',
      await tarOf({ 'run-tests.sh': 'test "$(cat solution.txt)" = 42 && echo ok' }),
    );
    const grade = await evaluatorRef(client, 'ev').ask('grade', {
      gradeId: 'g1',
      workspaceArtifact: exported.artifact,
      graderArtifact: 'graders/g.tar',
      image: 'ignored',
      // The process backend does not map absolute paths inside commands: /grader is ../volume-0.
      command: ['sh', '../volume-0/run-tests.sh'],
    });
    expect(grade).toMatchObject({ status: 'passed', exitCode: 0, stdoutTail: 'ok\n' });
    await sb.ask('destroy', {});
  } finally {
    await c.stop();
  }
});
