import { jetstreamManager } from '@nats-io/jetstream';
import { kvBucketName } from '@troupe/proto';
import { waitFor } from '@troupe/testkit';
import { runAgentSession } from '../../src/agent/agent-session';
import { type AgentCluster, startAgentCluster } from './agent-cluster';

// An agent run on a three-server JetStream cluster (every stream with 3 replicas, every component
// in its own process) loses the server that leads the actors' state bucket in the middle of the
// run: while the bucket elects a new leader the session's checkpoints find nobody to answer,
// which is infrastructure trouble, not a failed turn. The run goes on and finishes.

let c: AgentCluster;
beforeAll(async () => {
  c = await startAgentCluster({ docker: false, natsCluster: true });
  await c.startHost('h1');
}, 120_000);
afterAll(async () => {
  await c?.stop();
}, 60_000);

const STEPS = 8;

test('a run keeps going through the loss of one of three NATS servers and finishes', async () => {
  // The model calls an effect-free tool until it has STEPS results, then finishes (by content:
  // a turn retried from its last checkpoint asks again and gets the same answer).
  c.fake.setHandler((req) => {
    const results = req.body.messages.filter((m) => m.role === 'tool').length;
    return results < STEPS
      ? { toolCalls: [{ name: 'list_agents', arguments: {} }], delayMs: 150 }
      : { toolCalls: [{ name: 'finish_task', arguments: { summary: `after ${results}` } }] };
  });
  const run = runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId: 'survivor',
    runId: 'run-1',
    template: {
      name: 'looper',
      instruction: 'LOOP',
      model: 'fake',
      tools: ['list_agents', 'finish_task'],
    },
    task: 'Keep listing agents.',
    signal: AbortSignal.timeout(90_000),
  });
  await waitFor(() => c.fake.chatRequests.length >= 3, {
    timeoutMs: 60_000,
    message: 'the run never made 3 model calls',
  });
  const jsm = await jetstreamManager(c.nc);
  const state = await jsm.streams.info(`KV_${kvBucketName(c.cluster, 'state')}`);
  expect(state.config.num_replicas).toBe(3);
  const victim = c.nats!.servers.findIndex((_s, i) => `s${i + 1}` === state.cluster?.leader);
  expect(victim).toBeGreaterThanOrEqual(0);
  await c.nats!.servers[victim]!.kill();

  const result = await run;
  expect(result).toMatchObject({ runId: 'run-1', stopReason: 'FINISHED' });
  expect(result.finalText).toBe(`after ${STEPS}`);
});
