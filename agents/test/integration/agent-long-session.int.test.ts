import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ActorSystem } from '@troupe/actors';
import {
  FakeOpenAI,
  randomClusterName,
  startNatsServer,
  type NatsServerHandle,
  type ScriptedResponse,
} from '@troupe/testkit';
import { createAgentActor } from '../../src/agent/agent-actor';
import { AGENT_KIND } from '../../src/agent/agent-messages';
import { runAgentSession } from '../../src/agent/agent-session';
import { type AgentTemplate } from '../../src/agent/agent-template';
import { ELIDED_PREFIX } from '../../src/agent/elide-older-messages';
import { TrajectoryStore } from '../../src/agent/trajectory-store';
import { LlmClient, ModelRegistry } from '@troupe/llm';

// A long session whose context would outgrow one KV value: a nats-server with a 64 KiB
// max_payload, 30 steps of ~3 KB model replies (~90 KB in all), agents with maxStateBytes 24 KiB.

const MAX_PAYLOAD = 64 * 1024;
const MAX_STATE_BYTES = 24 * 1024;
const STEPS = 30;

let dir: string;
let server: NatsServerHandle;
let fake: FakeOpenAI;
let nc: NatsConnection;
let system: ActorSystem;
let trajectories: TrajectoryStore;
beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'agent-long-'));
  const conf = path.join(dir, 'nats.conf');
  writeFileSync(conf, `max_payload: ${MAX_PAYLOAD}\n`);
  server = await startNatsServer({ args: ['-c', conf] });
  fake = await FakeOpenAI.start();
  nc = await connect({ servers: server.url });
  expect(nc.info?.max_payload).toBe(MAX_PAYLOAD);
  const cluster = randomClusterName();
  const registry = new ModelRegistry({
    models: {
      fake: { baseURL: fake.baseURL, model: 'fake-model', inputUsdPer1M: 0, outputUsdPer1M: 0 },
    },
  });
  trajectories = new TrajectoryStore({ connection: nc, cluster });
  const agent = createAgentActor({
    llm: new LlmClient({ registry }),
    trajectories,
    maxStateBytes: MAX_STATE_BYTES,
  });
  system = await ActorSystem.start({ cluster, connection: nc, hosting: [agent] });
}, 60_000);
afterAll(async () => {
  await system?.shutdown({ graceMs: 1_000 });
  await nc?.close();
  await fake?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The reply of step `i`: ~3 KB of text that names its step, and a tool call. */
function reply(i: number): ScriptedResponse {
  const content = `step ${i}: ${'thinking about the task. '.repeat(120)}`;
  return i < STEPS
    ? { content, toolCalls: [{ id: `c${i}`, name: 'list_agents', arguments: {} }] }
    : {
        content,
        toolCalls: [{ id: `c${i}`, name: 'finish_task', arguments: { summary: 'long done' } }],
      };
}

function template(extra: Partial<AgentTemplate> = {}): AgentTemplate {
  return {
    name: 'long',
    instruction: 'Work for a long time.',
    model: 'fake',
    tools: ['list_agents'],
    limits: { maxSteps: STEPS + 5 },
    maxAutoContinues: 0,
    maxToolOutputChars: 16_000,
    maxMessageChars: 8_000,
    ...extra,
  };
}

async function expectFullTrajectory(sessionId: string): Promise<void> {
  const events = await trajectories.read(sessionId);
  const replies = events
    .filter((e) => e.type === 'model_call')
    .map((e) => e.messages?.[0]?.content ?? '');
  expect(replies).toHaveLength(STEPS);
  // Every reply is in the trajectory in full, though the context no longer holds most of them.
  for (let i = 1; i <= STEPS; i++) {
    expect(replies[i - 1]).toBe((reply(i) as { content: string }).content);
  }
  expect(replies.join('').length).toBeGreaterThan(MAX_PAYLOAD);
}

test('a long session without compaction elides older messages and keeps running; the trajectory keeps them in full', async () => {
  let step = 0;
  fake.setHandler(() => reply(++step));
  const sessionId = `long-${randomClusterName()}`;
  const result = await runAgentSession({
    system,
    trajectories,
    sessionId,
    template: template(),
    task: 'Think out loud for 30 steps.',
    signal: AbortSignal.timeout(120_000),
  });
  expect(result).toMatchObject({ stopReason: 'FINISHED', finalText: 'long done', steps: STEPS });

  const stored = await system.states.read({ kind: AGENT_KIND, id: sessionId });
  const bytes = Buffer.byteLength(JSON.stringify(stored?.record.data));
  expect(bytes).toBeLessThan(MAX_STATE_BYTES + 8 * 1024);
  const messages = (stored?.record.data as { messages: { content: string | null }[] }).messages;
  expect(messages.some((m) => m.content?.startsWith(ELIDED_PREFIX))).toBe(true);
  // The latest replies are verbatim in the context.
  expect(messages.some((m) => m.content === (reply(STEPS) as { content: string }).content)).toBe(
    true,
  );

  const events = await trajectories.read(sessionId);
  const shrinks = events.filter((e) => e.type === 'compaction');
  expect(shrinks.length).toBeGreaterThan(0);
  for (const e of shrinks) {
    expect(e.data).toMatchObject({ strategy: 'elide', reason: 'state_size' });
    expect(e.data['afterBytes']).toBeLessThanOrEqual(MAX_STATE_BYTES / 2);
    expect(e.data['beforeBytes']).toBeGreaterThan(MAX_STATE_BYTES);
  }
  await expectFullTrajectory(sessionId);
}, 180_000);

test('with compaction configured, the state size forces a compaction though the character budget is not reached', async () => {
  let step = 0;
  let summaries = 0;
  fake.setHandler((req) => {
    const first = req.body.messages[0]?.content;
    if (typeof first === 'string' && first.startsWith('You compress an agent transcript')) {
      summaries++;
      return { content: `summary ${summaries}` };
    }
    return reply(++step);
  });
  const sessionId = `long-${randomClusterName()}`;
  const result = await runAgentSession({
    system,
    trajectories,
    sessionId,
    template: template({ compaction: { maxChars: 10_000_000, keepRecentChars: 4_000 } }),
    task: 'Think out loud for 30 steps.',
    signal: AbortSignal.timeout(120_000),
  });
  expect(result).toMatchObject({ stopReason: 'FINISHED', steps: STEPS });
  expect(summaries).toBeGreaterThan(0);
  const events = await trajectories.read(sessionId);
  const compactions = events.filter((e) => e.type === 'compaction');
  expect(compactions.some((e) => e.data['reason'] === 'state_size' && e.data['summary'])).toBe(
    true,
  );
  await expectFullTrajectory(sessionId);
}, 180_000);
