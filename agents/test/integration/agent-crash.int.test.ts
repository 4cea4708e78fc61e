import { randomUUID } from 'node:crypto';
import { type ScriptedResponse, waitFor } from '@troupe/testkit';
import { AGENT_KIND } from '../../src/agent/agent-messages';
import { startAgentSession } from '../../src/agent/agent-session';
import { type AgentCluster, startAgentCluster } from './agent-cluster';

// kill -9 of the host running an agent, mid-run: the coordinator notices the dead host and the
// session resumes on the other host from its last checkpoint, without repeating tool effects.

let c: AgentCluster;
beforeAll(async () => {
  c = await startAgentCluster({ docker: true });
  await c.startHost('h1');
  await c.startHost('h2');
}, 180_000);
afterAll(async () => {
  await c?.stop();
}, 60_000);

test('host kill -9 mid-run: the session resumes on another host from its last committed step', async () => {
  const sandboxId = `sb-${randomUUID().slice(0, 8)}`;
  await c.createSandbox(sandboxId, {});
  const run = (id: string, command: string) => ({
    toolCalls: [{ id, name: 'run_terminal_command', arguments: { command } }],
  });
  let n = 0;
  const script: ScriptedResponse[] = [
    run('k1', 'echo one >> log.txt'),
    run('k2', 'echo two >> log.txt'),
    // The host is killed while it waits for this reply.
    { ...run('kx', 'echo never >> log.txt'), delayMs: 15_000 },
    run('k3', 'echo three >> log.txt'),
    { toolCalls: [{ id: 'k4', name: 'finish_task', arguments: { summary: 'survived' } }] },
  ];
  c.fake.setHandler(() => script[n++]);
  const sessionId = `crash-${randomUUID().slice(0, 8)}`;
  const handle = await startAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: {
      name: 'crashy',
      instruction: 'Append lines.',
      model: 'fake',
      tools: ['run_terminal_command'],
    },
    task: 'Append one, two, three to log.txt.',
    sandboxId,
    signal: AbortSignal.timeout(150_000),
  });
  await waitFor(() => n >= 3, { timeoutMs: 60_000, message: 'third model call' });
  const before = await c.client.directory.get({ kind: AGENT_KIND, id: sessionId });
  const victim = before.entry.hostId;
  expect(victim === 'h1' || victim === 'h2').toBe(true);
  await c.hosts.get(victim as string)?.kill('SIGKILL');

  const result = await handle.result;
  expect(result).toMatchObject({ stopReason: 'FINISHED', finalText: 'survived', steps: 4 });
  // Each committed command ran once; the one whose model call was in flight never ran.
  expect((await c.sh(sandboxId, 'cat log.txt')).stdout).toBe('one\ntwo\nthree\n');
  const after = await c.client.directory.get({ kind: AGENT_KIND, id: sessionId });
  expect(after.entry.hostId).not.toBe(victim);
  expect(after.entry.epoch).toBeGreaterThan(before.entry.epoch);
  // The trajectory shows the steps once each, the resumed ones from the newer epoch.
  const events = await c.trajectories.read(sessionId);
  const calls = events.filter((e) => e.type === 'tool_call').map((e) => e.data['toolCallId']);
  expect(calls).toEqual(['k1', 'k2', 'k3', 'k4']);
}, 200_000);
