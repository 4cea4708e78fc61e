import { randomUUID } from 'node:crypto';
import { type ChatRequest, type ScriptedResponse, waitFor } from '@troupe/testkit';
import { AGENT_KIND } from '../../src/agent/agent-messages';
import { cancelAgentRun, startAgentSession } from '../../src/agent/agent-session';
import { type TrajectoryEvent, TrajectoryEventType } from '../../src/agent/trajectory-event';
import { type AgentCluster, startAgentCluster, toolResults } from './agent-cluster';

// The `cancel` message of agent sessions on a real coordinator and agent host (its own process);
// the model is FakeOpenAI. Each test counts what reached the provider after the cancel was posted
// and waits for recorded `run_end` events (never for time to pass).

let c: AgentCluster;
beforeAll(async () => {
  c = await startAgentCluster({ docker: false });
  await c.startHost('h1');
}, 120_000);
afterAll(async () => {
  await c?.stop();
}, 60_000);
afterEach(() => c.fake.reset());

interface Status {
  run?: { runId: string; status: string; stopReason?: string; steps: number };
  runsDone: number;
  subagents: { name: string; busy: boolean }[];
}

const statusOf = async (sessionId: string): Promise<Status> =>
  (await c.client
    .refOf({ kind: AGENT_KIND, id: sessionId })
    .ask('status', {}, { timeoutMs: 30_000 })) as Status;

const eventsOf = async (sessionId: string, type: string): Promise<TrajectoryEvent[]> =>
  (await c.trajectories.read(sessionId)).filter((e) => e.type === type);

const stopReasonOf = (e: TrajectoryEvent | undefined) =>
  (e?.data['result'] as { stopReason?: string } | undefined)?.stopReason;

/** Routes requests by the system instruction (an agent's role) to one reply function each. */
function byInstruction(
  routes: Record<
    string,
    (req: ChatRequest, n: number) => ScriptedResponse | Promise<ScriptedResponse>
  >,
) {
  const counts = new Map<string, number>();
  c.fake.setHandler((req) => {
    const first = req.body.messages[0]?.content;
    const system = typeof first === 'string' ? first : '';
    const route = routes[system];
    if (!route) return undefined;
    const n = (counts.get(system) ?? 0) + 1;
    counts.set(system, n);
    return route(req, n);
  });
}

const requestsOf = (instruction: string) =>
  c.fake.chatRequests.filter((r) => r.body.messages[0]?.content === instruction).length;

const spin = (): ScriptedResponse => ({
  toolCalls: [{ name: 'list_agents', arguments: {} }],
  delayMs: 20,
});

test('a run whose model keeps calling a tool is cancelled: CANCELLED, at most one more model call, run_end recorded, the session runs again', async () => {
  byInstruction({ SPIN: spin });
  const sessionId = `cancel-${randomUUID().slice(0, 8)}`;
  const template = {
    name: 'spinner',
    instruction: 'SPIN',
    model: 'fake',
    tools: ['list_agents' as const, 'finish_task' as const],
    limits: { maxSteps: 10_000 },
  };
  const handle = await startAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template,
    task: 'Never stop.',
    runId: 'run-1',
    signal: AbortSignal.timeout(90_000),
  });
  await waitFor(() => c.fake.chatRequests.length >= 3, {
    timeoutMs: 60_000,
    message: 'the run never made 3 model calls',
  });
  await handle.cancel('the user changed their mind');
  const atCancel = c.fake.chatRequests.length;
  const result = await handle.result;
  const atEnd = c.fake.chatRequests.length;
  expect(result).toMatchObject({
    runId: 'run-1',
    stopReason: 'CANCELLED',
    error: 'cancelled: the user changed their mind',
  });
  expect(atEnd - atCancel).toBeLessThanOrEqual(1);
  expect(result.steps).toBeLessThanOrEqual(atEnd);
  // Recorded: the accepted cancel, one run_end; the state agrees.
  const [cancelEvent] = await eventsOf(sessionId, TrajectoryEventType.CANCEL);
  expect(cancelEvent?.data).toMatchObject({ cancelRunId: 'run-1', outcome: 'accepted' });
  const ends = await eventsOf(sessionId, TrajectoryEventType.RUN_END);
  expect(ends.map(stopReasonOf)).toEqual(['CANCELLED']);
  expect(await statusOf(sessionId)).toMatchObject({
    runsDone: 1,
    run: { runId: 'run-1', status: 'done', stopReason: 'CANCELLED' },
  });
  // Nothing reaches the provider once the run ended (the next request would be the new run's).
  expect(c.fake.chatRequests.length).toBe(atEnd);

  // The session takes a new run; the tool call the cancel left unrun was answered with an error.
  c.fake.reset();
  c.fake.setHandler(() => ({
    toolCalls: [{ name: 'finish_task', arguments: { summary: 'second run done' } }],
  }));
  const second = await startAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    task: 'Now finish.',
    runId: 'run-2',
    signal: AbortSignal.timeout(60_000),
  });
  expect(await second.result).toMatchObject({ runId: 'run-2', stopReason: 'FINISHED' });
  const sent = c.fake.chatRequests[0]?.body;
  const results = Object.values(toolResults(sent));
  expect(results.length).toBeGreaterThan(0);
  // Every tool call of the cancelled run has a result (the API refuses dangling tool calls).
  const calls = (sent?.messages ?? []).flatMap((m) =>
    'tool_calls' in m && m.tool_calls ? m.tool_calls.map((t) => t.id) : [],
  );
  expect(Object.keys(toolResults(sent)).sort()).toEqual(calls.sort());
}, 120_000);

test('a cancel aborts a model call in flight: the run ends long before the reply', async () => {
  byInstruction({
    SLOW: (_req, n) =>
      n === 1
        ? { toolCalls: [{ name: 'list_agents', arguments: {} }] }
        : { content: 'too late', delayMs: 600_000 },
  });
  const sessionId = `inflight-${randomUUID().slice(0, 8)}`;
  const handle = await startAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: { name: 'slow', instruction: 'SLOW', model: 'fake', tools: ['list_agents'] },
    task: 'Think hard.',
    signal: AbortSignal.timeout(90_000),
  });
  await waitFor(() => c.fake.chatRequests.length >= 2, {
    timeoutMs: 60_000,
    message: 'the second (slow) model call never started',
  });
  await cancelAgentRun({ system: c.client, sessionId, runId: handle.runId });
  // The reply would take 10 minutes; the test's 90 s bound proves the call was aborted.
  const result = await handle.result;
  expect(result).toMatchObject({ stopReason: 'CANCELLED', steps: 1, error: 'cancelled' });
  expect(c.fake.chatRequests).toHaveLength(2);
  expect((await statusOf(sessionId)).run).toMatchObject({
    status: 'done',
    stopReason: 'CANCELLED',
  });
}, 120_000);

test('cancelling a parent cancels its running sync child (and that child’s sync grandchild) and its async child', async () => {
  byInstruction({
    PARENT: (_req, n) => {
      const calls = [
        {
          id: 'p1',
          name: 'create_subagent',
          arguments: { name: 'bg', instruction: 'ASYNC_CHILD', tools: ['list_agents'] },
        },
        {
          id: 'p2',
          name: 'create_subagent',
          arguments: {
            name: 'fg',
            instruction: 'SYNC_CHILD',
            tools: ['list_agents', 'create_subagent', 'call_subagent'],
          },
        },
        {
          id: 'p3',
          name: 'call_subagent',
          arguments: { target: 'bg', request: 'spin in the background', mode: 'async' },
        },
        {
          id: 'p4',
          name: 'call_subagent',
          arguments: { target: 'fg', request: 'delegate and wait', mode: 'sync' },
        },
      ];
      const call = calls[n - 1];
      return call ? { toolCalls: [call] } : { content: 'should not be asked again' };
    },
    ASYNC_CHILD: spin,
    SYNC_CHILD: (_req, n) =>
      n === 1
        ? {
            toolCalls: [
              {
                id: 's1',
                name: 'create_subagent',
                arguments: { name: 'gc', instruction: 'GRANDCHILD', tools: ['list_agents'] },
              },
            ],
          }
        : n === 2
          ? {
              toolCalls: [
                {
                  id: 's2',
                  name: 'call_subagent',
                  arguments: { target: 'gc', request: 'spin', mode: 'sync' },
                },
              ],
            }
          : { content: 'should not be asked again' },
    GRANDCHILD: spin,
  });
  const sessionId = `tree-${randomUUID().slice(0, 8)}`;
  const handle = await startAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: {
      name: 'root',
      instruction: 'PARENT',
      model: 'fake',
      tools: ['list_agents', 'create_subagent', 'call_subagent'],
      limits: { maxSteps: 10_000 },
    },
    task: 'Delegate.',
    signal: AbortSignal.timeout(120_000),
  });
  await waitFor(() => requestsOf('ASYNC_CHILD') >= 2 && requestsOf('GRANDCHILD') >= 2, {
    timeoutMs: 90_000,
    message: 'the async child and the grandchild never both ran',
  });
  await handle.cancel('job cancelled');
  const result = await handle.result;
  expect(result).toMatchObject({ stopReason: 'CANCELLED', error: 'cancelled: job cancelled' });
  const async = `${sessionId}__bg`;
  const sync = `${sessionId}__fg`;
  const grand = `${sync}__gc`;
  const ended = await Promise.all(
    [
      [async, `${sessionId}.p3`],
      [sync, `${sessionId}.p4`],
      [grand, `${sync}.s2`],
    ].map(([id, runId]) =>
      c.trajectories.waitForRunEnd(id!, runId!, { signal: AbortSignal.timeout(60_000) }),
    ),
  );
  expect(ended.map((r) => (r as { stopReason: string }).stopReason)).toEqual([
    'CANCELLED',
    'CANCELLED',
    'CANCELLED',
  ]);
  expect((ended[1] as { error: string }).error).toMatch(/parent session \S+ was cancelled: job/);
  // Once every run ended, the requests stop: the count is the same after the last status read.
  const after = c.fake.chatRequests.length;
  for (const id of [sessionId, async, sync, grand]) {
    expect((await statusOf(id)).run).toMatchObject({ status: 'done', stopReason: 'CANCELLED' });
  }
  expect(c.fake.chatRequests.length).toBe(after);
  expect(requestsOf('PARENT')).toBe(4);
  expect(requestsOf('SYNC_CHILD')).toBe(2);
  // The parent no longer counts its children as busy.
  expect((await statusOf(sessionId)).subagents.every((s) => !s.busy)).toBe(true);
}, 180_000);

test('a cancel naming another run is recorded and ignored; a session without a run ignores it', async () => {
  let release: () => void = () => undefined;
  const released = new Promise<void>((r) => (release = r));
  byInstruction({
    HOLD: async (_req, n) => {
      if (n === 1) {
        await released;
        return { toolCalls: [{ name: 'list_agents', arguments: {} }] };
      }
      return { toolCalls: [{ name: 'finish_task', arguments: { summary: 'done anyway' } }] };
    },
  });
  const sessionId = `stale-${randomUUID().slice(0, 8)}`;
  const handle = await startAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: {
      name: 'holder',
      instruction: 'HOLD',
      model: 'fake',
      tools: ['list_agents', 'finish_task'],
    },
    task: 'Wait, then finish.',
    runId: 'current-run',
    signal: AbortSignal.timeout(90_000),
  });
  await waitFor(() => c.fake.chatRequests.length >= 1, {
    timeoutMs: 60_000,
    message: 'the run never called the model',
  });
  await cancelAgentRun({ system: c.client, sessionId, runId: 'old-run', reason: 'stale' });
  const ignored = await waitFor(
    async () => (await eventsOf(sessionId, TrajectoryEventType.CANCEL))[0],
    { timeoutMs: 60_000, intervalMs: 100, message: 'the stale cancel was never recorded' },
  );
  expect(ignored.data).toMatchObject({
    cancelRunId: 'old-run',
    outcome: 'ignored',
    reason: 'stale',
  });
  expect(String(ignored.data['why'])).toContain('current-run');
  release();
  expect(await handle.result).toMatchObject({
    runId: 'current-run',
    stopReason: 'FINISHED',
    finalText: 'done anyway',
  });

  // A session that never ran: the cancel is taken (the inbox cursor passes it) and changes nothing.
  const idle = `idle-${randomUUID().slice(0, 8)}`;
  const ref = c.client.refOf({ kind: AGENT_KIND, id: idle });
  const receipt = await ref.post('cancel', { runId: 'nothing' }, { dedupeId: 'cancel:nothing' });
  await waitFor(
    async () => ((await c.client.states.read(ref.address))?.record.cursor ?? 0) >= receipt.seq,
    { timeoutMs: 60_000, intervalMs: 100, message: 'the idle session never took the cancel' },
  );
  expect(await statusOf(idle)).toMatchObject({ runsDone: 0 });
  expect((await statusOf(idle)).run).toBeUndefined();
  expect(await c.trajectories.read(idle)).toHaveLength(0);
}, 120_000);

test('a bad cancel is refused with INVALID_ARGUMENT naming the field; a malformed post does not stop the session', async () => {
  const sessionId = `badcancel-${randomUUID().slice(0, 8)}`;
  await expect(
    cancelAgentRun({ system: c.client, sessionId, runId: 'has spaces' }),
  ).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
    message: expect.stringMatching(/cancel\.runId: must match/),
  });
  await expect(
    cancelAgentRun({ system: c.client, sessionId, runId: 'r1', reason: '' }),
  ).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
    message: expect.stringMatching(/cancel\.reason: must not be empty/),
  });
  // Posted around the client check: the session dead-letters it and keeps serving.
  await c.client
    .refOf({ kind: AGENT_KIND, id: sessionId })
    .post('cancel', { runId: 42, extra: true });
  c.fake.setHandler(() => ({
    toolCalls: [{ name: 'finish_task', arguments: { summary: 'still here' } }],
  }));
  const handle = await startAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: { name: 'plain', instruction: 'Answer.', model: 'fake', tools: ['finish_task'] },
    task: 'Go.',
    signal: AbortSignal.timeout(60_000),
  });
  expect(await handle.result).toMatchObject({ stopReason: 'FINISHED', finalText: 'still here' });
}, 90_000);

test('a cancel wakes a parent that waits for an async child: both runs end CANCELLED', async () => {
  byInstruction({
    WAITER: (_req, n) =>
      n === 1
        ? {
            toolCalls: [
              {
                id: 'w1',
                name: 'create_subagent',
                arguments: { name: 'kid', instruction: 'KID', tools: ['list_agents'] },
              },
            ],
          }
        : n === 2
          ? {
              toolCalls: [
                {
                  id: 'w2',
                  name: 'call_subagent',
                  arguments: { target: 'kid', request: 'spin', mode: 'async' },
                },
              ],
            }
          : { content: 'waiting for the kid' },
    KID: spin,
  });
  const sessionId = `waiting-${randomUUID().slice(0, 8)}`;
  const handle = await startAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: {
      name: 'waiter',
      instruction: 'WAITER',
      model: 'fake',
      tools: ['list_agents', 'create_subagent', 'call_subagent'],
      limits: { maxSteps: 10_000 },
    },
    task: 'Delegate and wait.',
    signal: AbortSignal.timeout(90_000),
  });
  await waitFor(
    async () => (await statusOf(sessionId)).run?.status === 'waiting' && requestsOf('KID') >= 2,
    { timeoutMs: 60_000, intervalMs: 100, message: 'the parent never waited on a running child' },
  );
  await handle.cancel('stop waiting');
  expect(await handle.result).toMatchObject({
    stopReason: 'CANCELLED',
    steps: 3,
    error: 'cancelled: stop waiting',
  });
  const kid = (await c.trajectories.waitForRunEnd(`${sessionId}__kid`, `${sessionId}.w2`, {
    signal: AbortSignal.timeout(60_000),
  })) as { stopReason: string };
  expect(kid.stopReason).toBe('CANCELLED');
  expect(requestsOf('WAITER')).toBe(3);
}, 120_000);
