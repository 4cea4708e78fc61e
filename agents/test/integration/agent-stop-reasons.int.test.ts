import { randomUUID } from 'node:crypto';
import { type ChatRequest, type ScriptedResponse, waitFor } from '@troupe/testkit';
import { AGENT_KIND, type AgentRunResult } from '../../src/agent/agent-messages';
import { runAgentSession, startAgentSession } from '../../src/agent/agent-session';
import { type AgentTemplateInput } from '../../src/agent/agent-template';
import { TrajectoryEventType } from '../../src/agent/trajectory-event';
import { type AgentCluster, startAgentCluster, toolResults } from './agent-cluster';

// Every stop reason besides FINISHED / NO_TOOL_CALLS / MAX_STEPS / BUDGET_EXHAUSTED (covered in
// agent-tools.int.test.ts), on a real coordinator and agent host; the model is FakeOpenAI. Each
// test checks the recorded stop reason, the saved state and what reached the provider.

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
  template?: string;
  run?: {
    runId: string;
    status: string;
    stopReason?: string;
    steps: number;
    inputTokens: number;
    outputTokens: number;
    error?: string;
  };
  runsDone: number;
}

const statusOf = async (sessionId: string): Promise<Status> =>
  (await c.client
    .refOf({ kind: AGENT_KIND, id: sessionId })
    .ask('status', {}, { timeoutMs: 30_000 })) as Status;

const runEnds = async (sessionId: string) =>
  (await c.trajectories.read(sessionId)).filter((e) => e.type === TrajectoryEventType.RUN_END);

/** Routes requests by the system instruction to one script per agent. */
function scripts(byInstruction: Record<string, ((req: ChatRequest) => ScriptedResponse)[]>) {
  c.fake.setHandler((req) => {
    const system = req.body.messages[0]?.content;
    const queue = typeof system === 'string' ? byInstruction[system] : undefined;
    return queue?.shift()?.(req);
  });
}

const bySystem = (instruction: string) =>
  c.fake.chatRequests.filter((r) => r.body.messages[0]?.content === instruction);

/** The scripted delegation of {@link runDelegation}. */
interface Delegation {
  sessionId: string;
  /** The root's template name, instruction (its script's key) and limits. */
  root: { name: string; instruction: string; limits?: AgentTemplateInput['limits'] };
  /** The subagent the root creates (no tools) and its model replies, in order. */
  child: { name: string; instruction: string; replies: ((req: ChatRequest) => ScriptedResponse)[] };
  /** Tool call ids of the root's two calls: `<idPrefix>1`, `<idPrefix>2`. */
  idPrefix: string;
  /** What the root asks the child. */
  request: string;
  /** The root's finish_task summary (its third reply). */
  summary: string;
  task: string;
  timeoutMs: number;
}

/**
 * Runs a root session whose model creates a subagent, calls it synchronously, then finishes;
 * the child's replies are scripted by the caller.
 */
async function runDelegation(d: Delegation): Promise<AgentRunResult> {
  scripts({
    [d.root.instruction]: [
      () => ({
        toolCalls: [
          {
            id: `${d.idPrefix}1`,
            name: 'create_subagent',
            arguments: { name: d.child.name, instruction: d.child.instruction, tools: [] },
          },
        ],
      }),
      () => ({
        toolCalls: [
          {
            id: `${d.idPrefix}2`,
            name: 'call_subagent',
            arguments: { target: d.child.name, request: d.request, mode: 'sync' },
          },
        ],
      }),
      () => ({ toolCalls: [{ name: 'finish_task', arguments: { summary: d.summary } }] }),
    ],
    [d.child.instruction]: d.child.replies,
  });
  return runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId: d.sessionId,
    template: {
      name: d.root.name,
      instruction: d.root.instruction,
      model: 'fake',
      tools: ['create_subagent', 'call_subagent'],
      ...(d.root.limits ? { limits: d.root.limits } : {}),
    },
    task: d.task,
    signal: AbortSignal.timeout(d.timeoutMs),
  });
}

test('MAX_TOKENS: the run stops once limits.maxTokens are used, with no further call', async () => {
  c.fake.setHandler(() => ({
    toolCalls: [{ name: 'list_agents', arguments: {} }],
    usage: { prompt_tokens: 30, completion_tokens: 30 },
  }));
  const sessionId = `tokens-${randomUUID().slice(0, 8)}`;
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: {
      name: 'talker',
      instruction: 'Talk.',
      model: 'fake',
      tools: ['list_agents'],
      limits: { maxSteps: 10, maxTokens: 100 },
    },
    task: 'Keep going.',
    signal: AbortSignal.timeout(60_000),
  });
  // 60 tokens after call 1 (< 100: call 2 goes out), 120 after call 2 (≥ 100: stop).
  expect(result).toMatchObject({
    stopReason: 'MAX_TOKENS',
    steps: 2,
    usage: { inputTokens: 60, outputTokens: 60 },
  });
  expect(c.fake.chatRequests).toHaveLength(2);
  // The second call's tool call was executed before the limit check; its result is in the state.
  expect((await statusOf(sessionId)).run).toMatchObject({
    runId: result.runId,
    status: 'done',
    stopReason: 'MAX_TOKENS',
    steps: 2,
    inputTokens: 60,
    outputTokens: 60,
  });
  const ends = await runEnds(sessionId);
  expect(ends.map((e) => (e.data['result'] as { stopReason: string }).stopReason)).toEqual([
    'MAX_TOKENS',
  ]);
}, 90_000);

test('WALL_TIME: a model call past limits.maxWallMs is cut off; a parent past it after a tool stops before its next call', async () => {
  // The child inherits the parent's limits (maxWallMs 8 s, ample for the parent's first two
  // calls even on a loaded machine); the child's only model reply would take 60 s.
  const sessionId = `wall-${randomUUID().slice(0, 8)}`;
  const started = Date.now();
  const result = await runDelegation({
    sessionId,
    root: { name: 'hasty', instruction: 'WALL_ROOT', limits: { maxSteps: 10, maxWallMs: 8_000 } },
    child: {
      name: 'slow',
      instruction: 'WALL_CHILD',
      replies: [() => ({ content: 'never delivered', delayMs: 60_000 })],
    },
    idPrefix: 'w',
    request: 'take forever',
    summary: 'too late',
    task: 'Delegate to a slow helper.',
    timeoutMs: 60_000,
  });
  // The child's call was aborted at its own 8 s deadline, far before the fake's 60 s delay.
  expect(Date.now() - started).toBeLessThan(50_000);
  expect(result).toMatchObject({ stopReason: 'WALL_TIME', steps: 2 });
  // The parent made its two calls, the child one; the parent's third call was never sent.
  expect(bySystem('WALL_ROOT')).toHaveLength(2);
  expect(bySystem('WALL_CHILD')).toHaveLength(1);
  expect(c.fake.chatRequests).toHaveLength(3);
  const childId = `${sessionId}__slow`;
  const [childEnd] = await runEnds(childId);
  expect(childEnd?.data['result']).toMatchObject({ stopReason: 'WALL_TIME', steps: 0 });
  expect((childEnd?.data['result'] as { error?: string }).error).toMatch(/TIMEOUT|timed out/i);
  expect((await statusOf(childId)).run).toMatchObject({ status: 'done', stopReason: 'WALL_TIME' });
  const parent = (await statusOf(sessionId)).run;
  expect(parent).toMatchObject({ status: 'done', stopReason: 'WALL_TIME', steps: 2 });
}, 120_000);

test('MODEL_ERROR: a 400 from the provider is not retried and ends the run', async () => {
  c.fake.enqueue({ status: 400 });
  const sessionId = `bad-req-${randomUUID().slice(0, 8)}`;
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: { name: 'plain', instruction: 'Answer.', model: 'fake' },
    task: 'Go.',
    signal: AbortSignal.timeout(60_000),
  });
  expect(result).toMatchObject({ stopReason: 'MODEL_ERROR', steps: 0 });
  expect(result.error).toMatch(/^INVALID_ARGUMENT: .*400/);
  expect(c.fake.chatRequests).toHaveLength(1);
  expect((await statusOf(sessionId)).run).toMatchObject({
    status: 'done',
    stopReason: 'MODEL_ERROR',
    steps: 0,
  });
  c.fake.assertScriptConsumed();
}, 60_000);

test('MODEL_ERROR: a 429 storm that outlasts the retries ends the run', async () => {
  c.fake.setHandler(() => ({ status: 429, retryAfterMs: 10 }));
  const sessionId = `storm-${randomUUID().slice(0, 8)}`;
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: { name: 'plain', instruction: 'Answer.', model: 'fake' },
    task: 'Go.',
    signal: AbortSignal.timeout(60_000),
  });
  expect(result).toMatchObject({ stopReason: 'MODEL_ERROR', steps: 0 });
  expect(result.error).toMatch(/^UNAVAILABLE: /);
  // The agent host's LLM client makes 4 attempts (the default), then gives up once: the run is
  // not retried on top of that.
  expect(c.fake.chatRequests).toHaveLength(4);
  expect((await statusOf(sessionId)).run).toMatchObject({
    status: 'done',
    stopReason: 'MODEL_ERROR',
  });
}, 60_000);

test('REJECTED: a second run while one is in progress (BUSY), an unknown model, sandbox tools without a sandbox', async () => {
  // Run 1's first model reply is held until run 2 has been posted, so run 2 arrives mid-run and
  // is refused at run 1's next tool boundary.
  let release: () => void = () => undefined;
  const posted = new Promise<void>((r) => (release = r));
  let calls = 0;
  c.fake.setHandler(async () => {
    calls++;
    if (calls === 1) {
      await posted;
      return { toolCalls: [{ name: 'list_agents', arguments: {} }] };
    }
    return { toolCalls: [{ name: 'finish_task', arguments: { summary: 'first run done' } }] };
  });
  const sessionId = `busy-${randomUUID().slice(0, 8)}`;
  const template = {
    name: 'worker',
    instruction: 'Work.',
    model: 'fake',
    tools: ['list_agents' as const],
  };
  const first = await startAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template,
    task: 'First.',
    runId: 'run-1',
    signal: AbortSignal.timeout(60_000),
  });
  await waitFor(() => calls > 0, { timeoutMs: 30_000, message: 'run 1 never called the model' });
  const second = await startAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    task: 'Second.',
    runId: 'run-2',
    signal: AbortSignal.timeout(60_000),
  });
  release();
  const refused = await second.result;
  expect(refused).toMatchObject({ runId: 'run-2', stopReason: 'REJECTED', steps: 0, costUsd: 0 });
  expect(refused.error).toMatch(/^BUSY: session \S+ has run run-1 in progress/);
  expect(await first.result).toMatchObject({
    runId: 'run-1',
    stopReason: 'FINISHED',
    finalText: 'first run done',
    steps: 2,
  });
  // Only run 1 reached the provider, and run 2's task never entered the conversation.
  expect(c.fake.chatRequests).toHaveLength(2);
  expect(JSON.stringify(c.fake.chatRequests.map((r) => r.body.messages))).not.toContain('Second.');
  expect(await statusOf(sessionId)).toMatchObject({
    runsDone: 1,
    run: { runId: 'run-1', status: 'done', stopReason: 'FINISHED' },
  });
  expect(
    (await runEnds(sessionId)).map((e) => [
      e.runId,
      (e.data['result'] as { stopReason: string }).stopReason,
    ]),
  ).toEqual([
    ['run-2', 'REJECTED'],
    ['run-1', 'FINISHED'],
  ]);

  // Refused before anything runs: nothing reaches the provider, no run is recorded in the state.
  c.fake.reset();
  const unknownModel = `nomodel-${randomUUID().slice(0, 8)}`;
  const noModel = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId: unknownModel,
    template: { name: 'lost', instruction: 'Answer.', model: 'no-such-model' },
    task: 'Go.',
    signal: AbortSignal.timeout(60_000),
  });
  expect(noModel).toMatchObject({ stopReason: 'REJECTED', steps: 0 });
  expect(noModel.error).toMatch(
    /^INVALID_ARGUMENT: `run\.template\.model`: 'no-such-model' is not in the model registry/,
  );
  const noSandbox = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId: `nosb-${randomUUID().slice(0, 8)}`,
    template: { name: 'coder', instruction: 'Code.', model: 'fake', tools: ['view_file'] },
    task: 'Go.',
    signal: AbortSignal.timeout(60_000),
  });
  expect(noSandbox).toMatchObject({ stopReason: 'REJECTED' });
  expect(noSandbox.error).toMatch(
    /`run\.sandboxId`: required because the template holds view_file/,
  );
  expect(c.fake.chatRequests).toHaveLength(0);
  expect(await statusOf(unknownModel)).toMatchObject({ runsDone: 0 });
  expect((await statusOf(unknownModel)).run).toBeUndefined();
}, 120_000);

test('a run posted with an invalid payload ends REJECTED naming the field, and the session takes the next run', async () => {
  const sessionId = `invalid-${randomUUID().slice(0, 8)}`;
  const ref = c.client.refOf({ kind: AGENT_KIND, id: sessionId });
  // Posted by hand, past the session helpers' own checks: the runtime's validation refuses it.
  await ref.post('run', {
    runId: 'bad-1',
    task: '',
    template: { name: 'x', instruction: 'Answer.', model: 'fake' },
  });
  const refused = (await c.trajectories.waitForRunEnd(sessionId, 'bad-1', {
    signal: AbortSignal.timeout(30_000),
  })) as AgentRunResult;
  expect(refused).toMatchObject({ runId: 'bad-1', stopReason: 'REJECTED', steps: 0 });
  expect(refused.error).toMatch(/^INVALID_ARGUMENT: .*run\.task.*must not be empty/);
  // A payload without a usable run id has nobody to tell: dead-lettered, nothing recorded.
  await ref.post('run', { runId: 'no spaces allowed', task: 'Go.' });
  c.fake.setHandler(() => ({ content: 'done' }));
  const next = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    runId: 'good-1',
    template: { name: 'x', instruction: 'Answer.', model: 'fake' },
    task: 'Go.',
    signal: AbortSignal.timeout(60_000),
  });
  expect(next).toMatchObject({ runId: 'good-1', stopReason: 'NO_TOOL_CALLS' });
  expect((await runEnds(sessionId)).map((e) => e.runId)).toEqual(['bad-1', 'good-1']);
  expect(c.fake.chatRequests).toHaveLength(1);
});

test('a run whose turn fails on every attempt ends with INTERNAL_ERROR instead of being dead-lettered; the waiting parent gets the result', async () => {
  // The child's model reply is larger than NATS's 1 MB payload limit: its trajectory event cannot
  // be written, so the child's turn throws on every attempt.
  const huge = 'X'.repeat(1_200_000);
  const sessionId = `dl-${randomUUID().slice(0, 8)}`;
  const result = await runDelegation({
    sessionId,
    root: { name: 'root', instruction: 'DL_ROOT' },
    child: {
      name: 'big',
      instruction: 'DL_CHILD',
      replies: [1, 2, 3, 4, 5].map(() => () => ({ content: huge })),
    },
    idPrefix: 'd',
    request: 'say a lot',
    summary: 'child failed',
    task: 'Delegate.',
    timeoutMs: 90_000,
  });
  expect(result).toMatchObject({ stopReason: 'FINISHED', finalText: 'child failed', steps: 3 });
  // The parent's sync call returned the child's INTERNAL_ERROR result (not a 1 h timeout).
  const parentRequests = bySystem('DL_ROOT');
  expect(toolResults(parentRequests[2]?.body)['d2']).toMatch(
    /^subagent big \(session \S+__big\) finished: INTERNAL_ERROR after 0 steps \(UNAVAILABLE: cannot append to the trajectory .*\(the turn failed 3 attempts\)\)/,
  );
  // Three attempts (the actor runtime's maxAttempts) each sent one call; then the run ended, from
  // the last committed state (the working state, holding the reply, cannot be written either).
  expect(bySystem('DL_CHILD')).toHaveLength(3);
  const childId = `${sessionId}__big`;
  const ends = await runEnds(childId);
  expect(ends).toHaveLength(1);
  expect(ends[0]?.data['result']).toMatchObject({
    stopReason: 'INTERNAL_ERROR',
    finalText: '',
    steps: 0,
  });
  expect((ends[0]?.data['result'] as { error: string }).error).toMatch(/3 attempts/);
  // The recorded end and the saved state agree.
  expect((await statusOf(childId)).run).toMatchObject({
    status: 'done',
    stopReason: 'INTERNAL_ERROR',
    steps: 0,
  });
}, 150_000);

test('a woken turn (a posted message) that fails on every attempt ends the run with INTERNAL_ERROR for the runAgentSession caller', async () => {
  const huge = 'Y'.repeat(1_200_000);
  let releaseChild: () => void = () => undefined;
  const childMayFinish = new Promise<void>((r) => (releaseChild = r));
  c.fake.setHandler(async (req) => {
    const system = req.body.messages[0]?.content;
    const text = JSON.stringify(req.body.messages);
    if (system === 'WAKE_CHILD') {
      await childMayFinish;
      return { toolCalls: [{ name: 'finish_task', arguments: { summary: 'late' } }] };
    }
    const own = bySystem('WAKE_ROOT').length;
    if (own === 1) {
      return {
        toolCalls: [
          {
            name: 'create_subagent',
            arguments: { name: 'kid', instruction: 'WAKE_CHILD', tools: [] },
          },
        ],
      };
    }
    if (own === 2) {
      return {
        toolCalls: [
          {
            name: 'call_subagent',
            arguments: { target: 'kid', request: 'take your time', mode: 'async' },
          },
        ],
      };
    }
    return text.includes('WAKE-UP') ? { content: huge } : { content: 'waiting for kid' };
  });
  const sessionId = `wake-${randomUUID().slice(0, 8)}`;
  const handle = await startAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: {
      name: 'sleeper',
      instruction: 'WAKE_ROOT',
      model: 'fake',
      tools: ['create_subagent', 'call_subagent'],
    },
    task: 'Delegate and wait.',
    signal: AbortSignal.timeout(90_000),
  });
  await waitFor(async () => (await statusOf(sessionId)).run?.status === 'waiting', {
    timeoutMs: 60_000,
    intervalMs: 200,
    message: 'root never waited for its async call',
  });
  await c.client
    .refOf({ kind: AGENT_KIND, id: sessionId })
    .post('message', { from: 'user', text: 'WAKE-UP' });
  const result = await handle.result;
  releaseChild();
  // The 3 calls before the wake; the woken attempts' replies were never committed.
  expect(result).toMatchObject({ stopReason: 'INTERNAL_ERROR', steps: 3, finalText: '' });
  expect(result.error).toMatch(/\(the turn failed 3 attempts\)$/);
  // The woken turn called the model once per attempt; nothing after.
  const woken = bySystem('WAKE_ROOT').filter((r) => JSON.stringify(r.body).includes('WAKE-UP'));
  expect(woken).toHaveLength(3);
  expect((await statusOf(sessionId)).run).toMatchObject({
    status: 'done',
    stopReason: 'INTERNAL_ERROR',
    steps: 3,
  });
  // The message was delivered once, although its turn ran three times.
  const events = await c.trajectories.read(sessionId);
  expect(events.filter((e) => e.type === 'run_end')).toHaveLength(1);
  expect(
    events.filter((e) => e.type === 'message' && e.data['fullText'] === 'WAKE-UP'),
  ).toHaveLength(1);
}, 150_000);
