import path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ActorSystem } from '@troupe/actors';
import { createAgentActor, TrajectoryStore } from '@troupe/agents';
import { LlmClient, ModelRegistry } from '@troupe/llm';
import { type JobEventRecord } from '@troupe/coordinator';
import { FakeOpenAI, waitFor } from '@troupe/testkit';
import {
  createIssueResolutionDriver,
  createModelAgentRunner,
  issueSessionId,
} from '../../src/issue-resolution';
import { TestCluster } from '@troupe/test-cluster';

// Cancelling an issue-resolution job whose model agent is working stops the agent's session: the
// job is cancelled through the job API (the coordinator's JobManager, what CancelJob calls), and
// the session's run ends with CANCELLED instead of calling the model until its step limit. Real
// nats-server, coordinator (job and task actors, the driver), node agent (Docker sandbox) and an
// agent host in this process; the model is FakeOpenAI, scripted to run a command forever.

jest.setTimeout(600_000);

const SUITE = path.resolve(__dirname, '../../suites/bugfix-mini');
const TASK = 'py-lru-cache';

let tc: TestCluster;
let fake: FakeOpenAI;
let nc: NatsConnection;
let agentHost: ActorSystem;
let trajectories: TrajectoryStore;

beforeAll(async () => {
  fake = await FakeOpenAI.start();
  const registry = new ModelRegistry({
    models: {
      fake: {
        baseURL: fake.baseURL,
        model: 'fake-model',
        inputUsdPer1M: 0,
        outputUsdPer1M: 0,
        maxTokens: 256,
      },
    },
  });
  tc = await TestCluster.start({
    coordinator: {
      drivers: [
        createIssueResolutionDriver({
          agentRunners: [createModelAgentRunner({ models: registry })],
        }),
      ],
    },
    nodeAgent: { slots: { sandbox: 2, evaluator: 2 } },
  });
  nc = await connect({ servers: tc.server.url });
  trajectories = new TrajectoryStore({ connection: nc, cluster: tc.cluster });
  agentHost = await ActorSystem.start({
    cluster: tc.cluster,
    connection: nc,
    hostId: `agents-${tc.cluster.slice(-6)}`,
    hosting: [createAgentActor({ llm: new LlmClient({ registry }), trajectories })],
    placement: 'none',
  });
  await tc.waitForHost(agentHost.hostId);
});

afterAll(async () => {
  await agentHost?.shutdown({ graceMs: 1_000 }).catch(() => undefined);
  await nc?.close().catch(() => undefined);
  await tc?.stop();
  await fake?.close();
});

test('cancelling the job stops the model agent: its run ends CANCELLED and no model call follows', async () => {
  // The model never finishes: every reply runs a command in the sandbox.
  fake.setHandler(() => ({
    toolCalls: [{ name: 'run_terminal_command', arguments: { command: 'echo working' } }],
    delayMs: 20,
  }));
  const jobs = tc.coordinator.jobs!;
  const record = await jobs.submit({
    spec: {
      kind: 'issue-resolution',
      concurrency: 1,
      taskTimeoutMs: 400_000,
      agent: { model: 'fake', maxSteps: 10_000 },
      config: { agent: { kind: 'model' } },
      tasks: { suite: SUITE, include: [TASK] },
    },
  });
  const sessionId = issueSessionId(record.jobId, TASK, 1);
  await waitFor(() => fake.chatRequests.length >= 3, {
    timeoutMs: 300_000,
    message: 'the model agent never made 3 model calls',
  });
  await jobs.cancel(record.jobId, 'user');
  const atCancel = fake.chatRequests.length;
  // The session's own record of its end (the run id is the session id).
  const end = (await trajectories.waitForRunEnd(sessionId, sessionId, {
    signal: AbortSignal.timeout(120_000),
  })) as { stopReason: string; steps: number; error?: string };
  const atEnd = fake.chatRequests.length;
  expect(end.stopReason).toBe('CANCELLED');
  expect(end.error).toMatch(/^cancelled: /);
  expect(end.steps).toBeLessThanOrEqual(atEnd);
  // The job ends cancelled; by then (sandbox destroyed, task recorded) still no further call.
  const events: JobEventRecord[] = [];
  for await (const e of await jobs.watch(record.jobId, { signal: AbortSignal.timeout(300_000) })) {
    events.push(e);
  }
  expect(events.map((e) => e.type)).toContain('JOB_CANCEL_REQUESTED');
  expect(events.at(-1)?.type).toBe('JOB_FINISHED');
  expect((await jobs.get(record.jobId))?.state).toBe('CANCELLED');
  const status = (await agentHost
    .refOf({ kind: 'agent', id: sessionId })
    .ask('status', {}, { timeoutMs: 30_000 })) as { run?: { status: string; stopReason?: string } };
  expect(status.run).toMatchObject({ status: 'done', stopReason: 'CANCELLED' });
  expect(fake.chatRequests.length).toBe(atEnd);
  // How many calls the cancel took to land, for the record (the job API, the task's abort and
  // the session's inbox are in between; each step is a model call plus a Docker exec).
  process.stdout.write(`model calls: ${atCancel} at cancel, ${atEnd} at run_end\n`);
  expect(atEnd).toBeGreaterThanOrEqual(atCancel);
});
