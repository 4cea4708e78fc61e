import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { Coordinator, DriverRegistry, type JobEventRecord } from '@troupe/coordinator';
import {
  ensureDocker,
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { createIssueResolutionDriver } from '../../src/issue-resolution';

// A node agent dies mid-job: two `troupe-node-agent` processes host the sandboxes and evaluators
// of a gold bugfix-mini job; once one of them holds a task's sandbox it is killed with SIGKILL.
// Its tasks are retried on the other agent and the job completes with every task passed; a
// node agent restarted with the dead one's host id reaps what it left, so no container remains.

jest.setTimeout(900_000);

const SUITE = path.resolve(__dirname, '../../suites/bugfix-mini');
const NODE_AGENT_MAIN = path.resolve(__dirname, '../../../node-agent/dist/main.js');

let server: NatsServerHandle;
let coordinator: Coordinator;
let cluster: string;
let docker: Awaited<ReturnType<typeof ensureDocker>>;
const children: ChildProcess[] = [];

function spawnAgent(hostId: string): ChildProcess {
  const child = spawn(process.execPath, [NODE_AGENT_MAIN], {
    env: {
      ...process.env,
      TROUPE_CLUSTER: cluster,
      TROUPE_NATS_URL: server.url,
      TROUPE_HOST_ID: hostId,
      TROUPE_SLOTS: 'sandbox=2,evaluator=2',
      TROUPE_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr?.on('data', (b: Buffer) => (err = `${err}${b.toString()}`.slice(-4_000)));
  child.once('exit', (code, signal) => {
    if (code !== 0 && signal !== 'SIGKILL' && signal !== 'SIGTERM') {
      process.stderr.write(`node agent ${hostId} exited ${code ?? signal}: ${err}\n`);
    }
  });
  children.push(child);
  return child;
}

async function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise((resolve) => child.once('exit', resolve));
}

const registered = (hostId: string) =>
  waitFor(() => coordinator.registry?.schedulable().some((h) => h.info.hostId === hostId), {
    timeoutMs: 30_000,
    message: `node agent ${hostId} registered`,
  });

async function containersOf(labels: string[]): Promise<string[]> {
  const list = await docker.listContainers({
    all: true,
    filters: { label: [`troupe.cluster=${cluster}`, ...labels] },
  });
  return list.map((c) => c.Id);
}

beforeAll(async () => {
  docker = await ensureDocker();
  server = await startNatsServer();
  cluster = randomClusterName();
  coordinator = await Coordinator.start(
    {
      cluster,
      nats: { servers: server.url },
      heartbeatMs: 250,
      missedHeartbeats: 4,
      sweepIntervalMs: 500,
      metrics: { port: null },
      shutdownGraceMs: 0,
    },
    { drivers: new DriverRegistry().register(createIssueResolutionDriver()) },
  );
});

afterAll(async () => {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
    await exited(c);
  }
  await coordinator?.stop().catch(() => undefined);
  await server?.stop();
});

test('a node agent killed mid-job: its tasks are retried elsewhere, the job completes, nothing leaks', async () => {
  const doomed = spawnAgent('doomed-host');
  spawnAgent('survivor-host');
  await registered('doomed-host');
  await registered('survivor-host');

  const jobs = coordinator.jobs!;
  const record = await jobs.submit({
    spec: {
      kind: 'issue-resolution',
      concurrency: 4,
      taskTimeoutMs: 300_000,
      retries: { max: 3, backoffMs: 500, maxBackoffMs: 2_000 },
      // Images exist already: a request lost with the dead host fails after 30 s, not 5 min.
      config: { agent: { kind: 'gold' }, createTimeoutMs: 30_000 },
      tasks: { suite: SUITE },
    },
  });
  const events: JobEventRecord[] = [];
  const watching = (async () => {
    for await (const e of await jobs.watch(record.jobId, {
      signal: AbortSignal.timeout(800_000),
    })) {
      events.push(e);
    }
  })();

  // Kill the doomed agent while it holds an agent sandbox of a running task.
  await waitFor(async () => (await containersOf(['troupe.host=doomed-host'])).length > 0, {
    timeoutMs: 300_000,
    intervalMs: 100,
    message: 'a sandbox on the doomed host',
  });
  doomed.kill('SIGKILL');
  await exited(doomed);

  await watching;
  expect(events[events.length - 1]?.type).toBe('JOB_FINISHED');
  const results = await jobs.results(record.jobId);
  expect(results.tasks.length).toBeGreaterThanOrEqual(8);
  for (const t of results.tasks) {
    if (t.status !== 'TASK_PASSED') {
      process.stderr.write(`${t.taskId} ${t.status} attempts ${t.attempts}: ${t.error}\n`);
    }
  }
  for (const t of results.tasks) expect([t.taskId, t.status]).toEqual([t.taskId, 'TASK_PASSED']);
  // The interrupted work was retried (a later attempt, or a replayed execution).
  const retried = results.tasks.filter((t) => t.attempts > 1);
  expect(retried.length).toBeGreaterThan(0);
  expect(events.some((e) => e.type === 'TASK_RETRY')).toBe(true);

  // The dead host's containers are orphans until a node agent with its host id reaps them.
  spawnAgent('doomed-host');
  await registered('doomed-host');
  await waitFor(async () => (await containersOf([])).length === 0, {
    timeoutMs: 120_000,
    message: 'no container of the cluster left',
  });
});
