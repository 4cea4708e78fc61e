import path from 'node:path';
import {
  EVOLVE_ISLAND_KIND,
  islandActorId,
  JetStreamJournalStore,
  type NodeRecord,
} from '@troupe/evolve';
import { DriverRegistry, type JobEventRecord } from '@troupe/coordinator';
import { waitFor } from '@troupe/testkit';
import { registerBuiltinDrivers } from '../../src';
import { evolveJournalTaskId } from '../../src/evolve';
import { followContainerEvents, TestCluster } from '@troupe/test-cluster';

// The evolve driver's islands are actors: two coordinators (both host the job, task and
// `evolve-island` kinds, the islands contributed by the driver) and a node agent; the task's
// island steps are asks to `evolve-island/<searchId>-i<k>` activations on the coordinators, which
// journal their attempts and nodes themselves and evaluate only in the sandboxes the task leased
// them: Docker's exec events show at most `evaluatorSlots` evaluator runs at once although three
// islands with two lanes each want six. Real nats-server, coordinators, node agent and Docker.

jest.setTimeout(600_000);

const SUITE = path.resolve(__dirname, 'evolve-fixtures/quick-suite');

let tc: TestCluster;

beforeAll(async () => {
  tc = await TestCluster.start({
    coordinator: {
      ids: ['coord-a', 'coord-b'],
      drivers: () => registerBuiltinDrivers(new DriverRegistry()),
    },
    nodeAgent: {},
  });
});

afterAll(async () => {
  await tc?.stop();
});

/** Evaluator runs (execs of the grader) in flight in the cluster's sandboxes, from Docker events. */
async function watchEvaluatorExecs(): Promise<{
  max: () => number;
  started: () => number;
  stop: () => void;
}> {
  const running = new Set<string>();
  let max = 0;
  let started = 0;
  const stop = await followContainerEvents(tc, ['exec_start', 'exec_die'], (e) => {
    const execId = e.Actor?.Attributes?.['execID'];
    if (!execId) return;
    if (e.Action?.startsWith('exec_start') && e.Action.includes('grader/evaluate.py')) {
      running.add(execId);
      started++;
      max = Math.max(max, running.size);
    } else if (e.Action?.startsWith('exec_die')) {
      running.delete(execId);
    }
  });
  return { max: () => max, started: () => started, stop };
}

test('island steps run as evolve-island actors on the coordinators and never exceed the evaluator slots', async () => {
  const execs = await watchEvaluatorExecs();
  const jobs = tc.coordinators[0]!.jobs!;
  const slots = 2;
  const islands = 3;
  try {
    const record = await jobs.submit({
      spec: {
        kind: 'evolve',
        concurrency: 1,
        taskTimeoutMs: 400_000,
        retries: { max: 0 },
        config: { evaluatorSlots: slots, saveJournal: false },
        tasks: [
          {
            id: 'quick',
            suite: SUITE,
            limits: { maxEvaluations: 18, maxGenerations: 4 },
            search: {
              seed: 5,
              islands,
              draftsPerIsland: 1,
              childrenPerGeneration: 6,
              islandConcurrency: 2,
            },
          },
        ],
      },
    });
    const events: JobEventRecord[] = [];
    for await (const e of await jobs.watch(record.jobId, {
      signal: AbortSignal.timeout(500_000),
    })) {
      events.push(e);
    }
    expect(events.at(-1)?.type).toBe('JOB_FINISHED');
    const task = (await jobs.results(record.jobId)).tasks[0]!;
    expect(task.status).toBe('TASK_PASSED');
    const details = task.details as Record<string, unknown>;
    const searchId = evolveJournalTaskId(record.jobId, 'quick');

    // Every island was activated as an `evolve-island` actor on one of the coordinators.
    const coordinatorIds = tc.coordinators.map((c) => c.id);
    const hosts: string[] = [];
    for (let k = 0; k < islands; k++) {
      const { entry } = await tc.coordinators[0]!.system.directory.get({
        kind: EVOLVE_ISLAND_KIND,
        id: islandActorId(searchId, k),
      });
      expect(entry.epoch).toBeGreaterThanOrEqual(1);
      expect(entry.state).not.toBe('STOPPED');
      if (entry.hostId) {
        expect(coordinatorIds).toContain(entry.hostId);
        hosts.push(entry.hostId);
      }
    }
    // Each island journaled nodes of its own (the island actors write the journal).
    const journal = new JetStreamJournalStore({ connection: tc.nc, cluster: tc.cluster });
    const { records } = await journal.read(searchId);
    const nodes = records.filter((r): r is NodeRecord => r.type === 'node');
    for (let k = 0; k < islands; k++) expect(nodes.some((n) => n.island === k)).toBe(true);
    expect(records.at(-1)?.type).toBe('final');

    // The slot cap held across the islands: at most `slots` evaluator runs at once, every
    // validation evaluation (plus the test grading) ran, and waiting for a sandbox was reported.
    await waitFor(() => execs.started() >= nodes.length, {
      timeoutMs: 30_000,
      message: 'exec events of every evaluation',
    });
    expect(execs.max()).toBeLessThanOrEqual(slots);
    expect(execs.max()).toBeGreaterThanOrEqual(1);
    // Per-evaluation leases: waiting for a sandbox is the attempt's queueMs.
    expect(nodes.some((n) => n.timings.queueMs > 0)).toBe(true);
    expect(details['queueMs']).toBeGreaterThan(0);
    process.stderr.write(
      `islands: hosts ${JSON.stringify(hosts)}, max concurrent evaluator execs ${execs.max()}, ` +
        `${execs.started()} execs, ${nodes.length} nodes, queueMs ${String(details['queueMs'])}, ` +
        `chargedMs ${String(details['chargedMs'])}\n`,
    );
  } finally {
    execs.stop();
  }
});
