import { FairQueue, type JobPolicy } from '../../src/fair-queue';

function drain(
  q: FairQueue<string>,
  n: number,
  admit: (item: string) => boolean = () => true,
): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const item = q.admitNext(admit);
    if (item === undefined) break;
    out.push(item);
  }
  return out;
}

test('admissions follow the weights while both jobs are backlogged', () => {
  const weights: Record<string, JobPolicy> = {
    a: { weight: 1, priority: 0 },
    b: { weight: 3, priority: 0 },
  };
  const q = new FairQueue<string>((job) => weights[job]!);
  for (let i = 0; i < 100; i++) {
    q.push('a', `a${i}`);
    q.push('b', `b${i}`);
  }
  const first = drain(q, 80);
  expect(first.filter((x) => x.startsWith('b'))).toHaveLength(60);
  // Each job's items keep their order.
  expect(first.filter((x) => x.startsWith('a'))).toEqual([
    'a0',
    'a1',
    'a2',
    'a3',
    'a4',
    'a5',
    'a6',
    'a7',
    'a8',
    'a9',
    'a10',
    'a11',
    'a12',
    'a13',
    'a14',
    'a15',
    'a16',
    'a17',
    'a18',
    'a19',
  ]);
});

test('higher priority goes first; an idle job banks no credit', () => {
  const policies: Record<string, JobPolicy> = {
    low: { weight: 1, priority: 0 },
    high: { weight: 1, priority: 5 },
    late: { weight: 1, priority: 0 },
  };
  const q = new FairQueue<string>((job) => policies[job]!);
  q.push('low', 'l1');
  q.push('low', 'l2');
  q.push('high', 'h1');
  expect(drain(q, 1)).toEqual(['h1']);
  expect(drain(q, 2)).toEqual(['l1', 'l2']);
  // 'late' arrives after 'low' was served 50 times alone: it gets its fair share from now on,
  // not 50 admissions in a row of banked credit.
  for (let i = 3; i < 80; i++) q.push('low', `l${i}`);
  drain(q, 48);
  for (let i = 0; i < 20; i++) q.push('late', `x${i}`);
  const next = drain(q, 20);
  const late = next.filter((x) => x.startsWith('x')).length;
  expect(late).toBeGreaterThanOrEqual(9);
  expect(late).toBeLessThanOrEqual(11);
});

test('a job whose head cannot be admitted does not block the others; ineligible jobs are skipped', () => {
  const q = new FairQueue<string>(() => ({ weight: 1, priority: 0 }));
  q.push('a', 'big');
  q.push('b', 'small');
  expect(q.admitNext((item) => item !== 'big')).toBe('small');
  expect(
    q.admitNext(
      () => true,
      (job) => job !== 'a',
    ),
  ).toBeUndefined();
  expect(q.size).toBe(1);
  expect(q.remove('a', 'big')).toBe(true);
  expect(q.size).toBe(0);
});
