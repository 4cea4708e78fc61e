import { type RetireOutcome } from '@troupe/actors';
import { type ActorAddress, noopLogger } from '@troupe/proto';
import { JobSweeper } from '../../src/job-sweeper';

/** A stored job record as the sweeper reads it. */
function stored(jobId: string, state: string, finishedUnixMs?: number) {
  return {
    jobId,
    stored: {
      jobId,
      name: jobId,
      kind: 'k',
      state,
      reason: '',
      labels: {},
      createdUnixMs: 1,
      ...(finishedUnixMs !== undefined ? { finishedUnixMs } : {}),
      progress: { total: 1, done: 1, passed: 1, failed: 0, running: 0, costUsd: 0 },
      specJson: '{}',
      priority: 0,
      weight: 1,
    },
  };
}

/** A sweeper over scripted jobs, gone notes and retirements; the clock is the test's. */
function rig(
  retentionMs: number | null,
  jobs: ReturnType<typeof stored>[],
  gone: string[] = [],
  recordStill: string[] = [],
) {
  const deleted: string[] = [];
  const cancelled: string[] = [];
  const retired: string[] = [];
  const outcomes = new Map<string, RetireOutcome>();
  const goneLeft = new Set(gone);
  const records = new Set(recordStill);
  const sweeper = new JobSweeper({
    retentionMs,
    intervalMs: 60_000,
    jobs: {
      listJobs: async () => jobs,
      delete: async (jobId) => {
        if (jobId === 'broken') throw new Error('store down');
        deleted.push(jobId);
        goneLeft.add(jobId);
        records.delete(jobId);
      },
      goneJobs: async () => [...goneLeft],
      forgetDeletedJob: async (jobId) => void goneLeft.delete(jobId),
      jobRecordStored: async (jobId) => records.has(jobId),
    },
    retire: async (addr: ActorAddress) => {
      retired.push(addr.id);
      return outcomes.get(addr.id) ?? 'retired';
    },
    cancelReminders: async (jobId) => {
      cancelled.push(jobId);
      return 0;
    },
    log: noopLogger,
    now: () => 100_000,
  });
  return { sweeper, deleted, cancelled, retired, outcomes, goneLeft };
}

test('deletes finished jobs past the retention, only those', async () => {
  const { sweeper, deleted } = rig(10_000, [
    stored('old', 'SUCCEEDED', 80_000),
    stored('edge', 'FAILED', 90_000),
    stored('recent', 'CANCELLED', 95_000),
    stored('running', 'RUNNING'),
    stored('queued-old', 'QUEUED', 1),
  ]);
  await sweeper.runPass();
  expect(deleted).toEqual(['old', 'edge']);
  expect(sweeper.deleted).toBe(2);
});

test('without a retention it deletes nothing, yet retires what deletions left', async () => {
  const { sweeper, deleted, cancelled, goneLeft } = rig(
    null,
    [stored('old', 'SUCCEEDED', 1)],
    ['by-hand'],
  );
  await sweeper.runPass();
  expect(deleted).toEqual([]);
  expect(cancelled).toEqual(['by-hand']);
  expect([...goneLeft]).toEqual([]);
});

test("a deleted job's live actor is tried again; a failed deletion does not stop the pass", async () => {
  const { sweeper, deleted, outcomes, goneLeft } = rig(0, [
    stored('broken', 'FAILED', 1),
    stored('a', 'SUCCEEDED', 1),
  ]);
  outcomes.set('a', 'live');
  await sweeper.runPass();
  expect(deleted).toEqual(['a']);
  expect([...goneLeft]).toEqual(['a']); // kept: its job actor was live
  outcomes.set('a', 'absent');
  await sweeper.runPass();
  expect([...goneLeft]).toEqual([]);
});

test('a deletion cut short before its record went is finished before its actor is retired', async () => {
  const { sweeper, deleted, retired, goneLeft } = rig(null, [], ['cut-short'], ['cut-short']);
  await sweeper.runPass();
  expect(deleted).toEqual(['cut-short']);
  expect(retired).toEqual([]); // its record still showed: the job actor stays this pass
  expect([...goneLeft]).toEqual(['cut-short']);
  await sweeper.runPass();
  expect(retired).toEqual(['cut-short']);
  expect([...goneLeft]).toEqual([]);
});
