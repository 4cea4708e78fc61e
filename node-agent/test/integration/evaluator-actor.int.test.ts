import { ArtifactStore, evaluatorRef, type NodeAgent, sandboxRef } from '@troupe/node-agent';
import { startNatsServer, waitFor, type NatsServerHandle } from '@troupe/testkit';
import { TestCluster } from '@troupe/test-cluster';
import { dockerFixture, type DockerFixture, leftovers, rejection, sha256, tarOf } from './helpers';

/** The hidden grader: solution.sh must print 42; writes a score report. */
const GRADER = [
  'out=$(sh ./solution.sh 2>&1)',
  'echo "grading as $(id -u)" >&2',
  'if [ "$out" = 42 ]; then',
  '  echo \'{"score": 1}\' > "$GRADER_REPORT_FILE"; echo "PASSED test_answer"',
  'else',
  '  echo \'{"score": 0}\' > "$GRADER_REPORT_FILE"; echo "FAILED test_answer: got $out"; exit 1',
  'fi',
].join('\n');

let server: NatsServerHandle;
let c: TestCluster;
let fx: DockerFixture;
let agent: NodeAgent;
let artifacts: ArtifactStore;
beforeAll(async () => {
  server = await startNatsServer();
  fx = await dockerFixture();
  c = await TestCluster.start({ nats: server, cluster: fx.cluster, docker: true, actors: true });
  agent = await c.startNodeAgent({ hostId: 'grader-host', slots: { sandbox: 2, evaluator: 2 } });
  artifacts = await ArtifactStore.open(c.actors.nc, { cluster: c.cluster });
  await artifacts.put('suites/s1/grader.tar', await tarOf({ 'run-tests.sh': GRADER }));
});
afterAll(async () => {
  await c.stop();
  await server.stop();
});

/** Writes solution.sh in a sandbox and exports the workspace, as an agent's task would. */
async function exportWorkspace(taskId: string, solution: string): Promise<string> {
  const sb = sandboxRef(c.actors, `ws-${taskId}`);
  await sb.ask('create', { spec: { image: fx.busybox }, jobId: 'job-e' }, { timeoutMs: 60_000 });
  await sb.ask('putFiles', { destDir: '/workspace', files: { 'solution.sh': solution } });
  const artifact = `jobs/job-e/tasks/${taskId}/workspace.tar`;
  await sb.ask('exportFiles', { srcPath: '/workspace/.', artifact });
  await sb.ask('destroy', {});
  return artifact;
}

test('grades an exported workspace in a fresh container: pass, replay, fail; logs are artifacts', async () => {
  const good = await exportWorkspace('t1', 'echo 42\n');
  const bad = await exportWorkspace('t2', 'echo 41\n');
  const ev = evaluatorRef(c.actors, 'eval-1');
  const request = {
    graderArtifact: 'suites/s1/grader.tar',
    image: fx.busybox,
    command: ['sh', '/grader/run-tests.sh'],
    jobId: 'job-e',
  };

  const passed = await ev.ask(
    'grade',
    { ...request, gradeId: 'g1', workspaceArtifact: good },
    { timeoutMs: 60_000 },
  );
  expect(passed).toMatchObject({
    gradeId: 'g1',
    status: 'passed',
    score: 1,
    report: { score: 1 },
    exitCode: 0,
    replayed: false,
    logArtifacts: {
      stdout: 'jobs/job-e/tasks/t1/grade-g1/stdout.log',
      stderr: 'jobs/job-e/tasks/t1/grade-g1/stderr.log',
    },
  });
  expect(passed.graderDigest).toBe((await artifacts.info('suites/s1/grader.tar'))!.digest);
  expect(passed.workspaceDigest).toBe(sha256(await artifacts.get(good)));
  const stdout = Buffer.from(await artifacts.get(passed.logArtifacts.stdout)).toString();
  expect(stdout).toBe('PASSED test_answer\n');
  const stderr = Buffer.from(await artifacts.get(passed.logArtifacts.stderr)).toString();
  expect(stderr).toBe('grading as 1000\n');

  // A replay (same gradeId) returns the stored grade without grading again.
  const replay = await ev.ask('grade', { ...request, gradeId: 'g1', workspaceArtifact: good });
  expect(replay).toEqual({ ...passed, replayed: true });
  const conflict = await rejection(
    ev.ask('grade', { ...request, gradeId: 'g1', workspaceArtifact: bad }),
  );
  expect(conflict.code).toBe('ALREADY_EXISTS');
  expect(conflict.message).toMatch(/^grade\.gradeId: /);

  const failed = await ev.ask(
    'grade',
    { ...request, gradeId: 'g2', workspaceArtifact: bad },
    { timeoutMs: 60_000 },
  );
  expect(failed).toMatchObject({ status: 'failed', score: 0, exitCode: 1 });
  expect(failed.stdoutTail).toBe('FAILED test_answer: got 41\n');
  expect(Buffer.from(await artifacts.get(failed.logArtifacts.stdout)).toString()).toBe(
    'FAILED test_answer: got 41\n',
  );
  expect((await artifacts.list('jobs/job-e/tasks/t2/grade-g2/')).map((a) => a.name)).toEqual([
    'jobs/job-e/tasks/t2/grade-g2/grade.json',
    'jobs/job-e/tasks/t2/grade-g2/stderr.log',
    'jobs/job-e/tasks/t2/grade-g2/stdout.log',
  ]);

  const missing = await rejection(
    ev.ask('grade', { ...request, gradeId: 'g3', workspaceArtifact: 'jobs/job-e/none.tar' }),
  );
  expect(missing.code).toBe('NOT_FOUND');
  expect(missing.message).toMatch(/^grade\.workspaceArtifact: /);

  // Grading sandboxes are gone, and evaluators hold no slot between grades.
  expect(await leftovers(fx.docker, c.cluster)).toEqual({ containers: [], volumes: [] });
  await waitFor(() => agent.system.activationCount === 0, {
    timeoutMs: 10_000,
    message: 'evaluator passivated after grading',
  });
});
