import { randomUUID } from 'node:crypto';
import { type ChatRequest, type FakeCompletion, waitFor } from '@troupe/testkit';
import { runAgentSession } from '../../src/agent/agent-session';
import { type AgentTemplateInput } from '../../src/agent/agent-template';
import { TrajectoryEventType } from '../../src/agent/trajectory-event';
import { trajectoryToRecord } from '../../src/agent/trajectory-jsonl';
import { type AgentCluster, startAgentCluster, toolResults } from './agent-cluster';

// The agent actor end to end: a coordinator, a node agent with Docker sandboxes and an agent host,
// each a real process; the model is the testkit's FakeOpenAI.

let c: AgentCluster;
beforeAll(async () => {
  c = await startAgentCluster({ docker: true });
  await c.startHost('h1');
}, 180_000);
afterAll(async () => {
  await c?.stop();
}, 60_000);
afterEach(() => {
  c.fake.reset();
});

const coder = (extra: Partial<AgentTemplateInput> = {}): AgentTemplateInput => ({
  name: 'coder',
  instruction: 'You fix code in /workspace.',
  model: 'fake',
  tools: ['run_terminal_command', 'view_file', 'edit_file', 'write_file'],
  ...extra,
});

const call = (id: string, name: string, args: unknown): FakeCompletion => ({
  toolCalls: [
    { id, name, arguments: typeof args === 'string' ? args : (args as Record<string, unknown>) },
  ],
});

test('a scripted root agent edits a file in its sandbox, runs a command and finishes', async () => {
  const sandboxId = `sb-${randomUUID().slice(0, 8)}`;
  await c.createSandbox(sandboxId, { 'greet.sh': 'echo hello world\n' });
  c.fake.enqueue(
    call('c1', 'view_file', { path: 'greet.sh' }),
    call('c2', 'edit_file', { path: 'greet.sh', old_text: 'hello', new_text: 'goodbye' }),
    call('c3', 'run_terminal_command', { command: 'sh greet.sh' }),
    call('c4', 'finish_task', { summary: 'greeting changed' }),
  );
  const sessionId = `root-${randomUUID().slice(0, 8)}`;
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: coder(),
    task: 'Make greet.sh say goodbye.',
    sandboxId,
    signal: AbortSignal.timeout(120_000),
  });
  expect(result).toMatchObject({
    sessionId,
    stopReason: 'FINISHED',
    finalText: 'greeting changed',
    steps: 4,
  });
  expect(result.usage.inputTokens).toBeGreaterThan(0);
  c.fake.assertScriptConsumed();
  // The edit happened in the sandbox, and the command's output reached the model.
  expect((await c.sh(sandboxId, 'cat greet.sh')).stdout).toBe('echo goodbye world\n');
  const requests = c.fake.chatRequests;
  expect(toolResults(requests[1]?.body)['c1']).toContain('1\techo hello world');
  expect(toolResults(requests[3]?.body)['c3']).toMatch(/exit code: 0[\s\S]*goodbye world/);
  // The model was offered exactly the template's tools plus finish_task.
  const offered = (requests[0]?.body.tools ?? []).map((t) =>
    t.type === 'function' ? t.function.name : '',
  );
  expect(offered.sort()).toEqual(
    ['edit_file', 'finish_task', 'run_terminal_command', 'view_file', 'write_file'].sort(),
  );
  // The trajectory has every step and exports as OpenAI chat messages.
  const events = await c.trajectories.read(sessionId);
  expect(events.map((e) => e.type)).toEqual([
    'run_start',
    ...Array(4).fill(['model_call', 'tool_call', 'tool_result']).flat(),
    'run_end',
  ]);
  const record = trajectoryToRecord(sessionId, events);
  expect(record.messages.map((m) => m.role)).toEqual([
    'system',
    'user',
    ...Array(4).fill(['assistant', 'tool']).flat(),
  ]);
  expect(record.messages[2]).toMatchObject({
    role: 'assistant',
    tool_calls: [{ id: 'c1', type: 'function', function: { name: 'view_file' } }],
  });
}, 180_000);

test('edit_file and bad tool calls come back to the model as errors, and the run goes on', async () => {
  const sandboxId = `sb-${randomUUID().slice(0, 8)}`;
  await c.createSandbox(sandboxId, { 'a.txt': 'x\nx\n' });
  c.fake.enqueue(
    call('m1', 'edit_file', '{"path": "a.txt", "old_text": '), // malformed JSON
    call('m2', 'delete_everything', {}), // unknown tool
    call('m3', 'view_file', { file: 'a.txt' }), // bad arguments
    call('m4', 'edit_file', { path: 'a.txt', old_text: 'x', new_text: 'y' }), // ambiguous
    call('m5', 'edit_file', { path: 'a.txt', old_text: 'zzz', new_text: 'y' }), // not found
    call('m6', 'run_terminal_command', { command: 'sleep 30', timeout_s: 1 }),
    call('m7', 'run_terminal_command', { command: 'echo bg-done; sleep 1', background: true }),
    { content: 'done, no tool' },
  );
  const sessionId = `bad-${randomUUID().slice(0, 8)}`;
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: coder(),
    task: 'Try things.',
    sandboxId,
    signal: AbortSignal.timeout(120_000),
  });
  expect(result).toMatchObject({
    stopReason: 'NO_TOOL_CALLS',
    finalText: 'done, no tool',
    steps: 8,
  });
  const results = toolResults(c.fake.chatRequests[7]?.body);
  expect(results['m1']).toMatch(/^error: the arguments of edit_file are not valid JSON/);
  expect(results['m2']).toMatch(/^error: unknown tool 'delete_everything'; your tools: /);
  expect(results['m3']).toMatch(/arguments\.path/);
  expect(results['m3']).toMatch(/arguments/);
  expect(results['m4']).toMatch(/ambiguous, found 2 times in a\.txt \(lines 1, 2\)/);
  expect(results['m5']).toMatch(/not found in a\.txt/);
  expect(results['m6']).toMatch(/timed out after 1 s/);
  expect(results['m7']).toMatch(/^started background job \S+/);
  expect((await c.sh(sandboxId, 'cat a.txt')).stdout).toBe('x\nx\n');
}, 180_000);

test('a 429 storm is retried and the run finishes', async () => {
  c.fake.enqueue(
    { status: 429, retryAfterMs: 10 },
    { status: 429, retryAfterMs: 10 },
    { status: 503 },
    call('r1', 'finish_task', { summary: 'made it' }),
  );
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId: `storm-${randomUUID().slice(0, 8)}`,
    template: { name: 'plain', instruction: 'Answer.', model: 'fake' },
    task: 'Go.',
    signal: AbortSignal.timeout(60_000),
  });
  expect(result).toMatchObject({ stopReason: 'FINISHED', finalText: 'made it', steps: 1 });
  expect(c.fake.chatRequests).toHaveLength(4);
}, 90_000);

test('budget exhausted mid-run: stops with BUDGET_EXHAUSTED, state saved, no call past the cap', async () => {
  c.fake.setHandler(() => ({
    toolCalls: [{ name: 'list_agents', arguments: {} }],
    usage: { prompt_tokens: 10, completion_tokens: 100 },
  }));
  const sessionId = `budget-${randomUUID().slice(0, 8)}`;
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: {
      name: 'spender',
      instruction: 'Spend.',
      model: 'priced',
      tools: ['list_agents'],
      maxTokensPerCall: 100,
      limits: { maxSteps: 20, maxCostUsd: 0.25 },
    },
    task: 'Keep calling tools.',
    signal: AbortSignal.timeout(60_000),
  });
  // Worst case per call = 100 tokens × $0.001 = $0.1: calls 1 and 2 fit in $0.25, call 3 does not.
  expect(result).toMatchObject({ stopReason: 'BUDGET_EXHAUSTED', steps: 2 });
  expect(result.costUsd).toBeCloseTo(0.2, 6);
  expect(c.fake.chatRequests).toHaveLength(2);
  const status = (await c.client.refOf({ kind: 'agent', id: sessionId }).ask('status', {})) as {
    run: { status: string; stopReason: string; steps: number };
  };
  expect(status.run).toMatchObject({ status: 'done', stopReason: 'BUDGET_EXHAUSTED', steps: 2 });
}, 120_000);

test('compaction summarises older history and keeps pinned text verbatim', async () => {
  const pinnedTask = 'PINNED-TASK: keep this sentence exactly as written.';
  const long = 'L'.repeat(700);
  c.fake.setHandler((req) => {
    const system = req.body.messages[0];
    if (system && typeof system.content === 'string' && system.content.startsWith('You compress')) {
      return { content: 'SUMMARY-OF-OLD-STEPS' };
    }
    const n = c.fake.chatRequests.filter(
      (r) => !JSON.stringify(r.body).includes('You compress'),
    ).length;
    if (n <= 2) return { content: long, toolCalls: [{ name: 'list_agents', arguments: {} }] };
    return { toolCalls: [{ name: 'finish_task', arguments: { summary: 'compacted' } }] };
  });
  const sessionId = `compact-${randomUUID().slice(0, 8)}`;
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: {
      name: 'longwinded',
      instruction: 'Be verbose.',
      model: 'fake',
      tools: ['list_agents'],
      compaction: { maxChars: 1_000, model: 'summariser', keepRecentChars: 200 },
    },
    task: pinnedTask,
    signal: AbortSignal.timeout(60_000),
  });
  expect(result).toMatchObject({ stopReason: 'FINISHED', finalText: 'compacted', steps: 3 });
  const requests = c.fake.chatRequests;
  expect(requests).toHaveLength(4);
  expect(JSON.stringify(requests[2]?.body)).toContain('You compress');
  const after = JSON.stringify(requests[3]?.body.messages);
  expect(after).toContain(pinnedTask);
  expect(after).toContain('SUMMARY-OF-OLD-STEPS');
  expect(after.split(long).length - 1).toBe(1); // the first long reply was summarised away
  const events = await c.trajectories.read(sessionId);
  const compaction = events.find((e) => e.type === TrajectoryEventType.COMPACTION);
  expect(compaction?.data).toMatchObject({ model: 'summariser', summary: 'SUMMARY-OF-OLD-STEPS' });
  // The exported trajectory still has the full, uncompacted conversation.
  const exported = JSON.stringify(trajectoryToRecord(sessionId, events).messages);
  expect(exported.split(long).length - 1).toBe(2);
}, 120_000);

test('runUntilExplicitFinish: bounded automatic continue prompts, then NO_TOOL_CALLS', async () => {
  c.fake.enqueue({ content: 'thinking' }, { content: 'still thinking' }, { content: 'giving up' });
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId: `cont-${randomUUID().slice(0, 8)}`,
    template: { name: 'ponder', instruction: 'Think.', model: 'fake', maxAutoContinues: 2 },
    task: 'Ponder.',
    signal: AbortSignal.timeout(60_000),
  });
  expect(result).toMatchObject({ stopReason: 'NO_TOOL_CALLS', finalText: 'giving up', steps: 3 });
  const second = c.fake.chatRequests[1]?.body.messages.at(-1);
  expect(second).toMatchObject({ role: 'user' });
  expect(JSON.stringify(second)).toContain('call finish_task');
  c.fake.assertScriptConsumed();
}, 60_000);

test('run_terminal_command in the background: poll sees the job run and exit; kill stops it before it writes its file', async () => {
  const sandboxId = `sb-${randomUUID().slice(0, 8)}`;
  await c.createSandbox(sandboxId, {});
  const exists = async (file: string) => (await c.sh(sandboxId, `test -f ${file}`)).exitCode === 0;
  const jobIn = (req: ChatRequest, callId: string): string => {
    const id = /started background job (\S+);/.exec(toolResults(req.body)[callId] ?? '')?.[1];
    if (!id) throw new Error(`no job id in the result of ${callId}`);
    return id;
  };
  const polls: string[] = [];
  let killResult = '';
  let afterKill = '';
  c.fake.setHandler(async (req) => {
    const results = toolResults(req.body);
    const n = c.fake.chatRequests.length;
    if (n === 1) {
      return call('b1', 'run_terminal_command', {
        command: 'echo bg-started; sleep 1; echo bg-finished > done1.txt; echo bg-end',
        background: true,
      });
    }
    const job1 = jobIn(req, 'b1');
    if (!results['b3']) {
      // Poll job 1 until it has exited (each poll is a step; the file says it is nearly done).
      const last = Object.entries(results).filter(([id]) => id.startsWith('p'));
      const lastText = last.at(-1)?.[1];
      if (lastText !== undefined) polls.push(lastText);
      if (lastText === undefined || / running/.test(lastText)) {
        await waitFor(() => exists('done1.txt'), { timeoutMs: 60_000, message: 'job 1 output' });
        return call(`p${last.length + 1}`, 'run_terminal_command', {
          action: 'poll',
          job_id: job1,
        });
      }
      // Job 2 would write killed.txt after 3 s; it is killed long before.
      return call('b3', 'run_terminal_command', {
        command: 'echo k-started; sleep 3; echo late > killed.txt',
        background: true,
      });
    }
    const job2 = jobIn(req, 'b3');
    if (!results['b4']) {
      return call('b4', 'run_terminal_command', { action: 'kill', job_id: job2 });
    }
    if (!results['b5']) {
      killResult = results['b4'] ?? '';
      // A control job with the same delay, started after the kill: once its file exists, the
      // killed job's would too had it survived.
      return call('b5', 'run_terminal_command', {
        command: 'sleep 3; echo late > control.txt',
        background: true,
      });
    }
    if (!results['b6']) {
      await waitFor(() => exists('control.txt'), { timeoutMs: 60_000, message: 'control job' });
      return call('b6', 'run_terminal_command', { action: 'poll', job_id: job2 });
    }
    afterKill = results['b6'] ?? '';
    return call('b7', 'finish_task', { summary: 'jobs handled' });
  });
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId: `bg-${randomUUID().slice(0, 8)}`,
    template: coder({ limits: { maxSteps: 60 } }),
    task: 'Run background jobs.',
    sandboxId,
    signal: AbortSignal.timeout(150_000),
  });
  expect(result).toMatchObject({ stopReason: 'FINISHED', finalText: 'jobs handled' });
  // Job 1 really ran in the sandbox: its file is there and poll saw it exit with its output.
  expect((await c.sh(sandboxId, 'cat done1.txt')).stdout).toBe('bg-finished\n');
  const final = polls.at(-1) ?? '';
  expect(final).toMatch(/^job \S+: exited, exit code 0/);
  expect(final).toMatch(/--- stdout ---\nbg-started\nbg-end/);
  // Job 2 was killed: the kill reports it, a later poll agrees, and it never wrote its file even
  // though a job started after the kill with the same delay has finished.
  expect(killResult).toMatch(/^job \S+: killed/);
  expect(killResult).toContain('k-started');
  expect(afterKill).toMatch(/^job \S+: killed/);
  expect(await exists('control.txt')).toBe(true);
  expect(await exists('killed.txt')).toBe(false);
}, 240_000);
