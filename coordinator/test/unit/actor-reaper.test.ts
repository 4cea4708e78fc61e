import { type DirectoryEntry, type RetireOutcome } from '@troupe/actors';
import { type ActorAddress, noopLogger } from '@troupe/proto';
import { ActorReaper } from '../../src/actor-reaper';

/** A reaper over scripted jobs and retirements; `now` and the outcomes are the test's. */
function rig(finished: Record<string, number | undefined>) {
  const clock = { now: 10_000 };
  const outcomes = new Map<string, RetireOutcome | Error>();
  const asked: string[] = [];
  const forgotten: string[] = [];
  const reaper = new ActorReaper({
    retentionMs: 1_000,
    intervalMs: 60_000,
    finishedAt: async (jobId) => finished[jobId],
    retire: async (addr: ActorAddress) => {
      const key = `${addr.kind}.${addr.id}`;
      asked.push(key);
      const o = outcomes.get(key) ?? 'retired';
      if (o instanceof Error) throw o;
      return o;
    },
    onRetired: (key) => forgotten.push(key),
    log: noopLogger,
    now: () => clock.now,
  });
  return { reaper, clock, outcomes, asked, forgotten };
}

const sleeping = (jobId?: string, retireWithJob?: true): DirectoryEntry => ({
  state: 'SLEEPING',
  epoch: 1,
  updatedAtMs: 0,
  ...(jobId ? { jobId } : {}),
  ...(retireWithJob ? { retireWithJob } : {}),
});

test('takes in only entries that name a job and retire with it', () => {
  const { reaper } = rig({});
  reaper.observe('job-task.j1-0', sleeping('j1', true));
  reaper.observe('sandbox.s1', { ...sleeping('j1', true), state: 'IDLE', hostId: 'h' });
  reaper.observe('job.j1', sleeping('j1')); // the job actor: its results are read from it
  reaper.observe('agent.a', sleeping(undefined, true));
  reaper.observe('gone.x', undefined);
  expect(reaper.pending()).toEqual({ j1: 2 });
});

test("retires a job's actors once it has been finished for the retention, not before", async () => {
  const { reaper, clock, asked, forgotten } = rig({ done: 9_500, running: undefined });
  reaper.observe('job-task.done-0', sleeping('done', true));
  reaper.observe('job-task.done-1', sleeping('done', true));
  reaper.observe('job-task.running-0', sleeping('running', true));
  await reaper.runPass();
  expect(asked).toEqual([]); // finished 500 ms ago, retention 1 s
  clock.now = 10_500;
  await reaper.runPass();
  expect(asked.sort()).toEqual(['job-task.done-0', 'job-task.done-1']);
  expect(forgotten.sort()).toEqual(['job-task.done-0', 'job-task.done-1']);
  expect(reaper.retired).toBe(2);
  // The job is forgotten; the running one is kept, untouched.
  expect(reaper.pending()).toEqual({ running: 1 });
});

test('keeps what is live, changed or failed for the next pass', async () => {
  const { reaper, clock, outcomes, asked } = rig({ j: 0 });
  for (const k of ['a', 'b', 'c', 'd']) reaper.observe(`job-task.${k}`, sleeping('j', true));
  outcomes.set('job-task.a', 'live');
  outcomes.set('job-task.b', 'changed');
  outcomes.set('job-task.c', new Error('stream has no leader'));
  outcomes.set('job-task.d', 'absent');
  clock.now = 5_000;
  await reaper.runPass();
  expect(reaper.pending()).toEqual({ j: 3 });
  expect(reaper.retired).toBe(0);
  outcomes.clear();
  asked.length = 0;
  await reaper.runPass();
  expect(asked.sort()).toEqual(['job-task.a', 'job-task.b', 'job-task.c']);
  expect(reaper.pending()).toEqual({});
  expect(reaper.retired).toBe(3);
});
