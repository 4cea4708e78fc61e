import { JobStore } from '@troupe/coordinator';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { kvBucketName } from '@troupe/proto';
import { randomClusterName, startNatsServer, type NatsServerHandle } from '@troupe/testkit';

// The soak's nats-server grew a consumer every 5 s: the job sweeper lists the jobs that often,
// and each listing streamed the bucket with kv.history(), whose ordered consumer the client
// leaves in the server for five minutes (with its goroutines and store). A listing now reads the
// last entry of each job.* key with a consumer of its own and deletes it.

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

const record = (jobId: string, state: 'RUNNING' | 'SUCCEEDED') => ({
  jobId,
  name: jobId,
  kind: 'scripted',
  state,
  reason: '',
  labels: {},
  createdUnixMs: Date.now(),
  progress: { total: 1, done: 0, passed: 0, failed: 0, running: 1, costUsd: 0 },
  specJson: JSON.stringify({ kind: 'scripted', tasks: [{ id: 't0' }] }),
  priority: 0,
  weight: 1,
});

test('listing jobs leaves no consumer behind and sees each job’s latest record', async () => {
  const cluster = randomClusterName();
  const store = await JobStore.open(nc, cluster);
  for (let i = 0; i < 30; i++) await store.createJob(record(`j-list-${i}`, 'RUNNING'));
  // A later value of one record, and a key that is not a job record.
  await store.kv.put('job.j-list-3', JSON.stringify(record('j-list-3', 'SUCCEEDED')));
  await store.kv.put('job.j-list-4', 'not json');
  const jsm = await jetstreamManager(nc);
  const stream = `KV_${kvBucketName(cluster, 'jobs')}`;
  const before = (await jsm.streams.info(stream)).state.consumer_count;

  for (let round = 0; round < 5; round++) {
    const { jobs, revision } = await store.listJobsAt();
    expect(jobs).toHaveLength(29); // j-list-4 is not a record
    expect(jobs.find((j) => j.jobId === 'j-list-3')?.state).toBe('SUCCEEDED');
    expect(revision).toBe((await jsm.streams.info(stream)).state.last_seq);
  }
  expect((await jsm.streams.info(stream)).state.consumer_count).toBe(before);
});

test('listing an empty bucket', async () => {
  const store = await JobStore.open(nc, randomClusterName());
  expect(await store.listJobsAt()).toEqual({ jobs: [], revision: 0 });
});
