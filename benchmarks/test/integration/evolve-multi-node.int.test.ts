import path from 'node:path';
import { JetStreamJournalStore } from '@troupe/evolve';
import { registerBuiltinDrivers } from '@troupe/benchmarks';
import { DriverRegistry, type JobEventRecord } from '@troupe/coordinator';
import { waitFor } from '@troupe/testkit';
import { followContainerEvents, TestCluster } from '@troupe/test-cluster';
import { evolveJournalTaskId } from '../../src/evolve';

// One search spread over two node-agent processes: each has 2 sandbox slots and the task asks
// for 4 evaluator slots, so the placer puts evaluator sandboxes on both and both grade. One node
// agent is killed (SIGKILL) mid-search: the sandboxes it held are replaced on the survivor, the
// search finishes, and no attempt is evaluated twice (the journal's nodes are unique, and Docker
// saw no more grader runs than nodes, lost attempts and test gradings).

jest.setTimeout(600_000);

const SUITE = path.resolve(__dirname, 'evolve-fixtures/quick-suite');
const GRADER = 'grader/evaluate.py';

test('a search on two node agents uses both, survives the loss of one and evaluates nothing twice', async () => {
  const tc = await TestCluster.start({
    coordinator: { drivers: () => registerBuiltinDrivers(new DriverRegistry()) },
    docker: true,
  });
  const gradersByHost = new Map<string, number>();
  const stopEvents = await followContainerEvents(tc, ['exec_start'], (e) => {
    if (!e.Action?.includes(GRADER)) return;
    const host = e.Actor?.Attributes?.['troupe.host'] ?? '?';
    gradersByHost.set(host, (gradersByHost.get(host) ?? 0) + 1);
  });
  const graders = (host?: string): number =>
    host ? (gradersByHost.get(host) ?? 0) : [...gradersByHost.values()].reduce((a, b) => a + b, 0);
  try {
    const doomed = tc.spawnNodeAgent('evo-doomed', { TROUPE_SLOTS: 'sandbox=2' });
    tc.spawnNodeAgent('evo-survivor', { TROUPE_SLOTS: 'sandbox=2' });
    await tc.waitForHost('evo-doomed');
    await tc.waitForHost('evo-survivor');
    const jobs = tc.coordinator.jobs!;
    const record = await jobs.submit({
      spec: {
        kind: 'evolve',
        concurrency: 1,
        taskTimeoutMs: 400_000,
        retries: { max: 0 },
        config: { evaluatorSlots: 4, saveJournal: false },
        tasks: [
          {
            id: 'spread',
            suite: SUITE,
            limits: { maxEvaluations: 40, maxGenerations: 100 },
            search: { seed: 5, islands: 2, islandConcurrency: 4, childrenPerGeneration: 8 },
          },
        ],
      },
    });
    const events: JobEventRecord[] = [];
    const watching = (async () => {
      for await (const e of await jobs.watch(record.jobId, {
        signal: AbortSignal.timeout(420_000),
      })) {
        events.push(e);
      }
    })();

    // Both node agents grade before one of them dies.
    await waitFor(() => graders('evo-doomed') >= 2 && graders('evo-survivor') >= 2, {
      timeoutMs: 300_000,
      intervalMs: 50,
      message: 'grader runs on both node agents',
    });
    await doomed.kill('SIGKILL');
    const survivorAtKill = graders('evo-survivor');

    await watching;
    if (events.at(-1)?.type !== 'JOB_FINISHED') {
      const tail = events.slice(-40).map((e) => JSON.stringify(e).slice(0, 400));
      process.stderr.write(`the job's last events:\n${tail.join('\n')}\n`);
    }
    expect(events.at(-1)?.type).toBe('JOB_FINISHED');
    const task = (await jobs.results(record.jobId)).tasks[0]!;
    expect([task.status, task.error ?? '']).toEqual(['TASK_PASSED', '']);

    const journal = new JetStreamJournalStore({ connection: tc.nc, cluster: tc.cluster });
    const { records } = await journal.read(evolveJournalTaskId(record.jobId, 'spread'));
    const final = records.at(-1);
    if (final?.type !== 'final') throw new Error('the journal does not end with a final record');
    expect(final.status).toBe('succeeded');
    const nodes = records.filter((r) => r.type === 'node');
    const ids = nodes.map((n) => n.attemptId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(final.usage.evaluations).toBe(40);
    expect(final.usage.evaluations).toBe(nodes.length + final.usage.lostAttempts);
    // The survivor carried the rest of the search.
    expect(graders('evo-survivor')).toBeGreaterThan(survivorAtKill);
    // Grader runs Docker saw: one per node and per lost attempt, plus the test grading, plus at
    // most one per slot of the dead node: an evaluation in flight there when it died is an
    // infrastructure failure, retried once under the same attempt.
    const tests = records.filter((r) => r.type === 'test-start').length;
    await waitFor(() => graders() >= nodes.length + tests, {
      timeoutMs: 20_000,
      message: 'docker exec events of every evaluation',
    });
    expect(graders()).toBeLessThanOrEqual(nodes.length + final.usage.lostAttempts + tests + 2);
  } finally {
    stopEvents();
    await tc.stop();
  }
});
