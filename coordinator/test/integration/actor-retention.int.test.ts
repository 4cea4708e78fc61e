import { kvKeys } from '@troupe/actors';
import {
  Coordinator,
  DriverRegistry,
  type JobDriver,
  type JobManager,
  taskActorId,
} from '@troupe/coordinator';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { inboxStreamName, kvBucketName } from '@troupe/proto';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';

// Nothing a finished job left was ever deleted: every task added its task actor's directory
// entry, state and inbox (and its sandbox's) to NATS for good, and nats-server's memory grew
// with every task a cluster ran (the long soak: +239 MB/h). The leader now retires a finished
// job's task actors after `actorRetentionMs`; the job's results stay.

const passing: JobDriver<{ id: string }, { ok: boolean }> = {
  name: 'passing',
  description: 'tasks that pass',
  validate() {},
  plan: (spec) => (spec.tasks as { id: string }[]).map((t) => ({ id: t.id, input: t })),
  runTask: async () => ({ ok: true }),
  grade: async (_ctx, _task, run) => ({ passed: run?.ok === true }),
};

const cluster = randomClusterName();
let server: NatsServerHandle;
let nc: NatsConnection;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

function startCoordinator(actorRetentionMs: number | null): Promise<Coordinator> {
  return Coordinator.start(
    {
      cluster,
      nats: { servers: server.url },
      heartbeatMs: 200,
      sweepIntervalMs: 200,
      metrics: { port: null },
      shutdownGraceMs: 500,
      actorRetentionMs,
    },
    {
      drivers: new DriverRegistry().register(passing),
      jobs: { taskActor: { idleTimeoutMs: 200 } },
    },
  );
}

/** The job's task actors that still have a directory entry, a state record or inbox messages. */
async function taskRecords(jobId: string, tasks: number) {
  const kvm = new Kvm(nc);
  const ids = new Set(Array.from({ length: tasks }, (_, i) => taskActorId(jobId, i)));
  const ofJob = (keys: string[]) => keys.filter((k) => ids.has(k.slice('job-task.'.length)));
  const directory = await kvm.open(kvBucketName(cluster, 'directory'));
  const state = await kvm.open(kvBucketName(cluster, 'state'));
  const jsm = await jetstreamManager(nc);
  const inbox = await jsm.streams.info(inboxStreamName(cluster), {
    subjects_filter: `troupe.${cluster}.inbox.job-task.*`,
  });
  const inboxKeys = Object.keys(inbox.state.subjects ?? {}).map((s) =>
    s.slice(`troupe.${cluster}.inbox.`.length),
  );
  return {
    directory: ofJob(await kvKeys(directory, 'job-task.*')).length,
    state: ofJob(await kvKeys(state, 'job-task.*')).length,
    inbox: ofJob(inboxKeys).length,
    jobActor: (await kvKeys(directory, `job.${jobId}`)).length,
  };
}

async function runJob(jobs: JobManager, tasks: number): Promise<string> {
  const { jobId } = await jobs.submit({
    spec: {
      kind: 'passing',
      concurrency: 3,
      tasks: Array.from({ length: tasks }, (_, i) => ({ id: `t${i}` })),
    },
  });
  await waitFor(async () => (await jobs.get(jobId)).state === 'SUCCEEDED', { timeoutMs: 30_000 });
  return jobId;
}

test("a finished job's task actors are deleted after the retention; its results stay", async () => {
  const coordinator = await startCoordinator(3_000);
  try {
    const jobs = coordinator.jobs!;
    const jobId = await runJob(jobs, 6);
    // Within the retention the records are there (a finished task actor passivates after 200 ms).
    expect(await taskRecords(jobId, 6)).toMatchObject({ directory: 6, state: 6, jobActor: 1 });
    await waitFor(
      async () => {
        const r = await taskRecords(jobId, 6);
        return r.directory + r.state + r.inbox === 0;
      },
      { timeoutMs: 30_000 },
    );
    expect((await taskRecords(jobId, 6)).jobActor).toBe(1);
    const results = await jobs.results(jobId);
    expect(results.tasks.map((t) => t.status)).toEqual(Array(6).fill('TASK_PASSED'));
    expect(coordinator['leaderServices']?.reaper?.retired).toBe(6);
  } finally {
    await coordinator.stop();
  }
});

test('a new leader retires what the job left before it took over', async () => {
  const keeper = await startCoordinator(null); // keeps finished jobs' actors
  let jobId: string;
  try {
    jobId = await runJob(keeper.jobs!, 4);
    await waitFor(
      async () => {
        const directory = await new Kvm(nc).open(kvBucketName(cluster, 'directory'));
        const entries = await Promise.all(
          Array.from({ length: 4 }, (_, i) => directory.get(`job-task.${taskActorId(jobId, i)}`)),
        );
        return entries.every((e) => e?.json<{ state: string }>().state === 'SLEEPING');
      },
      { timeoutMs: 10_000 },
    );
  } finally {
    await keeper.stop();
  }
  expect(await taskRecords(jobId, 4)).toMatchObject({ directory: 4, state: 4 });
  const leader = await startCoordinator(0);
  try {
    await waitFor(
      async () => {
        const r = await taskRecords(jobId, 4);
        return r.directory + r.state + r.inbox === 0;
      },
      { timeoutMs: 30_000 },
    );
    expect((await leader.jobs!.results(jobId)).tasks).toHaveLength(4);
  } finally {
    await leader.stop();
  }
});
