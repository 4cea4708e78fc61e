import { randomUUID } from 'node:crypto';
import { ActivationState } from '@troupe/actors';
import { type ChatRequest, type ScriptedResponse, waitFor } from '@troupe/testkit';
import { AGENT_KIND } from '../../src/agent/agent-messages';
import { runAgentSession, startAgentSession } from '../../src/agent/agent-session';
import { type AgentCluster, startAgentCluster, toolResults } from './agent-cluster';

// Subagents and messages between agents, on a real coordinator and agent host (no sandbox).
// The agent host passivates idle sessions after 5 s, so a parent waiting for an async result
// really falls asleep and is woken by the child's post.

let c: AgentCluster;
beforeAll(async () => {
  c = await startAgentCluster({ docker: false });
  await c.startHost('h1');
}, 120_000);
afterAll(async () => {
  await c?.stop();
}, 60_000);
afterEach(() => c.fake.reset());

/** Routes requests by the system instruction to one script per agent. */
function scripts(byInstruction: Record<string, ((req: ChatRequest) => ScriptedResponse)[]>) {
  c.fake.setHandler((req) => {
    const system = req.body.messages[0]?.content;
    const queue = typeof system === 'string' ? byInstruction[system] : undefined;
    const next = queue?.shift();
    return next?.(req);
  });
}

const tool = (id: string, name: string, args: Record<string, unknown>) => () => ({
  toolCalls: [{ id, name, arguments: args }],
});

test('subagents: created with a subset of tools, called sync and async; the async result wakes the sleeping parent', async () => {
  const parentRequests: ChatRequest[] = [];
  const asyncStarted = { at: 0 };
  scripts({
    ROOT: [
      tool('p1', 'create_subagent', {
        name: 'shell',
        instruction: 'HELPER',
        tools: ['run_terminal_command'], // the root lacks it: refused
      }),
      tool('p2', 'create_subagent', {
        name: 'helper',
        instruction: 'HELPER',
        tools: ['list_agents'],
      }),
      tool('p3', 'call_subagent', { target: 'helper', request: 'sync job', mode: 'sync' }),
      tool('p4', 'call_subagent', { target: 'helper', request: 'async job', mode: 'async' }),
      tool('p5', 'call_subagent', { target: 'helper', request: 'again', mode: 'sync' }), // BUSY
      (req) => {
        parentRequests.push(req);
        asyncStarted.at = Date.now();
        return { content: 'waiting for the helper' };
      },
      (req) => {
        parentRequests.push(req);
        return {
          toolCalls: [{ id: 'p7', name: 'finish_task', arguments: { summary: 'all done' } }],
        };
      },
    ],
    HELPER: [
      tool('h1', 'finish_task', { summary: 'sync done' }),
      // Slow enough for the parent to be passivated (idle 5 s) before the result arrives.
      () => ({
        toolCalls: [{ id: 'h2', name: 'finish_task', arguments: { summary: 'async done' } }],
        delayMs: 8_000,
      }),
    ],
  });
  const sessionId = `root-${randomUUID().slice(0, 8)}`;
  const handle = await startAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: {
      name: 'root',
      instruction: 'ROOT',
      model: 'fake',
      tools: ['create_subagent', 'call_subagent', 'list_agents', 'send_message'],
    },
    task: 'Delegate.',
    signal: AbortSignal.timeout(120_000),
  });
  // While the child works on the async call, the parent goes to sleep.
  await waitFor(
    async () =>
      asyncStarted.at > 0 &&
      (await c.client.directory.get({ kind: AGENT_KIND, id: sessionId }))?.entry.state ===
        ActivationState.SLEEPING,
    { timeoutMs: 30_000, intervalMs: 200, message: 'parent never passivated' },
  );
  const result = await handle.result;
  expect(result).toMatchObject({ stopReason: 'FINISHED', finalText: 'all done', steps: 7 });
  const results = toolResults(parentRequests[0]?.body);
  expect(results['p1']).toMatch(
    /PERMISSION_DENIED: `arguments.tools`: a subagent may only get tools you hold; you lack run_terminal_command/,
  );
  expect(results['p2']).toMatch(/created subagent helper \(session .*__helper/);
  expect(results['p3']).toMatch(
    /subagent helper \(session \S+__helper\) finished: FINISHED after 1 steps\nsync done/,
  );
  expect(results['p4']).toMatch(/subagent helper started/);
  expect(results['p5']).toMatch(/BUSY: subagent helper is running/);
  // The async result arrived as a message after the parent had gone to sleep.
  const last = JSON.stringify(parentRequests[1]?.body.messages);
  expect(last).toContain('async result of subagent helper');
  expect(last).toContain('async done');
  // The child's definition is persisted with the parent; the child holds only what it was given.
  const status = (await c.client.refOf({ kind: AGENT_KIND, id: sessionId }).ask('status', {})) as {
    subagents: { name: string; busy: boolean }[];
  };
  expect(status.subagents).toEqual([
    { name: 'helper', sessionId: `${sessionId}__helper`, busy: false },
  ]);
  const childRequest = c.fake.chatRequests.find((r) => r.body.messages[0]?.content === 'HELPER');
  const childTools = (childRequest?.body.tools ?? []).map((t) =>
    t.type === 'function' ? t.function.name : '',
  );
  expect(childTools.sort()).toEqual(['finish_task', 'list_agents']);
}, 180_000);

test('a message sent mid-run is delivered at a tool boundary; an oversized one is truncated and saved in full', async () => {
  const big = 'B'.repeat(20_000);
  const sessionId = `msg-${randomUUID().slice(0, 8)}`;
  const seen: ChatRequest[] = [];
  scripts({
    LISTENER: [
      tool('l1', 'list_agents', {}),
      (req) => {
        seen.push(req);
        return { toolCalls: [{ id: 'l2', name: 'list_agents', arguments: {} }], delayMs: 1_500 };
      },
      (req) => {
        seen.push(req);
        return { toolCalls: [{ id: 'l3', name: 'finish_task', arguments: { summary: 'heard' } }] };
      },
    ],
  });
  const run = runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: { name: 'listener', instruction: 'LISTENER', model: 'fake', tools: ['list_agents'] },
    task: 'Listen.',
    signal: AbortSignal.timeout(60_000),
  });
  await waitFor(() => seen.length === 1, { timeoutMs: 30_000, message: 'second model call' });
  await c.client
    .refOf({ kind: AGENT_KIND, id: sessionId })
    .post('message', { from: 'user', text: `NOTE ${big}` });
  const result = await run;
  expect(result).toMatchObject({ stopReason: 'FINISHED', finalText: 'heard' });
  const messages = seen[1]?.body.messages ?? [];
  const note = messages.find((m) => typeof m.content === 'string' && m.content.includes('NOTE'));
  expect(note?.role).toBe('user');
  const noteText = typeof note?.content === 'string' ? note.content : '';
  expect(noteText).toMatch(
    /message truncated: 8000 of 20005 characters shown; the full text is in trajectory event \S+#\d+/,
  );
  // Delivered after the tool result of l2 (never between a tool call and its result).
  const roles = messages.map((m) => m.role);
  expect(roles.slice(-2)).toEqual(['tool', 'user']);
  const ref = /trajectory event \S+#(\d+)/.exec(noteText)?.[1];
  const events = await c.trajectories.read(sessionId);
  const saved = events.find((e) => e.seq === Number(ref));
  expect(saved?.data['fullText']).toBe(`NOTE ${big}`);
}, 120_000);
