import {
  closeUntrustedTextWorkers,
  parseUntrustedText,
  parseUntrustedTextAsync,
  type TroupeError,
  UntrustedTextWorkerLimits,
} from '@troupe/proto';
import { ParseWorkerPool, parseWorkerEntry } from '../../src/internal/parse-worker-pool';

/** A list limit above the task lists these tests parse. */
const LONG = 100_000;

/** A task list of `n` flow mappings: costly for the YAML parser (about 50 bytes per entry). */
function bigTaskList(n: number): string {
  const lines = ['kind: shell-tasks', 'tasks:'];
  for (let i = 0; i < n; i++) lines.push(`  - {id: t${i}, command: "echo ${i} hello world"}`);
  return lines.join('\n');
}

function errorOf(fn: () => unknown): TroupeError {
  try {
    fn();
  } catch (err) {
    return err as TroupeError;
  }
  throw new Error('expected an error');
}

async function rejectionOf(p: Promise<unknown>): Promise<TroupeError> {
  try {
    await p;
  } catch (err) {
    return err as TroupeError;
  }
  throw new Error('expected a rejection');
}

afterAll(async () => {
  await closeUntrustedTextWorkers();
});

describe('parseUntrustedTextAsync', () => {
  it('starts its worker from the TypeScript sources under jest', () => {
    // No parse-worker.js next to the sources: the worker compiles parse-worker.ts itself.
    const { entry, options } = parseWorkerEntry();
    expect(options.eval).toBe(true);
    expect(entry).toContain('parse-worker.ts');
  });

  it('parses a large document in a worker while the event loop keeps turning', async () => {
    const text = bigTaskList(30_000); // about 1.5 MB: 0.3-5 s of parsing on one thread
    expect(text.length).toBeGreaterThan(UntrustedTextWorkerLimits.OFF_THREAD_MIN_CHARS);
    // Warm the pool: starting a worker (and compiling the sources in it) is not what is measured.
    await parseUntrustedTextAsync(bigTaskList(1_000), { field: 'spec' });

    let ticks = 0;
    let maxGapMs = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      maxGapMs = Math.max(maxGapMs, now - last);
      last = now;
      ticks++;
    }, 5);
    const t0 = performance.now();
    let value: { tasks: unknown[] };
    try {
      value = (await parseUntrustedTextAsync(text, { field: 'spec', maxEntries: LONG })) as {
        tasks: unknown[];
      };
    } finally {
      clearInterval(timer);
    }
    const elapsedMs = performance.now() - t0;
    maxGapMs = Math.max(maxGapMs, performance.now() - last);

    expect(value.tasks).toHaveLength(30_000);
    expect(value.tasks[29_999]).toEqual({ id: 't29999', command: 'echo 29999 hello world' });
    // On the caller's thread the whole parse is one gap (gap ≈ elapsed); off it, the only gaps
    // are handing the text over and receiving the value. Relative to the run's own length, so a
    // slow or loaded machine does not fail it; capped, so a slow hand-over does.
    expect(maxGapMs).toBeLessThan(Math.min(elapsedMs / 2, 1_000));
    expect(ticks).toBeGreaterThan(3);
  }, 60_000);

  it('answers like the synchronous parse, errors with the same code, field and rule', async () => {
    const pad = `# ${'x'.repeat(UntrustedTextWorkerLimits.OFF_THREAD_MIN_CHARS)}\n`;
    const cases: [string, { maxDepth?: number; format?: 'json' }][] = [
      [`${pad}a: [1, 2\nb: 3`, {}], // syntax
      [`${pad}a: {b: {c: 1}}`, { maxDepth: 2 }], // depth
      [`${pad}a: 1\na: 2`, {}], // duplicate key
      [`${pad}a: *nope`, {}], // undefined alias
      [`{"a": ${' '.repeat(40_000)}`, { format: 'json' }],
    ];
    for (const [text, options] of cases) {
      const sync = errorOf(() => parseUntrustedText(text, { field: 'spec.tasks', ...options }));
      const off = await rejectionOf(
        parseUntrustedTextAsync(text, { field: 'spec.tasks', ...options }),
      );
      expect(off.name).toBe('TroupeError');
      expect(off.code).toBe('INVALID_ARGUMENT');
      expect(off.details).toEqual(sync.details);
      expect((off.details as { field: string }).field).toBe('spec.tasks');
      expect(off.message).toBe(sync.message);
      expect(off.retryable).toBe(false);
    }
    const ok = `${pad}__proto__: {polluted: 1}\nlist: [1, {b: 2}]`;
    expect(await parseUntrustedTextAsync(ok, { field: 'spec' })).toEqual(
      parseUntrustedText(ok, { field: 'spec' }),
    );
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('refuses an oversized document before copying it to a worker', async () => {
    const text = `a: ${'x'.repeat(100_000)}`;
    const err = await rejectionOf(
      parseUntrustedTextAsync(text, { field: 'task.yaml', maxBytes: 50_000 }),
    );
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toBe(
      errorOf(() => parseUntrustedText(text, { field: 'task.yaml', maxBytes: 50_000 })).message,
    );
  });

  it('refuses a parse past its deadline, stops its worker, and keeps serving', async () => {
    const pool = new ParseWorkerPool({ size: 1, maxHeapMb: 128, maxQueued: 4 });
    try {
      const text = bigTaskList(30_000);
      const err = await rejectionOf(pool.parse(text, { field: 'spec' }, 20));
      expect(err.code).toBe('INVALID_ARGUMENT');
      expect(err.details).toEqual({
        field: 'spec',
        rule: 'must parse within 20 ms (a document that costs more is refused)',
      });
      expect(pool.workers).toBe(0);
      expect(await pool.parse('a: 1', { field: 'spec' }, 30_000)).toEqual({ a: 1 });
    } finally {
      await pool.close();
    }
  }, 60_000);

  it('ends the wait when the signal aborts, and refuses beyond its queue', async () => {
    const pool = new ParseWorkerPool({ size: 1, maxHeapMb: 128, maxQueued: 1 });
    try {
      const text = bigTaskList(30_000);
      const controller = new AbortController();
      const running = pool.parse(
        text,
        { field: 'spec', maxEntries: LONG },
        60_000,
        controller.signal,
      );
      const queued = pool.parse(text, { field: 'spec', maxEntries: LONG }, 60_000);
      const refused = await rejectionOf(pool.parse(text, { field: 'spec' }, 60_000));
      expect(refused.code).toBe('UNAVAILABLE');
      expect(refused.retryable).toBe(true);
      controller.abort('user');
      const aborted = await rejectionOf(running);
      expect(aborted.code).toBe('CANCELLED');
      // The queued parse gets a new worker and completes.
      expect(((await queued) as { tasks: unknown[] }).tasks).toHaveLength(30_000);
    } finally {
      await pool.close();
    }
  }, 60_000);

  it('refuses a document whose parse needs more than the worker heap', async () => {
    const pool = new ParseWorkerPool({ size: 1, maxHeapMb: 16, maxQueued: 1 });
    try {
      const err = await rejectionOf(
        pool.parse(bigTaskList(60_000), { field: 'spec', maxEntries: LONG }, 60_000),
      );
      expect(err.code).toBe('INVALID_ARGUMENT');
      expect(err.message).toContain('MB of memory');
      expect(await pool.parse('a: 1', { field: 'spec' }, 30_000)).toEqual({ a: 1 });
    } finally {
      await pool.close();
    }
  }, 60_000);
});
