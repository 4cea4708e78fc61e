import { type JobResults__Output } from '@troupe/proto';
import { type DashboardApi } from '../../src/dashboard/dashboard-api';
import { ResultsCache } from '../../src/dashboard/results-cache';

// The dashboard's results cache: a job page's counts are a one-task page, fresh every second at
// any size; the whole results (the task table) are read at most once per second plus half a
// millisecond per task while the job runs, and kept once it has finished.

function results(tasks: number, state: string): JobResults__Output {
  return {
    jobId: 'j1',
    state,
    tasks: Array.from({ length: tasks }, (_, i) => ({ taskId: `t${i}` })),
    nextPageToken: '',
  } as unknown as JobResults__Output;
}

class FakeApi {
  state = 'RUNNING';
  tasks = 100_000;
  readonly full: { pageSize?: number }[] = [];
  readonly pages: { pageSize?: number; offset?: number }[] = [];
  readonly api = {
    getResults: async (_jobId: string, o: { pageSize?: number } = {}) => {
      this.full.push({ ...(o.pageSize !== undefined ? { pageSize: o.pageSize } : {}) });
      return results(this.tasks, this.state);
    },
    // Like the coordinator: `pageSize` tasks from plan index `offset`.
    getResultsPage: async (_jobId: string, o: { pageSize?: number; offset?: number } = {}) => {
      this.pages.push({
        ...(o.pageSize !== undefined ? { pageSize: o.pageSize } : {}),
        ...(o.offset !== undefined ? { offset: o.offset } : {}),
      });
      const all = results(this.tasks, this.state);
      const from = o.offset ?? 0;
      return { ...all, tasks: all.tasks.slice(from, from + (o.pageSize ?? 1000)) };
    },
  } as unknown as DashboardApi;
}

let now = 1_000_000;
beforeEach(() => {
  jest.spyOn(Date, 'now').mockImplementation(() => now);
});
afterEach(() => jest.restoreAllMocks());

test('a running job: counts every second, the whole results once per second plus 0.5 ms a task', async () => {
  const fake = new FakeApi();
  const cache = new ResultsCache({ api: fake.api });
  // The job page's counts: one task, never the whole results.
  expect((await cache.summary('j1')).tasks).toHaveLength(1);
  now += 500;
  await cache.summary('j1');
  expect(fake.pages).toEqual([{ pageSize: 1 }]);
  now += 600;
  await cache.summary('j1');
  expect(fake.pages).toHaveLength(2);
  expect(fake.full).toHaveLength(0);

  // The task table: read in the largest pages, then reused for 1 s + 100,000 × 0.5 ms = 51 s.
  expect((await cache.get('j1')).tasks).toHaveLength(100_000);
  expect(fake.full).toEqual([{ pageSize: 5_000 }]);
  now += 50_000;
  await cache.get('j1');
  expect(fake.full).toHaveLength(1);
  now += 1_500;
  await cache.get('j1');
  expect(fake.full).toHaveLength(2);

  // A small job's table is as fresh as its counts.
  const small = new FakeApi();
  small.tasks = 10;
  const smallCache = new ResultsCache({ api: small.api });
  await smallCache.get('j1');
  now += 1_100;
  await smallCache.get('j1');
  expect(small.full).toHaveLength(2);
});

test('a finished job is read once: its whole results answer its counts too', async () => {
  const fake = new FakeApi();
  fake.state = 'SUCCEEDED';
  const cache = new ResultsCache({ api: fake.api });
  await cache.get('j1');
  now += 10 * 60_000;
  await cache.get('j1');
  expect((await cache.summary('j1')).tasks).toHaveLength(100_000);
  expect(fake.full).toHaveLength(1);
  expect(fake.pages).toHaveLength(0);
});

test('a failed read is not kept', async () => {
  const fake = new FakeApi();
  let fail = true;
  const api = {
    ...fake.api,
    getResults: async () => {
      if (fail) throw new Error('UNAVAILABLE');
      return results(3, 'RUNNING');
    },
  } as unknown as DashboardApi;
  const cache = new ResultsCache({ api });
  await expect(cache.get('j1')).rejects.toThrow('UNAVAILABLE');
  fail = false;
  expect((await cache.get('j1')).tasks).toHaveLength(3);
});

test('a stretch of the plan and a clicked task cost their own rows, not the whole job', async () => {
  const fake = new FakeApi();
  const cache = new ResultsCache({ api: fake.api });
  const page = await cache.window('j1', 99_900, 100);
  expect(page.tasks.map((t) => t.taskId)).toEqual(
    Array.from({ length: 100 }, (_, k) => `t${99_900 + k}`),
  );
  expect(fake.pages).toEqual([{ offset: 99_900, pageSize: 100 }]);
  // The same rows again within a second (another browser, a redraw): not read again.
  now += 500;
  await cache.window('j1', 99_900, 100);
  expect(fake.pages).toHaveLength(1);
  now += 600;
  await cache.window('j1', 99_900, 100);
  expect(fake.pages).toHaveLength(2);

  // A task shown in a window is read alone, by its plan index.
  expect((await cache.task('j1', 't99950'))?.taskId).toBe('t99950');
  expect(fake.pages[2]).toEqual({ offset: 99_950, pageSize: 1 });
  expect(fake.full).toHaveLength(0);
  // One no window showed is looked up in the whole results.
  expect((await cache.task('j1', 't5'))?.taskId).toBe('t5');
  expect(fake.full).toHaveLength(1);
  expect(await cache.task('j1', 'nope')).toBeUndefined();

  // While the whole results are fresh, windows and tasks are cut from them.
  const before = fake.pages.length;
  expect((await cache.window('j1', 10, 5)).tasks.map((t) => t.taskId)).toEqual([
    't10',
    't11',
    't12',
    't13',
    't14',
  ]);
  expect((await cache.task('j1', 't99950'))?.taskId).toBe('t99950');
  expect(fake.pages).toHaveLength(before);
});
