import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ActorSystem } from '@troupe/actors';
import { createAgentActor, TrajectoryStore } from '@troupe/agents';
import { registerBuiltinDrivers } from '@troupe/benchmarks';
import { DriverRegistry, type JobEventRecord } from '@troupe/coordinator';
import { LlmClient } from '@troupe/llm';
import { BankStore, type Phase3Result } from '@troupe/rsi';
import { FakeOpenAI, waitFor } from '@troupe/testkit';
import { TestCluster, type TestProcess } from '@troupe/test-cluster';
import path from 'node:path';
import { rsiBankId } from '../../src';
import { bankWith, rsiScript } from './rsi-fixtures/rsi-script';
import {
  countParts,
  rsiModelRegistry,
  SHELL_MINI_RECORDS,
  type ShellMiniPart,
  watchStudyRecords,
} from './rsi-fixtures/study-harness';

// Resume after kill -9 of the node agent at every phase boundary, process level: the machines of
// the study's roles are sandboxes on a `troupe-node-agent` process, which the test kills with
// SIGKILL right after each boundary record appears (phase1.ready, the first Phase-2 task,
// phase2.frozen), starting a fresh node agent once the coordinator has declared it dead. The work in flight on the dead host is
// an infrastructure failure, never a verdict: a Phase-2 task is redone by the job's retry (the
// study resumes from its records), a Phase-3 evaluation by Phase 3's own retry on a fresh
// machine. The study must end with the bank an uninterrupted run freezes, both held-out tasks
// scored, every record written once and no finished part run again. The node agents run the
// built packages (the jest global set-up rebuilds stale ones).

jest.setTimeout(600_000);

const REPO = path.resolve(__dirname, '../../..');
const SUITE = 'benchmarks/suites/rsi-shell-mini';

test('kill -9 of the node agent after each phase boundary: the study resumes on a fresh host and freezes the same bank', async () => {
  const fake = await FakeOpenAI.start();
  fake.setHandler(rsiScript);
  const registry = rsiModelRegistry(fake);
  const tc = await TestCluster.start({
    docker: true,
    coordinator: {
      drivers: () =>
        registerBuiltinDrivers(new DriverRegistry(), { rsi: { models: registry, baseDir: REPO } }),
      deps: { jobs: { watchdogMs: 1000 } },
    },
  });
  let nc: NatsConnection | undefined;
  let agents: ActorSystem | undefined;
  const spawnHost = (n: number): TestProcess =>
    tc.spawnNodeAgent(`rsi-node-${n}`, { TROUPE_SLOTS: 'sandbox=4,evaluator=0' });
  try {
    nc = await connect({ servers: tc.server.url });
    agents = await ActorSystem.start({
      cluster: tc.cluster,
      connection: nc,
      hostId: `agents-${tc.cluster.slice(-6)}`,
      hosting: [
        createAgentActor({
          llm: new LlmClient({ registry, retry: { maxAttempts: 1 } }),
          trajectories: new TrajectoryStore({ connection: nc, cluster: tc.cluster }),
        }),
      ],
      placement: 'none',
    });
    let host = spawnHost(1);
    await tc.waitForHost('rsi-node-1', 60_000);

    const jobs = tc.coordinator.jobs!;
    const { jobId } = await jobs.submit({
      spec: {
        kind: 'rsi',
        taskTimeoutMs: 400_000,
        // The job's retry redoes a Phase-2 task whose machine died with its host.
        retries: { max: 4, backoffMs: 2_000, maxBackoffMs: 8_000 },
        config: { models: { actor: 'actor', verifier: 'verifier', curriculum: 'curriculum' } },
        tasks: { suite: SUITE },
      },
    });
    const events: JobEventRecord[] = [];
    const watching = (async () => {
      for await (const e of await jobs.watch(jobId, { signal: AbortSignal.timeout(560_000) })) {
        events.push(e);
      }
    })();

    const bankId = rsiBankId(jobId);
    const banks = await BankStore.open(nc, { cluster: tc.cluster });
    const records = await watchStudyRecords(banks, bankId);
    const { written, key } = records;

    // Kill the host right after each boundary; the part that boundary finished must not grow.
    const boundaries = [
      ['phase1.ready', 'phase1'],
      ['phase2.greeting', 'greeting'],
      ['phase2.frozen', 'count-lines'],
    ] as const;
    const atKill: { boundary: string; part: ShellMiniPart; requests: number }[] = [];
    for (const [i, [boundary, part]] of boundaries.entries()) {
      await waitFor(() => written.has(key(boundary)), {
        timeoutMs: 240_000,
        intervalMs: 20,
        message: `${boundary} written (node agent ${i + 1} output:\n${host.output().slice(-3_000)})`,
      });
      expect(await host.kill('SIGKILL')).toBe('SIGKILL');
      atKill.push({ boundary, part, requests: countParts(fake)[part] ?? 0 });
      // The next host starts only once the coordinator has declared this one dead: work that
      // reaches for a machine meanwhile finds none (or the dead host) and must be redone.
      const dead = `rsi-node-${i + 1}`;
      await waitFor(
        () => !tc.coordinator.registry!.schedulable().some((h) => h.info.hostId === dead),
        { timeoutMs: 30_000, message: `${dead} declared dead` },
      );
      host = spawnHost(i + 2);
    }

    await watching;
    expect(events.at(-1)?.type).toBe('JOB_FINISHED');
    const study = (await jobs.results(jobId)).tasks.find((t) => t.taskId === 'study')!;
    expect([study.status, study.score]).toEqual(['TASK_PASSED', 0.5]);
    // A Phase-2 task interrupted by a kill was redone by the job's retry: the study's `error`
    // then names that attempt's infrastructure failure (the last failed attempt's, if any).
    if (study.attempts > 1) expect(study.error).toMatch(/^UNAVAILABLE: /);
    expect(events.filter((e) => e.type === 'TASK_RETRY').length).toBe(study.attempts - 1);

    // The bank an uninterrupted run freezes (seed, the wave's two lessons, one per development
    // task), at version 4: no lesson was committed twice by a redone task.
    const expected = bankWith('practice-p1', 'practice-p2', 'greeting', 'count-lines');
    const details = study.details as { frozenTreeHash: string; frozenVersion: number };
    expect([details.frozenTreeHash, details.frozenVersion]).toEqual([expected.treeHash, 4]);

    // Every boundary record written once; both held-out tasks scored, none left unscored by the
    // lost host (an evaluation it interrupted was retried on a fresh machine).
    const keys = SHELL_MINI_RECORDS.map(key);
    await waitFor(() => keys.every((k) => written.has(k)), {
      timeoutMs: 10_000,
      message: 'every record seen by the watch',
    });
    expect([...written.keys()].sort()).toEqual([...keys].sort());
    for (const k of keys)
      expect({ key: k, writes: written.get(k)!.length }).toEqual({ key: k, writes: 1 });
    records.stop();
    const result = records.first<Phase3Result>('phase3.result');
    expect(result).toMatchObject({ scored: 2, unscored: 0, meanScore: 0.5 });

    // No finished part ran again: its model requests are what they were at its host's kill.
    const final = countParts(fake);
    expect(atKill.map((k) => [k.boundary, final[k.part]])).toEqual(
      atKill.map((k) => [k.boundary, k.requests]),
    );
    for (const k of atKill) expect(k.requests).toBeGreaterThan(0);
    expect(final['phase1']).toBe(14);
  } finally {
    await agents?.shutdown({ graceMs: 1_000 }).catch(() => undefined);
    await nc?.close().catch(() => undefined);
    await tc.stop();
    await fake.close();
  }
});
