import { randomUUID } from 'node:crypto';
import { type FakeCompletion } from '@troupe/testkit';
import { runAgentSession } from '../../src/agent/agent-session';
import { type AgentTemplateInput } from '../../src/agent/agent-template';
import { type AgentCluster, startAgentCluster, toolResults } from './agent-cluster';

// The middleware chain end to end (issue 21): a coordinator, a node agent with Docker sandboxes
// and an agent host (offering the `deny-command` plugin), each a real process; FakeOpenAI answers
// the agent, the summariser and the fake user alike, in the order they call.

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

const call = (id: string, name: string, args: Record<string, unknown>): FakeCompletion => ({
  toolCalls: [{ id, name, arguments: args }],
});

async function run(template: Partial<AgentTemplateInput>, sandboxId?: string) {
  const sessionId = `mw-${randomUUID().slice(0, 8)}`;
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template: {
      name: 'coder',
      instruction: 'You work in /workspace.',
      model: 'fake',
      tools: sandboxId ? ['run_terminal_command', 'view_file', 'edit_file'] : [],
      ...template,
    },
    task: 'Do the task.',
    ...(sandboxId ? { sandboxId } : {}),
    signal: AbortSignal.timeout(120_000),
  });
  return { sessionId, result, events: await c.trajectories.read(sessionId) };
}

async function sandbox(files: Record<string, string>): Promise<string> {
  const id = `sb-${randomUUID().slice(0, 8)}`;
  await c.createSandbox(id, files);
  return id;
}

test('doom_loop with action stop ends the run after the same failing call repeats', async () => {
  const sb = await sandbox({});
  c.fake.enqueue(
    call('c1', 'view_file', { path: 'missing.txt' }),
    call('c2', 'view_file', { path: 'missing.txt' }),
    call('c3', 'view_file', { path: 'missing.txt' }),
  );
  const { result, events } = await run(
    { middleware: [{ use: 'doom_loop', repeats: 3, action: 'stop' }] },
    sb,
  );
  expect(result.stopReason).toBe('STOPPED_BY_MIDDLEWARE');
  expect(result.steps).toBe(3);
  expect(result.error).toContain('stopped by doom_loop');
  expect(result.error).toContain('view_file 3 times in a row');
  const mw = events.filter((e) => e.type === 'middleware');
  expect(mw.map((e) => e.data)).toEqual([
    expect.objectContaining({ middleware: 'doom_loop', hook: 'afterTool', action: 'stop' }),
  ]);
  c.fake.assertScriptConsumed();
}, 120_000);

test('doom_loop with action hint tells the model after the repeats and the run goes on', async () => {
  const sb = await sandbox({});
  c.fake.enqueue(
    call('c1', 'view_file', { path: 'missing.txt' }),
    call('c2', 'view_file', { path: 'missing.txt' }),
    call('c3', 'finish_task', { summary: 'gave up on the file' }),
  );
  const { result } = await run(
    { middleware: [{ use: 'doom_loop', repeats: 2, hint: 'LOOP-HINT: try something else' }] },
    sb,
  );
  expect(result).toMatchObject({ stopReason: 'FINISHED', steps: 3 });
  const requests = c.fake.chatRequests;
  // No hint after the first failure; after the second, it follows the tool result.
  expect(JSON.stringify(requests[1]?.body.messages)).not.toContain('LOOP-HINT');
  const last = requests[2]?.body.messages.at(-1);
  expect(last).toMatchObject({ role: 'user', content: 'LOOP-HINT: try something else' });
  c.fake.assertScriptConsumed();
}, 120_000);

test('read_before_edit refuses a blind edit; a host plugin blocks a command; both go back as tool errors', async () => {
  const sb = await sandbox({ 'a.txt': 'old text\n' });
  c.fake.enqueue(
    call('c1', 'edit_file', { path: 'a.txt', old_text: 'old', new_text: 'new' }),
    call('c2', 'view_file', { path: 'a.txt' }),
    call('c3', 'edit_file', { path: 'a.txt', old_text: 'old', new_text: 'new' }),
    call('c4', 'run_terminal_command', { command: 'rm a.txt' }),
    call('c5', 'finish_task', { summary: 'edited' }),
  );
  const { result, events } = await run(
    {
      middleware: [
        { use: 'read_before_edit' },
        { use: 'plugin', name: 'deny-command', options: { pattern: '\\brm\\b' } },
      ],
    },
    sb,
  );
  expect(result).toMatchObject({ stopReason: 'FINISHED', steps: 5 });
  const requests = c.fake.chatRequests;
  expect(toolResults(requests[1]?.body)['c1']).toMatch(
    /^error: blocked by read_before_edit: `arguments.path`: view a.txt with view_file before editing it/,
  );
  expect(toolResults(requests[3]?.body)['c3']).not.toMatch(/^error:/);
  expect(toolResults(requests[4]?.body)['c4']).toBe(
    'error: blocked by plugin:deny-command: commands matching /\\brm\\b/ are not allowed here',
  );
  // The edit after the view happened; the blocked command never ran.
  expect((await c.sh(sb, 'cat a.txt')).stdout).toBe('new text\n');
  const blocks = events.filter((e) => e.type === 'middleware').map((e) => e.data['middleware']);
  expect(blocks).toEqual(['read_before_edit', 'plugin:deny-command']);
  c.fake.assertScriptConsumed();
}, 120_000);

test('summarise_tool_output: a long result reaches the model as a summary; the trajectory keeps it all', async () => {
  const sb = await sandbox({});
  c.fake.enqueue(
    call('c1', 'run_terminal_command', { command: 'seq 1 3000' }),
    { content: 'SUMMARY: the numbers 1 to 3000, one per line' },
    call('c2', 'finish_task', { summary: 'counted' }),
  );
  const { result, events } = await run(
    { middleware: [{ use: 'summarise_tool_output', aboveChars: 2_000, model: 'summariser' }] },
    sb,
  );
  expect(result).toMatchObject({ stopReason: 'FINISHED', steps: 2 });
  const requests = c.fake.chatRequests;
  expect(requests).toHaveLength(3);
  // The summariser saw the output, without the agent's tools.
  expect(requests[1]?.body.tools ?? []).toEqual([]);
  expect(JSON.stringify(requests[1]?.body.messages)).toContain('2999\\n3000');
  const seen = toolResults(requests[2]?.body)['c1'] ?? '';
  expect(seen).toMatch(
    /^\[\d+ characters of output, summarised; the full text is in the trajectory\]/,
  );
  expect(seen).toContain('SUMMARY: the numbers 1 to 3000');
  expect(seen).not.toContain('2999');
  const toolResult = events.find((e) => e.type === 'tool_result');
  expect(String(toolResult?.data['fullContent'])).toContain('2999\n3000');
  expect(events.some((e) => e.type === 'middleware' && e.data['action'] === 'rewrite')).toBe(true);
  c.fake.assertScriptConsumed();
}, 120_000);

test('a fake-user continuation policy writes the continue message with its own model', async () => {
  c.fake.enqueue(
    { content: 'I believe I am done.' },
    { content: 'Not yet: call finish_task with your summary.' },
    call('c1', 'finish_task', { summary: 'finished properly' }),
  );
  const { result } = await run({
    maxAutoContinues: 1,
    continuation: {
      kind: 'model',
      model: 'summariser',
      instruction: 'You are the demanding user.',
    },
  });
  expect(result).toMatchObject({
    stopReason: 'FINISHED',
    finalText: 'finished properly',
    steps: 2,
  });
  const requests = c.fake.chatRequests;
  expect(requests[1]?.body.messages[0]).toMatchObject({
    role: 'system',
    content: 'You are the demanding user.',
  });
  expect(JSON.stringify(requests[1]?.body.messages)).toContain('I believe I am done.');
  expect(requests[2]?.body.messages.at(-1)).toMatchObject({
    role: 'user',
    content: 'Not yet: call finish_task with your summary.',
  });
  c.fake.assertScriptConsumed();
}, 120_000);

test('a template naming a plugin the host does not offer is refused, naming the field', async () => {
  const { result } = await run({ middleware: [{ use: 'plugin', name: 'nope' }] });
  expect(result.stopReason).toBe('REJECTED');
  expect(result.error).toContain('run.template.middleware[0].name');
  expect(result.error).toContain("offers no plugin 'nope' (offered: deny-command)");
  const bad = await run({
    middleware: [{ use: 'plugin', name: 'deny-command', options: { pattern: 7 } }],
  });
  expect(bad.result.stopReason).toBe('REJECTED');
  expect(bad.result.error).toContain(
    '`run.template.middleware[0].options`: pattern: must be a string',
  );
  expect(c.fake.chatRequests).toHaveLength(0);
}, 120_000);
