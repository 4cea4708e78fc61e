import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  EVOLVE_ISLAND_KIND,
  islandActorId,
  JetStreamJournalStore,
  type JournalRecord,
} from '@troupe/evolve';
import { registerBuiltinDrivers } from '@troupe/benchmarks';
import { type Coordinator, DriverRegistry, type JobEventRecord } from '@troupe/coordinator';
import { waitFor } from '@troupe/testkit';
import { evolveJournalTaskId } from '../../src/evolve';
import { followContainerEvents, TestCluster } from '@troupe/test-cluster';

// The evolve driver under the job runtime keeps its search journal in JetStream (the host's
// connection, no journal configured): kill -9 of the coordinator process running the search in
// the middle of a generation, then a coordinator on another host re-executes the task and the
// search resumes from the journal. Real nats-server, Docker sandboxes, host processes.
// The killed host runs the built packages (dist/): `npx tsc -b tsconfig.build.json` first.

jest.setTimeout(600_000);

const FIXTURES = path.resolve(__dirname, 'evolve-fixtures');
const SUITE = path.join(FIXTURES, 'quick-suite');
const builtPackages = existsSync(path.resolve(__dirname, '../../dist/index.js'));

const builtinDrivers = () => registerBuiltinDrivers(new DriverRegistry());

function hostProcess(
  tc: TestCluster,
  spec: unknown,
): { child: ChildProcess; jobId: Promise<string>; output: string[] } {
  const child = spawn(
    process.execPath,
    [
      path.join(FIXTURES, 'coordinator-process.js'),
      tc.server.url,
      tc.cluster,
      JSON.stringify(spec),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output: string[] = [];
  child.stderr?.on('data', (d: Buffer) => output.push(d.toString()));
  const jobId = new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /JOB (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`host exited ${code}: ${output.join('')}`)));
  });
  return { child, jobId, output };
}

/** Counts evaluator runs (execs of the grader) in the cluster's sandboxes, from Docker events. */
async function countEvaluatorExecs(
  tc: TestCluster,
): Promise<{ count: () => number; stop: () => void }> {
  let count = 0;
  const stop = await followContainerEvents(tc, ['exec_start'], (e) => {
    if (e.Action?.includes('grader/evaluate.py')) count++;
  });
  return { count: () => count, stop };
}

(builtPackages ? test : test.skip)(
  'kill -9 of the host running a search: another host resumes it, the journal continues and no attempt is evaluated twice',
  async () => {
    // No coordinator yet: the killed host (a process) runs the job; one starts in this process
    // after the kill.
    const tc = await TestCluster.start({
      coordinator: false,
      nodeAgent: { shutdownGraceMs: 1_000 },
    });
    const { cluster } = tc;
    const journal = new JetStreamJournalStore({ connection: tc.nc, cluster });
    const execs = await countEvaluatorExecs(tc);
    const host = hostProcess(tc, {
      kind: 'evolve',
      concurrency: 1,
      taskTimeoutMs: 400_000,
      retries: { max: 0 },
      config: { evaluatorSlots: 2, saveJournal: false },
      tasks: [{ id: 'quick', suite: SUITE, search: { seed: 3 } }],
    });
    let survivor: Coordinator | undefined;
    try {
      const jobId = await host.jobId;
      const searchId = evolveJournalTaskId(jobId, 'quick');
      // Kill in the middle of a generation: some nodes in, an evaluation started and not back.
      let atKill: JournalRecord[] = [];
      await waitFor(
        async () => {
          const { records } = await journal.read(searchId);
          const nodes = records.filter((r) => r.type === 'node').length;
          const attempts = records.filter((r) => r.type === 'attempt').length;
          atKill = records;
          return nodes >= 6 && attempts > nodes;
        },
        { timeoutMs: 240_000, message: 'search progress before the kill', intervalMs: 50 },
      );
      host.child.kill('SIGKILL');
      await new Promise((r) => host.child.once('exit', r));
      const beforeKill = (await journal.read(searchId)).records;
      expect(beforeKill.length).toBeGreaterThanOrEqual(atKill.length);
      expect(beforeKill.some((r) => r.type === 'final')).toBe(false);

      // Another host (this process: a coordinator from source with the built-in drivers and no
      // journal configured) takes the job over; its task actor re-executes the attempt.
      survivor = await tc.startCoordinator({
        drivers: builtinDrivers,
        config: { leaseMs: 2000, renewMs: 500 },
        deps: { jobs: { watchdogMs: 1000 } },
      });
      const jobs = survivor.jobs!;
      const events: JobEventRecord[] = [];
      for await (const e of await jobs.watch(jobId, { signal: AbortSignal.timeout(400_000) })) {
        events.push(e);
      }
      expect(events.at(-1)?.type).toBe('JOB_FINISHED');
      const results = await jobs.results(jobId);
      const task = results.tasks[0]!;
      expect(task.status).toBe('TASK_PASSED');
      const details = task.details as Record<string, unknown>;

      const after = (await journal.read(searchId)).records;
      // The same journal: what was there at the kill is a prefix of the finished journal.
      expect(after.slice(0, beforeKill.length)).toEqual(beforeKill);
      const final = after.at(-1);
      if (final?.type !== 'final') throw new Error('the journal does not end with a final record');
      expect(final.status).toBe('succeeded');
      const nodes = after.filter((r) => r.type === 'node');
      const ids = nodes.map((n) => n.attemptId);
      expect(new Set(ids).size).toBe(ids.length);
      expect(final.usage.evaluations).toBe(24);
      expect(final.usage.evaluations).toBe(nodes.length + final.usage.lostAttempts);
      // Attempts journaled before the kill without a node were lost with the host: they stay lost
      // (never evaluated again). Usually one or two; zero when the kill landed between two
      // evaluations, so the count is compared, not required to be positive.
      const nodedAtKill = new Set(
        beforeKill.flatMap((r) => (r.type === 'node' ? [r.attemptId] : [])),
      );
      const lostAtKill = beforeKill.filter(
        (r) => r.type === 'attempt' && !nodedAtKill.has(r.attemptId),
      ).length;
      expect(final.usage.lostAttempts).toBe(lostAtKill);
      expect(details['evaluations']).toBe(24);
      // Evaluator runs seen by Docker: each node once, plus the lost attempts that reached an
      // evaluator before the kill, plus the test grading. A resumed search that evaluated a
      // journaled attempt again would exceed this.
      const tests = after.filter((r) => r.type === 'test-start').length;
      await waitFor(() => execs.count() >= nodes.length + tests, {
        timeoutMs: 20_000,
        message: 'docker exec events of every evaluation',
      });
      expect(execs.count()).toBeLessThanOrEqual(nodes.length + final.usage.lostAttempts + tests);
      // The evaluator sandboxes of the killed execution are gone too.
      await waitFor(async () => (await tc.containers([`troupe.job=${jobId}`])).length === 0, {
        timeoutMs: 60_000,
        message: 'sandboxes of both executions removed',
      });
    } finally {
      execs.stop();
      if (host.child.exitCode === null) host.child.kill('SIGKILL');
      await tc.stop();
    }
  },
);

(builtPackages ? test : test.skip)(
  'kill -9 of a host running island steps: the step fails at islandStepTimeoutMs, its slots are retried with new tries on a live host, nothing is evaluated twice',
  async () => {
    // The task's host: a coordinator in this process (it hosts island actors too).
    const tc = await TestCluster.start({
      coordinator: { drivers: builtinDrivers },
      nodeAgent: { shutdownGraceMs: 1_000 },
    });
    const { cluster, coordinator } = tc;
    const journal = new JetStreamJournalStore({ connection: tc.nc, cluster });
    const execs = await countEvaluatorExecs(tc);
    // A host of island actors only (less loaded than the coordinator, so islands go there).
    const islandHostId = `islands-${cluster.slice(-6)}`;
    const islandHost = spawn(
      process.execPath,
      [path.join(FIXTURES, 'island-host-process.js'), tc.server.url, cluster, islandHostId],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const stepTimeoutMs = 15_000;
    try {
      await tc.waitForHost(islandHostId, 30_000);
      const jobs = coordinator.jobs!;
      const record = await jobs.submit({
        spec: {
          kind: 'evolve',
          concurrency: 1,
          taskTimeoutMs: 400_000,
          retries: { max: 0 },
          config: { evaluatorSlots: 2, saveJournal: false },
          tasks: [
            {
              id: 'quick',
              suite: SUITE,
              limits: { maxEvaluations: 16 },
              search: { seed: 6, islands: 3, islandStepTimeoutMs: stepTimeoutMs },
            },
          ],
        },
      });
      const searchId = evolveJournalTaskId(record.jobId, 'quick');
      // Kill the island host while one of its islands has an attempt in flight.
      let lostAtKill: string[] = [];
      await waitFor(
        async () => {
          const onHost = new Set<number>();
          for (let k = 0; k < 3; k++) {
            const { entry } = await coordinator.system.directory.get({
              kind: EVOLVE_ISLAND_KIND,
              id: islandActorId(searchId, k),
            });
            if (entry.hostId === islandHostId && entry.state !== 'SLEEPING') onHost.add(k);
          }
          const { records } = await journal.read(searchId);
          const noded = new Set(records.flatMap((r) => (r.type === 'node' ? [r.attemptId] : [])));
          lostAtKill = records.flatMap((r) =>
            r.type === 'attempt' && onHost.has(r.island) && !noded.has(r.attemptId)
              ? [r.attemptId]
              : [],
          );
          return lostAtKill.length > 0;
        },
        {
          timeoutMs: 240_000,
          message: 'an island step in flight on the island host',
          intervalMs: 20,
        },
      );
      islandHost.kill('SIGKILL');
      const killedAt = Date.now();
      await new Promise((r) => islandHost.once('exit', r));

      const events: JobEventRecord[] = [];
      for await (const e of await jobs.watch(record.jobId, {
        signal: AbortSignal.timeout(400_000),
      })) {
        events.push(e);
      }
      expect(events.at(-1)?.type).toBe('JOB_FINISHED');
      const task = (await jobs.results(record.jobId)).tasks[0]!;
      expect(task.status).toBe('TASK_PASSED');
      // One execution of the task: the task's host never died.
      expect(task.attempts).toBe(1);

      const after = (await journal.read(searchId)).records;
      const final = after.at(-1);
      if (final?.type !== 'final') throw new Error('the journal does not end with a final record');
      expect(final.status).toBe('succeeded');
      const nodes = after.flatMap((r) => (r.type === 'node' ? [r] : []));
      const ids = nodes.map((n) => n.attemptId);
      expect(new Set(ids).size).toBe(ids.length);
      // The attempts in flight on the dead host stay lost (never evaluated again), and each of
      // their slots was retried with a later try, after the step's timeout.
      const retries: number[] = [];
      for (const lost of lostAtKill) {
        expect(ids).not.toContain(lost);
        const attempt = after.find((r) => r.type === 'attempt' && r.attemptId === lost);
        if (attempt?.type !== 'attempt') throw new Error(`attempt ${lost} vanished`);
        const retry = nodes.find(
          (n) =>
            n.generation === attempt.generation &&
            n.slot === attempt.slot &&
            n.depth === attempt.depth &&
            n.try > attempt.try,
        );
        if (!retry) throw new Error(`slot of ${lost} was never retried`);
        retries.push(retry.timings.startedAt - killedAt);
      }
      expect(Math.min(...retries)).toBeGreaterThan(0);
      expect(final.usage.lostAttempts).toBeGreaterThanOrEqual(lostAtKill.length);
      expect(final.usage.evaluations).toBe(nodes.length + final.usage.lostAttempts);
      const tests = after.filter((r) => r.type === 'test-start').length;
      await waitFor(() => execs.count() >= nodes.length + tests, {
        timeoutMs: 20_000,
        message: 'docker exec events of every evaluation',
      });
      expect(execs.count()).toBeLessThanOrEqual(nodes.length + final.usage.lostAttempts + tests);
      // The islands live on the coordinator now.
      for (let k = 0; k < 3; k++) {
        const { entry } = await coordinator.system.directory.get({
          kind: EVOLVE_ISLAND_KIND,
          id: islandActorId(searchId, k),
        });
        expect(entry.hostId).not.toBe(islandHostId);
      }
      process.stderr.write(
        `dead island host: lost ${JSON.stringify(lostAtKill)}, retried ${JSON.stringify(
          retries,
        )} ms after the kill (step timeout ${stepTimeoutMs} ms), ${nodes.length} nodes\n`,
      );
    } finally {
      execs.stop();
      if (islandHost.exitCode === null) islandHost.kill('SIGKILL');
      await tc.stop();
    }
  },
);
