import { type BudgetUpdate__Output, type JobsUpdate__Output } from '@troupe/proto';
import { budgetListUpdates } from '../../src/dashboard/budget-stream';
import { type BrowserListUpdate } from '../../src/dashboard/list-stream';

// The budget page's stream: WatchBudget and WatchJobs merged into one keyed list, a snapshot of
// both first, a watch's fresh snapshot after a reconnect removing what it no longer holds.

/** An async iterable the test feeds message by message. */
class Source<T> implements AsyncIterable<T> {
  private readonly queue: T[] = [];
  private wake: (() => void) | undefined;
  private onIdle: (() => void) | undefined;
  /** Resolves once the consumer has taken every message and asks for the next. */
  idle(): Promise<void> {
    return new Promise((resolve) => (this.onIdle = resolve));
  }
  push(m: T): void {
    this.queue.push(m);
    this.wake?.();
  }
  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      const m = this.queue.shift();
      if (m !== undefined) {
        yield m;
        continue;
      }
      const woken = new Promise<void>((resolve) => (this.wake = resolve));
      this.onIdle?.();
      await woken;
    }
  }
}

const totals = { usd: 0, tokens: '0', calls: '0' };

function scope(ledger: string, id: string, parent = 'cluster') {
  return {
    scope: id,
    parent,
    ledger,
    limit: null,
    spent: totals,
    reserved: totals,
    reservations: 0,
    exhausted: false,
  };
}

function budget(u: Partial<BudgetUpdate__Output>): BudgetUpdate__Output {
  return {
    snapshot: false,
    scopes: [],
    removedScopes: [],
    opened: [],
    closed: [],
    atUnixMs: '1000',
    ...u,
  } as unknown as BudgetUpdate__Output;
}

function jobs(u: Partial<JobsUpdate__Output>): JobsUpdate__Output {
  return {
    snapshot: false,
    jobs: [],
    removedJobIds: [],
    atUnixMs: '1000',
    ...u,
  } as JobsUpdate__Output;
}

test('one snapshot of both watches, then changes; a reopened watch removes what it lost', async () => {
  const b = new Source<BudgetUpdate__Output>();
  const j = new Source<JobsUpdate__Output>();
  const ctl = new AbortController();
  const it = budgetListUpdates(
    { watchBudget: () => b[Symbol.asyncIterator](), watchJobs: () => j[Symbol.asyncIterator]() },
    ctl.signal,
  );
  const next = async () => (await it.next()).value as BrowserListUpdate;
  const keys = (u: BrowserListUpdate) => (u.items as { key: string }[]).map((i) => i.key).sort();

  b.push(budget({ snapshot: true, scopes: [scope('cluster', 'cluster', '')] as never }));
  // A budget change before the jobs' snapshot is folded into the first snapshot.
  b.push(
    budget({
      scopes: [scope('cluster', 'job:a')] as never,
      opened: [{ id: 'r1', scope: 'job:a', ledger: 'cluster' }] as never,
    }),
  );
  const first = next();
  await b.idle();
  j.push(
    jobs({
      snapshot: true,
      jobs: [
        { jobId: 'a', name: 'A', state: 'RUNNING', specJson: '{"budget":{"usd":5}}' },
      ] as never,
    }),
  );
  const snap = await first;
  expect(snap.snapshot).toBe(true);
  expect(keys(snap)).toEqual([
    'job a',
    'reservation cluster r1',
    'scope cluster cluster',
    'scope cluster job:a',
  ]);
  expect(snap.items).toContainEqual(
    expect.objectContaining({ type: 'job', jobId: 'a', budgeted: true, limitUsd: 5 }),
  );

  b.push(
    budget({
      scopes: [scope('job:a', 'agent:a/s', 'job:a')] as never,
      closed: [{ ledger: 'cluster', id: 'r1' }] as never,
    }),
  );
  const change = await next();
  expect(change.snapshot).toBe(false);
  expect(keys(change)).toEqual(['scope job:a agent:a/s']);
  expect(change.removed).toEqual(['reservation cluster r1']);

  // WatchBudget reopened after a break: its snapshot no longer holds job:a.
  b.push(
    budget({
      snapshot: true,
      scopes: [scope('cluster', 'cluster', ''), scope('job:a', 'agent:a/s', 'job:a')] as never,
    }),
  );
  const reopened = await next();
  expect(reopened.snapshot).toBe(false);
  expect(reopened.removed).toEqual(['scope cluster job:a']);
  ctl.abort();
});
