import { existsSync } from 'node:fs';
import path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ActorSystem } from '@troupe/actors';
import { createAgentActor, TrajectoryStore } from '@troupe/agents';
import { registerBuiltinDrivers } from '@troupe/benchmarks';
import { DriverRegistry, type JobEventRecord } from '@troupe/coordinator';
import { LlmClient } from '@troupe/llm';
import { errorCode } from '@troupe/proto';
import { BankStore, type FrozenBank, type Phase1Result, type Phase3Result } from '@troupe/rsi';
import { FakeOpenAI, waitFor } from '@troupe/testkit';
import { spawnNodeProcess, TestCluster, type TestProcess } from '@troupe/test-cluster';
import { rsiBankId } from '../../src';
import { bankWith, rsiScript } from './rsi-fixtures/rsi-script';
import {
  countParts,
  rsiModelRegistry,
  SHELL_MINI_RECORDS,
  type ShellMiniPart,
  watchStudyRecords,
} from './rsi-fixtures/study-harness';

// Resume after kill -9 at every phase boundary, process level: the study runs in a coordinator
// process (the rsi driver from dist/, rsi-fixtures/coordinator-process.js); the roles' agent
// sessions run on an agent host in this process, every model scripted on FakeOpenAI. The test
// watches the study's records in the bank bucket and kills the coordinator with SIGKILL right
// after each boundary record appears (phase1.ready, the first Phase-2 task, phase2.frozen,
// phase3.result), starting a new coordinator process each time; after the last kill a
// coordinator in this process finishes the job. The study must end with the bank an
// uninterrupted run freezes, every record written once, and no finished phase run again (its
// model requests do not grow after the kill). The killed host runs the built packages:
// `npx tsc -b tsconfig.build.json` first (the jest global set-up rebuilds stale ones).

jest.setTimeout(300_000);

const REPO = path.resolve(__dirname, '../../..');
const SUITE = 'benchmarks/suites/rsi-shell-mini';
const HOST = path.join(__dirname, 'rsi-fixtures', 'coordinator-process.js');
const builtPackages = existsSync(path.resolve(__dirname, '../../dist/index.js'));

(builtPackages ? test : test.skip)(
  'kill -9 of the coordinator after each phase boundary: the study resumes, freezes the same bank, writes every record once and reruns no finished phase',
  async () => {
    const fake = await FakeOpenAI.start();
    fake.setHandler(rsiScript);
    const registry = rsiModelRegistry(fake);
    // No coordinator here until the end: the killed hosts are processes. Sandbox slots leave
    // room for the sandboxes of killed executions (their orphaned runs go on for a while).
    const tc = await TestCluster.start({
      coordinator: false,
      nodeAgent: { slots: { sandbox: 10, evaluator: 0 }, shutdownGraceMs: 1_000 },
    });
    let nc: NatsConnection | undefined;
    let agents: ActorSystem | undefined;
    let host: TestProcess | undefined;
    const hostArgs = [tc.server.url, tc.cluster, REPO];
    try {
      nc = await connect({ servers: tc.server.url });
      const trajectories = new TrajectoryStore({ connection: nc, cluster: tc.cluster });
      agents = await ActorSystem.start({
        cluster: tc.cluster,
        connection: nc,
        hostId: `agents-${tc.cluster.slice(-6)}`,
        hosting: [
          createAgentActor({
            llm: new LlmClient({ registry, retry: { maxAttempts: 1 } }),
            trajectories,
          }),
        ],
        placement: 'none',
      });
      const spec = {
        kind: 'rsi',
        taskTimeoutMs: 250_000,
        retries: { max: 0 },
        config: { models: { actor: 'actor', verifier: 'verifier', curriculum: 'curriculum' } },
        tasks: { suite: SUITE },
      };
      host = spawnNodeProcess(HOST, [...hostArgs, JSON.stringify(spec)], { name: 'rsi host 1' });
      const jobId = (await host.waitForLine((l) => l.startsWith('JOB '), 60_000)).slice(4);
      const bankId = rsiBankId(jobId);
      const banks = await BankStore.open(nc, { cluster: tc.cluster });

      const records = await watchStudyRecords(banks, bankId);
      const { written, key } = records;

      // Kill right after each boundary; the part that boundary finished must not grow afterwards.
      const boundaries = [
        ['phase1.ready', 'phase1'],
        ['phase2.greeting', 'greeting'],
        ['phase2.frozen', 'count-lines'],
        ['phase3.result', 'held-out'],
      ] as const;
      const atKill: { boundary: string; part: ShellMiniPart; requests: number }[] = [];
      for (const [i, [boundary, part]] of boundaries.entries()) {
        await waitFor(() => written.has(key(boundary)), {
          timeoutMs: 90_000,
          intervalMs: 20,
          message: `${boundary} written (host ${i + 1} output:\n${host.output().slice(-3_000)})`,
        });
        expect(await host.kill('SIGKILL')).toBe('SIGKILL');
        atKill.push({ boundary, part, requests: countParts(fake)[part] ?? 0 });
        if (i < boundaries.length - 1) {
          host = spawnNodeProcess(HOST, hostArgs, { name: `rsi host ${i + 2}` });
          await host.waitForLine((l) => l === 'READY', 60_000);
        }
      }

      // The last host: a coordinator in this process takes the job over and finishes it.
      const survivor = await tc.startCoordinator({
        drivers: () =>
          registerBuiltinDrivers(new DriverRegistry(), {
            rsi: { models: registry, baseDir: REPO },
          }),
        config: { leaseMs: 2000, renewMs: 500 },
        deps: { jobs: { watchdogMs: 1000 } },
      });
      const jobs = survivor.jobs!;
      const events: JobEventRecord[] = [];
      for await (const e of await jobs.watch(jobId, { signal: AbortSignal.timeout(200_000) })) {
        events.push(e);
      }
      expect(events.at(-1)?.type).toBe('JOB_FINISHED');
      const study = (await jobs.results(jobId)).tasks.find((t) => t.taskId === 'study')!;
      expect([study.status, study.error, study.score]).toEqual(['TASK_PASSED', '', 0.5]);

      // The same frozen bank as an uninterrupted run (seed, the wave's two lessons, then one per
      // development task), at version 4: no phase committed anything twice.
      const expected = bankWith('practice-p1', 'practice-p2', 'greeting', 'count-lines');
      const details = study.details as { frozenTreeHash: string; frozenVersion: number };
      expect([details.frozenTreeHash, details.frozenVersion]).toEqual([expected.treeHash, 4]);
      const head = await banks.load(bankId, 'head', { expectTreeHash: expected.treeHash });
      expect(head.commit.version).toBe(4);
      expect(
        errorCode(await banks.getCommit(bankId, { version: 5 }).catch((e: unknown) => e)),
      ).toBe('NOT_FOUND');

      // Every boundary record was written once, and never with other content.
      const keys = SHELL_MINI_RECORDS.map(key);
      await waitFor(() => keys.every((k) => written.has(k)), {
        timeoutMs: 10_000,
        message: 'every record seen by the watch',
      });
      expect([...written.keys()].sort()).toEqual([...keys].sort());
      for (const k of keys) {
        const history = [];
        for await (const e of await banks.kv.history({ key: k })) history.push(e.string());
        expect({ key: k, history }).toEqual({ key: k, history: written.get(k) });
        expect({ key: k, revisions: history.length }).toEqual({ key: k, revisions: 1 });
      }
      records.stop();
      const record = records.first;
      expect(record<Phase1Result>('phase1.ready')).toMatchObject({ ended: 'READY', waves: 1 });
      expect(record<FrozenBank>('phase2.frozen').treeHash).toBe(expected.treeHash);
      expect(record<Phase3Result>('phase3.result')).toMatchObject({
        frozen: { treeHash: expected.treeHash },
        meanScore: 0.5,
      });

      // No finished phase ran again: the model requests of the part a boundary finished are what
      // they were when its host was killed (and it had run: each count is positive).
      const final = countParts(fake);
      expect(atKill.map((k) => [k.boundary, final[k.part]])).toEqual(
        atKill.map((k) => [k.boundary, k.requests]),
      );
      for (const k of atKill) expect(k.requests).toBeGreaterThan(0);
      // An uninterrupted Phase 1 makes 14 requests: the Curriculum's two turns and, per project,
      // two each for its Actor, Verifier and lesson run.
      expect(final['phase1']).toBe(14);
    } finally {
      if (host) await host.kill('SIGKILL');
      await agents?.shutdown({ graceMs: 1_000 }).catch(() => undefined);
      await nc?.close().catch(() => undefined);
      await tc.stop();
      await fake.close();
    }
  },
);
