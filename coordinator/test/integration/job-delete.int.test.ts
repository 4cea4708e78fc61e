import { kvKeys } from '@troupe/actors';
import pino from 'pino';
import {
  Coordinator,
  DriverRegistry,
  remindAt,
  type JobDriver,
  type JobManager,
  taskActorId,
} from '@troupe/coordinator';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import {
  deadLetterStreamName,
  eventsStreamName,
  inboxStreamName,
  kvBucketName,
  objectStoreName,
  type TroupeError,
} from '@troupe/proto';
import {
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';

// Finished jobs were kept for good: every task's record, result and events, every artifact, in
// NATS (the soak's nats-server grew ~15 KB per task). DeleteJob deletes a finished job, and a
// coordinator with `jobRetentionMs` deletes them on its own; nothing of the job is left behind.

const gate = { open: Promise.resolve() };
const passing: JobDriver<{ id: string }, { ok: boolean }> = {
  name: 'passing',
  description: 'tasks that pass (after the gate opens)',
  validate() {},
  plan: (spec) => (spec.tasks as { id: string }[]).map((t) => ({ id: t.id, input: t })),
  runTask: async () => {
    await gate.open;
    return { ok: true };
  },
  grade: async (_ctx, _task, run) => ({ passed: run?.ok === true }),
};

const cluster = randomClusterName();
/** The coordinators' log lines, shown when the retention test fails (it failed once in CI). */
const logged: string[] = [];
const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(line) });
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

function startCoordinator(jobRetentionMs: number | null): Promise<Coordinator> {
  return Coordinator.start(
    {
      cluster,
      nats: { servers: server.url },
      heartbeatMs: 200,
      sweepIntervalMs: 200,
      metrics: { port: null },
      shutdownGraceMs: 500,
      actorRetentionMs: 600_000, // a deleted job's actors go at once all the same
      jobRetentionMs,
    },
    {
      drivers: new DriverRegistry().register(passing),
      logger,
      jobs: { taskActor: { idleTimeoutMs: 200 }, jobActor: { idleTimeoutMs: 500 } },
    },
  );
}

async function runJob(jobs: JobManager, tasks: number): Promise<string> {
  const { jobId } = await jobs.submit({
    spec: {
      kind: 'passing',
      concurrency: 3,
      tasks: Array.from({ length: tasks }, (_, i) => ({ id: `t${i}` })),
    },
    idempotencyKey: `key-${tasks}`,
  });
  await waitFor(async () => (await jobs.get(jobId)).state === 'SUCCEEDED', { timeoutMs: 30_000 });
  return jobId;
}

/** Consumers on the object store reading metadata (`.M.`) or chunks (`.C.`). */
async function objectConsumers(part: '.M.' | '.C.'): Promise<number> {
  const jsm = await jetstreamManager(nc);
  const all = await jsm.consumers.list(`OBJ_${objectStoreName(cluster)}`).next();
  return all.filter((c) => c.config.filter_subject?.includes(part)).length;
}

/** What NATS still holds of a job: subjects of its keys, events, inbox, artifacts, actors. */
async function leftOf(jobId: string, tasks: number) {
  const kvm = new Kvm(nc);
  const jsm = await jetstreamManager(nc);
  const jobsKv = await kvm.open(kvBucketName(cluster, 'jobs'));
  const directory = await kvm.open(kvBucketName(cluster, 'directory'));
  const state = await kvm.open(kvBucketName(cluster, 'state'));
  const events = await jsm.streams.info(eventsStreamName(cluster), {
    subjects_filter: `troupe.${cluster}.events.${jobId}`,
  });
  const inbox = await jsm.streams.info(inboxStreamName(cluster), { subjects_filter: '>' });
  // Objects by their metadata subjects in the stream's subject index, not `objects.list()`: that
  // waits for as many messages as were pending when it started, and hangs for good when the
  // sweeper deletes some meanwhile (the retention test's wait then timed out).
  const store = objectStoreName(cluster);
  const meta = await jsm.streams.info(`OBJ_${store}`, { subjects_filter: `$O.${store}.M.>` });
  const objectNames = Object.keys(meta.state.subjects ?? {}).map((s) =>
    Buffer.from(s.slice(s.lastIndexOf('.') + 1), 'base64url').toString('utf8'),
  );
  const taskIds = Array.from({ length: tasks }, (_, i) => taskActorId(jobId, i));
  const actorKeys = [
    ...(await kvKeys(directory, '>')),
    ...(await kvKeys(state, '>')),
    ...Object.keys(inbox.state.subjects ?? {}),
  ].filter((k) => k.includes(jobId) || taskIds.some((t) => k.includes(t)));
  return {
    jobKeys: (await kvKeys(jobsKv, `*.${jobId}.*`)).length,
    record: (await jobsKv.get(`job.${jobId}`))?.operation ?? 'none',
    events: events.state.subjects?.[`troupe.${cluster}.events.${jobId}`] ?? 0,
    artifacts: objectNames.filter((n) => n.startsWith(`jobs/${jobId}/`)).length,
    actorKeys,
  };
}

test('DeleteJob deletes a finished job and all it stored; a running one is refused', async () => {
  const coordinator = await startCoordinator(null);
  try {
    const jobs = coordinator.jobs!;
    let release!: () => void;
    gate.open = new Promise((r) => (release = r));
    const { jobId: running } = await jobs.submit({
      spec: { kind: 'passing', tasks: [{ id: 'r0' }] },
    });
    await expect(jobs.delete(running)).rejects.toMatchObject({
      code: 'BUSY',
      retryable: false,
      message: expect.stringMatching(/only a finished job can be deleted/),
    } satisfies Partial<TroupeError>);
    release();
    await waitFor(async () => (await jobs.get(running)).state === 'SUCCEEDED', {
      timeoutMs: 30_000,
    });

    const reads = await objectConsumers('.C.');
    const jobId = await runJob(jobs, 5);
    await jobs.results(jobId);
    // Its plan and task ids were read with gets, not a consumer per read (kept 5 minutes by the
    // server: 153 of them in the soak).
    expect(await objectConsumers('.C.')).toBe(reads);
    await jobs.store.putArtifact(
      `jobs/${jobId}/report.txt`,
      Buffer.from('x'.repeat(300_000)),
      'text/plain',
    );
    const before = await leftOf(jobId, 5);
    // Its plan, its task ids and the report.
    expect(before).toMatchObject({ jobKeys: 10, record: 'PUT', artifacts: 3 });
    // Its events, stored several to a message: the job's and its five tasks' (at least 3 each).
    expect(before.events).toBeGreaterThan(0);
    const eventCount = await jobs.events.lastSequence(jobId);
    expect(eventCount).toBeGreaterThan(2 + 5 * 3);
    expect(before.actorKeys.length).toBeGreaterThan(5); // the job actor, task actors

    // A reminder of the job still pending when it is deleted (a retry far off)…
    const jobActor = { kind: 'job', id: jobId };
    await remindAt(
      nc,
      cluster,
      jobActor,
      Date.now() + 600_000,
      'retry',
      { index: 0, attempt: 9 },
      {
        id: `retry-${jobId}-0-9`,
      },
    );
    const listingsBefore = await objectConsumers('.M.');
    const deleted = await jobs.delete(jobId);
    // Its objects were found from the stream's subject index, not by a consumer over every
    // object's metadata (the server keeps one 5 minutes: hundreds piled up in the soak).
    expect(await objectConsumers('.M.')).toBe(listingsBefore);
    // …and one that fires just after, to the job actor still live: taken without reading the
    // deleted plan (it was dead-lettered in the soak).
    await coordinator.system.refOf(jobActor).withHints({ jobId }).post('startSweep', { atMs: 1 });
    expect(deleted).toEqual({ keys: 10, events: eventCount, artifacts: 3 });
    await expect(jobs.get(jobId)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await leftOf(jobId, 5)).record).toBe('DEL'); // what WatchJobs streams see
    await expect(jobs.delete(jobId)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await jobs.list({})).jobs.map((j) => j.jobId)).not.toContain(jobId);
    // The job actor (live for a while after the job ended) and the task actors go once asleep.
    await waitFor(async () => (await leftOf(jobId, 5)).actorKeys.length === 0, {
      timeoutMs: 20_000,
      message: "the deleted job's actors retired",
    });
    const jsm = await jetstreamManager(nc);
    const dlq = await jsm.streams.info(deadLetterStreamName(cluster), { subjects_filter: '>' });
    expect(Object.keys(dlq.state.subjects ?? {}).filter((s) => s.includes(jobId))).toEqual([]);
    // The pending reminder was cancelled, its marker removed: nothing would wake the actor.
    const reminders = await new Kvm(nc).open(kvBucketName(cluster, 'reminders'));
    await waitFor(async () => (await kvKeys(reminders, '>')).every((k) => !k.includes(jobId)), {
      timeoutMs: 10_000,
      message: "the deleted job's reminders and their markers gone",
    });
    // Once the job actor is retired its record's marker goes too: nothing of the job is left,
    // its idempotency key included (a resubmission with it makes a new job, below).
    await waitFor(async () => (await leftOf(jobId, 5)).record === 'none', {
      timeoutMs: 20_000,
      message: "the deleted job's record marker removed",
    });
    expect(await leftOf(jobId, 5)).toEqual({
      jobKeys: 0,
      record: 'none',
      events: 0,
      artifacts: 0,
      actorKeys: [],
    });
    const jobsKv = await new Kvm(nc).open(kvBucketName(cluster, 'jobs'));
    expect((await kvKeys(jobsKv, '>')).filter((k) => k.includes(jobId))).toEqual([]);
    const again = await jobs.submit({
      spec: { kind: 'passing', tasks: [{ id: 't0' }] },
      idempotencyKey: 'key-5',
    });
    expect(again.jobId).not.toBe(jobId);
    // The other job is untouched.
    expect((await jobs.results(running)).tasks.map((t) => t.status)).toEqual(['TASK_PASSED']);
  } finally {
    gate.open = Promise.resolve();
    await coordinator.stop();
  }
});

test('a coordinator with a job retention deletes finished jobs on its own', async () => {
  const from = logged.length;
  const coordinator = await startCoordinator(1_000);
  try {
    const jobs = coordinator.jobs!;
    const jobId = await runJob(jobs, 3);
    await waitFor(async () => (await leftOf(jobId, 3)).record !== 'PUT', {
      timeoutMs: 20_000,
      message: 'the finished job deleted after its retention',
    }).catch(async (err: Error) => {
      // The record as it stands (its revision and the job actor's last write), for the cause.
      const jobsKv = await new Kvm(nc).open(kvBucketName(cluster, 'jobs'));
      const e = await jobsKv.get(`job.${jobId}`);
      throw new Error(
        `${err.message}; job ${jobId}'s record at revision ${e?.revision}: ${e?.string()}; ` +
          `the coordinator logged:\n${logged.slice(from).join('')}`,
      );
    });
    await waitFor(async () => (await leftOf(jobId, 3)).actorKeys.length === 0, {
      timeoutMs: 20_000,
    });
    expect(await leftOf(jobId, 3)).toMatchObject({ jobKeys: 0, events: 0, artifacts: 0 });
    expect(coordinator['leaderServices']?.sweeper?.deleted).toBeGreaterThanOrEqual(1);
  } finally {
    await coordinator.stop();
  }
});
