import { randomUUID } from 'node:crypto';
import { ActivationState } from '@troupe/actors';
import { BudgetLedger } from '@troupe/coordinator';
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
function scripts(
  byInstruction: Record<
    string,
    ((req: ChatRequest) => ScriptedResponse | Promise<ScriptedResponse>)[]
  >,
) {
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

const bySystem = (instruction: string) =>
  c.fake.chatRequests.filter((r) => r.body.messages[0]?.content === instruction);

const isAsleep = async (sessionId: string) =>
  (await c.client.directory.get({ kind: AGENT_KIND, id: sessionId }))?.entry.state ===
  ActivationState.SLEEPING;

test('send_message: parent → child arrives at the child’s tool boundary; child → sleeping parent wakes it', async () => {
  const sessionId = `talk-${randomUUID().slice(0, 8)}`;
  const childId = `${sessionId}__peer`;
  const childSaw: ChatRequest[] = [];
  let parentSlept = false;
  scripts({
    MSG_ROOT: [
      tool('r1', 'create_subagent', {
        name: 'peer',
        instruction: 'MSG_CHILD',
        tools: ['send_message', 'list_agents'],
      }),
      tool('r2', 'call_subagent', { target: 'peer', request: 'chat with me', mode: 'async' }),
      // Sent while the child is inside its first model call (so not before its run started).
      async () => {
        await waitFor(() => bySystem('MSG_CHILD').length >= 1, {
          timeoutMs: 60_000,
          message: 'the child never called its model',
        });
        return {
          toolCalls: [
            { id: 'r3', name: 'send_message', arguments: { to: 'peer', text: 'HELLO-CHILD' } },
          ],
        };
      },
      () => ({ content: 'waiting for peer' }), // ends the turn: waits for the async result
      () => ({ content: 'got your note, still waiting' }), // woken by the child's message
      tool('r6', 'finish_task', { summary: 'conversation over' }), // woken by the result
    ],
    MSG_CHILD: [
      // Hold the first reply until the parent has sent its message (its 4th call follows r3).
      // (A message already waiting when a run starts is delivered before its first call.)
      async () => {
        await waitFor(() => bySystem('MSG_ROOT').length >= 4, {
          timeoutMs: 60_000,
          message: 'parent never sent its message',
        });
        return { toolCalls: [{ id: 'c1', name: 'list_agents', arguments: {} }] };
      },
      async (req) => {
        childSaw.push(req);
        // Let the parent fall asleep (idle 5 s) before messaging it.
        await waitFor(() => isAsleep(sessionId), {
          timeoutMs: 60_000,
          intervalMs: 200,
          message: 'parent never passivated',
        });
        parentSlept = true;
        return {
          toolCalls: [
            { id: 'c2', name: 'send_message', arguments: { to: 'parent', text: 'HELLO-PARENT' } },
          ],
        };
      },
      // Finish only once the message has woken the parent and it called its model.
      async () => {
        await waitFor(() => bySystem('MSG_ROOT').length >= 5, {
          timeoutMs: 60_000,
          message: 'the message did not wake the parent',
        });
        return { toolCalls: [{ id: 'c3', name: 'finish_task', arguments: { summary: 'bye' } }] };
      },
    ],
  });
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: {
      name: 'talker',
      instruction: 'MSG_ROOT',
      model: 'fake',
      tools: ['create_subagent', 'call_subagent', 'send_message', 'list_agents'],
    },
    task: 'Talk to a peer.',
    signal: AbortSignal.timeout(150_000),
  });
  expect(result).toMatchObject({
    stopReason: 'FINISHED',
    finalText: 'conversation over',
    steps: 6,
  });
  const root = bySystem('MSG_ROOT');
  expect(root).toHaveLength(6);
  expect(toolResults(root[3]?.body)['r3']).toBe('message sent to peer');
  // The child got the parent's message after its list_agents result, before its next call.
  const childMessages = childSaw[0]?.body.messages ?? [];
  expect(childMessages.map((m) => m.role).slice(-2)).toEqual(['tool', 'user']);
  expect(childMessages.at(-1)?.content).toBe(`[message from ${sessionId}]\nHELLO-CHILD`);
  // The parent was asleep; the child's message woke it and reached its next model call, before
  // (and without) the async result.
  expect(parentSlept).toBe(true);
  const woken = JSON.stringify(root[4]?.body.messages);
  expect(woken).toContain(`[message from ${childId}]\\nHELLO-PARENT`);
  expect(woken).not.toContain('async result of subagent');
  expect(JSON.stringify(root[5]?.body.messages)).toContain('async result of subagent peer');
  const childEvents = await c.trajectories.read(childId);
  expect(childEvents.some((e) => e.type === 'message' && e.data['from'] === sessionId)).toBe(true);
}, 180_000);

test('call_subagent with use_parent_history starts the child from the parent’s history; without it the child starts fresh', async () => {
  scripts({
    HIST_ROOT: [
      tool('h1', 'list_agents', {}),
      tool('h2', 'create_subagent', { name: 'informed', instruction: 'HIST_A', tools: [] }),
      tool('h3', 'create_subagent', { name: 'fresh', instruction: 'HIST_B', tools: [] }),
      tool('h4', 'call_subagent', {
        target: 'informed',
        request: 'REQ-A',
        mode: 'sync',
        use_parent_history: true,
      }),
      tool('h5', 'call_subagent', { target: 'fresh', request: 'REQ-B', mode: 'sync' }),
      tool('h6', 'finish_task', { summary: 'asked both' }),
    ],
    HIST_A: [tool('a1', 'finish_task', { summary: 'a' })],
    HIST_B: [tool('b1', 'finish_task', { summary: 'b' })],
  });
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId: `hist-${randomUUID().slice(0, 8)}`,
    template: {
      name: 'historian',
      instruction: 'HIST_ROOT',
      model: 'fake',
      tools: ['create_subagent', 'call_subagent', 'list_agents'],
    },
    task: 'PARENT-TASK-MARKER',
    signal: AbortSignal.timeout(90_000),
  });
  expect(result).toMatchObject({ stopReason: 'FINISHED', steps: 6 });
  const informed = bySystem('HIST_A')[0]?.body.messages ?? [];
  // The child's own instruction, then the parent's conversation before the call (its task, its
  // tool calls and their results; not the parent's instruction, not the calling message), then
  // the request.
  expect(informed.map((m) => m.role)).toEqual([
    'system',
    'user',
    ...Array(3).fill(['assistant', 'tool']).flat(),
    'user',
  ]);
  expect(informed[1]?.content).toBe('PARENT-TASK-MARKER');
  expect(JSON.stringify(informed[2])).toContain('list_agents');
  expect(informed.at(-1)?.content).toBe('REQ-A');
  expect(JSON.stringify(informed)).not.toContain('HIST_ROOT');
  expect(JSON.stringify(informed)).not.toContain('"call_subagent"');
  const fresh = bySystem('HIST_B')[0]?.body.messages ?? [];
  expect(fresh).toEqual([
    { role: 'system', content: 'HIST_B' },
    { role: 'user', content: 'REQ-B' },
  ]);
}, 120_000);

test('subagent cost roll-up: the parent reports what its subagents spent (sync, async, nested), and the ledger is charged once per call', async () => {
  // Every reply: 10 prompt + 100 completion tokens on the `priced` model = $0.1.
  const usage = { prompt_tokens: 10, completion_tokens: 100 };
  const withUsage =
    (f: (req: ChatRequest) => ScriptedResponse) =>
    (req: ChatRequest): ScriptedResponse => ({ ...f(req), usage });
  const rootAfterAsync = (req: ChatRequest): ScriptedResponse =>
    JSON.stringify(req.body.messages).includes('async result of subagent')
      ? { toolCalls: [{ name: 'finish_task', arguments: { summary: 'rolled up' } }], usage }
      : { content: 'waiting', usage };
  scripts({
    COST_ROOT: [
      withUsage(
        tool('k1', 'create_subagent', {
          name: 'helper',
          instruction: 'COST_HELPER',
          tools: ['create_subagent', 'call_subagent'],
        }),
      ),
      withUsage(tool('k2', 'call_subagent', { target: 'helper', request: 'sync', mode: 'sync' })),
      withUsage(tool('k3', 'call_subagent', { target: 'helper', request: 'async', mode: 'async' })),
      rootAfterAsync,
      rootAfterAsync,
    ],
    COST_HELPER: [
      withUsage(
        tool('m1', 'create_subagent', { name: 'leaf', instruction: 'COST_LEAF', tools: [] }),
      ),
      withUsage(tool('m2', 'call_subagent', { target: 'leaf', request: 'nested', mode: 'sync' })),
      withUsage(tool('m3', 'finish_task', { summary: 'sync part' })),
      withUsage(tool('m4', 'finish_task', { summary: 'async part' })),
    ],
    COST_LEAF: [withUsage(tool('l1', 'finish_task', { summary: 'leaf' }))],
  });
  const jobId = `cost${randomUUID().slice(0, 8)}`;
  const scope = `job:${jobId}`;
  const ledger = new BudgetLedger(c.client);
  await ledger.createScope(scope, 'cluster', {}, { timeoutMs: 30_000 });
  const sessionId = `cost-${randomUUID().slice(0, 8)}`;
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: {
      name: 'spender',
      instruction: 'COST_ROOT',
      model: 'priced',
      maxTokensPerCall: 100,
      tools: ['create_subagent', 'call_subagent'],
    },
    task: 'Spend through helpers.',
    budgetScope: scope,
    signal: AbortSignal.timeout(120_000),
  });
  expect(result).toMatchObject({ stopReason: 'FINISHED', finalText: 'rolled up' });
  const own = bySystem('COST_ROOT').length; // 4 or 5: the async result may arrive before call 4
  const helper = bySystem('COST_HELPER').length;
  const leaf = bySystem('COST_LEAF').length;
  expect([4, 5]).toContain(own);
  expect([helper, leaf]).toEqual([4, 1]);
  const total = own + helper + leaf;
  expect(result.steps).toBe(own);
  expect(result.costUsd).toBeCloseTo(total * 0.1, 9);
  expect(result.usage).toEqual({ inputTokens: total * 10, outputTokens: total * 100 });
  expect(result.subagents?.costUsd).toBeCloseTo((helper + leaf) * 0.1, 9);
  expect(result.subagents).toMatchObject({
    inputTokens: (helper + leaf) * 10,
    outputTokens: (helper + leaf) * 100,
  });
  // The helper's sync run reported its leaf's spend too (nested roll-up).
  const helperEnds = (await c.trajectories.read(`${sessionId}__helper`)).filter(
    (e) => e.type === 'run_end',
  );
  const helperCosts = helperEnds.map((e) => (e.data['result'] as { costUsd: number }).costUsd);
  expect(helperCosts[0]).toBeCloseTo(0.4, 9); // 3 own calls + the leaf's 1
  expect(helperCosts[1]).toBeCloseTo(0.1, 9);
  // The ledger holds each call once: exactly what the root reports, no double charge.
  const usageInLedger = await ledger.get(scope, { timeoutMs: 30_000 });
  expect(usageInLedger.spent.requests).toBe(total);
  expect(usageInLedger.spent.usd).toBeCloseTo(result.costUsd, 9);
  expect(usageInLedger.reserved.usd).toBe(0);
}, 180_000);

test('send_message to a sibling: delivered at the running sibling’s tool boundary; an unknown name is refused naming the known ones', async () => {
  const sessionId = `sib-${randomUUID().slice(0, 8)}`;
  const bSaw: ChatRequest[] = [];
  const finishOrWait = (req: ChatRequest): ScriptedResponse =>
    JSON.stringify(req.body.messages).includes('async result of subagent')
      ? { toolCalls: [{ name: 'finish_task', arguments: { summary: 'siblings talked' } }] }
      : { content: 'waiting' };
  scripts({
    SIB_ROOT: [
      tool('r1', 'create_subagent', { name: 'a', instruction: 'SIB_A', tools: ['send_message'] }),
      tool('r2', 'create_subagent', { name: 'b', instruction: 'SIB_B', tools: ['list_agents'] }),
      tool('r3', 'call_subagent', { target: 'b', request: 'listen', mode: 'async' }),
      tool('r4', 'call_subagent', { target: 'a', request: 'tell b', mode: 'sync' }),
      finishOrWait,
      finishOrWait,
    ],
    SIB_A: [
      // Sent while b is inside its first model call.
      async () => {
        await waitFor(() => bySystem('SIB_B').length >= 1, {
          timeoutMs: 60_000,
          message: 'b never called its model',
        });
        return {
          toolCalls: [
            { id: 'a1', name: 'send_message', arguments: { to: 'nobody', text: 'lost' } },
            { id: 'a2', name: 'send_message', arguments: { to: 'b', text: 'HI-SIBLING' } },
          ],
        };
      },
      tool('a3', 'finish_task', { summary: 'told b' }),
    ],
    SIB_B: [
      async () => {
        await waitFor(() => bySystem('SIB_A').length >= 2, {
          timeoutMs: 60_000,
          message: 'a never sent its message',
        });
        return { toolCalls: [{ id: 'b1', name: 'list_agents', arguments: {} }] };
      },
      (req) => {
        bSaw.push(req);
        return {
          toolCalls: [{ id: 'b2', name: 'finish_task', arguments: { summary: 'heard a' } }],
        };
      },
    ],
  });
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: {
      name: 'family',
      instruction: 'SIB_ROOT',
      model: 'fake',
      tools: ['create_subagent', 'call_subagent', 'send_message', 'list_agents'],
    },
    task: 'Let the children talk.',
    signal: AbortSignal.timeout(120_000),
  });
  expect(result).toMatchObject({ stopReason: 'FINISHED', finalText: 'siblings talked' });
  const aResults = toolResults(bySystem('SIB_A')[1]?.body);
  expect(aResults['a1']).toBe("error: `arguments.to`: no agent 'nobody' (known: parent, b)");
  expect(aResults['a2']).toBe('message sent to b');
  // b learnt of its sibling from the parent's call, and got the message after its tool result.
  const bMessages = bSaw[0]?.body.messages ?? [];
  expect(toolResults(bSaw[0]?.body)['b1']).toMatch(/^parent: \S+\nsiblings: a\n/);
  expect(bMessages.map((m) => m.role).slice(-2)).toEqual(['tool', 'user']);
  expect(bMessages.at(-1)?.content).toBe(`[message from ${sessionId}__a]\nHI-SIBLING`);
}, 150_000);
