import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { SkillLibrary } from '@troupe/agents';
import { DriverRegistry, type JobEventRecord } from '@troupe/coordinator';
import { KvBucket, kvBucketName } from '@troupe/proto';
import { waitFor } from '@troupe/testkit';
import { TestCluster, type TestProcess } from '@troupe/test-cluster';
import { registerBuiltinDrivers } from '../../src';
import { REPO, type ScenarioResult, SUITE } from './skill-sequence-fixtures/sequence-harness';

// kill -9 of the node agent in the middle of a scenario: the sandboxes of the scenario's tasks
// live on a `troupe-node-agent` process, which the test SIGKILLs as soon as the journal holds
// task 1's record and task 2's sandbox is up. The job's retry runs the scenario again on a fresh
// host: it must resume at task 2 (task 1 read back from the journal, not redone) and find task
// 1's functions in the library (KV), which they entered once, at version 1.

jest.setTimeout(600_000);

const SCENARIO = 'city_contacts';

test('kill -9 of the host mid-scenario: the retry resumes at the next task with the library intact', async () => {
  const tc = await TestCluster.start({
    docker: true,
    coordinator: {
      drivers: () =>
        registerBuiltinDrivers(new DriverRegistry(), {
          // A call in flight on the killed host waits for its own deadline (it must not run
          // twice): with the image built, a sandbox is created in seconds, so bound the wait.
          skillSequence: { baseDir: REPO, createTimeoutMs: 60_000 },
        }),
      deps: { jobs: { watchdogMs: 1000 } },
    },
  });
  let nc: NatsConnection | undefined;
  const spawnHost = (n: number): TestProcess =>
    tc.spawnNodeAgent(`seq-node-${n}`, { TROUPE_SLOTS: 'sandbox=4,evaluator=0' });
  try {
    nc = await connect({ servers: tc.server.url });
    let host = spawnHost(1);
    await tc.waitForHost('seq-node-1', 60_000);
    const libraryId = `crash-${tc.cluster.slice(-6)}`;
    const jobs = tc.coordinator.jobs!;
    const { jobId } = await jobs.submit({
      spec: {
        kind: 'skill-sequence',
        taskTimeoutMs: 400_000,
        retries: { max: 4, backoffMs: 1_000, maxBackoffMs: 4_000 },
        config: {
          agent: { kind: 'gold' },
          library: { enabled: true, admission: 'passed', id: libraryId },
          scenarios: [SCENARIO],
        },
        tasks: { suite: SUITE },
      },
    });
    const events: JobEventRecord[] = [];
    const watching = (async () => {
      for await (const e of await jobs.watch(jobId, { signal: AbortSignal.timeout(560_000) })) {
        events.push(e);
      }
    })();

    const kv = await new Kvm(nc).create(kvBucketName(tc.cluster, KvBucket.SEQUENCES));
    const key = (n: number) => `${jobId}.${SCENARIO}.library.${SCENARIO}_${n}`;
    await waitFor(async () => (await kv.get(key(1)))?.operation === 'PUT', {
      timeoutMs: 240_000,
      intervalMs: 20,
      message: `task 1 journaled (node agent output:\n${host.output().slice(-3_000)})`,
    });
    const task1 = (await kv.get(key(1)))!.json<{ durationMs: number }>();
    // Task 2's sandbox (`…-l1`) is up: its world is being seeded or worked on.
    await waitFor(
      async () =>
        (
          await tc.docker.listContainers({
            all: true,
            filters: { label: [`troupe.cluster=${tc.cluster}`] },
          })
        ).some((c) => /-l1$/.test(c.Labels['troupe.actor'] ?? '')),
      { timeoutMs: 60_000, intervalMs: 20, message: "task 2's sandbox started" },
    );
    expect(await kv.get(key(2))).toBeNull();
    expect(await host.kill('SIGKILL')).toBe('SIGKILL');
    await waitFor(
      () => !tc.coordinator.registry!.schedulable().some((h) => h.info.hostId === 'seq-node-1'),
      { timeoutMs: 30_000, message: 'seq-node-1 declared dead' },
    );
    host = spawnHost(2);

    await watching;
    expect(events.at(-1)?.type).toBe('JOB_FINISHED');
    const results = await jobs.results(jobId);
    const scenario = results.tasks.find((t) => t.taskId === SCENARIO) as unknown as ScenarioResult;
    expect([scenario.status, scenario.attempts > 1]).toEqual(['TASK_PASSED', true]);
    const arm = scenario.details.arms['library']!;
    // Task 1 came back from the journal (the very record written before the kill).
    expect(arm.resumedTasks).toBeGreaterThanOrEqual(1);
    expect(arm.perTask.map((t) => t.passed)).toEqual([true, true, true]);
    expect((arm.perTask[0] as unknown as { durationMs: number }).durationMs).toBe(task1.durationMs);
    // The library kept task 1's functions, each once at version 1, and later tasks checked them.
    const records = await (await SkillLibrary.open(nc, { cluster: tc.cluster, libraryId })).list();
    expect(records.length).toBeGreaterThan(0);
    for (const r of records) {
      expect([r.name, r.version, r.provenance.taskId]).toEqual([r.name, 1, `${SCENARIO}_1`]);
    }
    expect(arm.perTask[1]!.skills.checked.length).toBe(records.length);
  } finally {
    await nc?.close().catch(() => undefined);
    await tc.stop();
  }
});
