import { randomUUID } from 'node:crypto';
import { type FakeCompletion } from '@troupe/testkit';
import { runAgentSession } from '../../src/agent/agent-session';
import { type AgentTemplateInput } from '../../src/agent/agent-template';
import { MemoryStore } from '../../src/memory/memory-store';
import { type AgentCluster, startAgentCluster, toolResults } from './agent-cluster';

// Long-term memory end to end (issue 21): one session writes, a later run of another session
// finds and reads it with its provenance; versions are kept; a read-only scope cannot write; a
// scope exports and imports as JSONL.

let c: AgentCluster;
let store: MemoryStore;
beforeAll(async () => {
  c = await startAgentCluster({ docker: false });
  await c.startHost('h1');
  store = await MemoryStore.open(c.nc, { cluster: c.cluster });
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

const agent = (memory: AgentTemplateInput['memory']): AgentTemplateInput => ({
  name: 'learner',
  instruction: 'You learn.',
  model: 'fake',
  memory,
});

async function run(sessionId: string, template: AgentTemplateInput) {
  return runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    template,
    task: 'Work.',
    signal: AbortSignal.timeout(60_000),
  });
}

test('what one session writes, a later run of another session finds and reads, with provenance', async () => {
  const scope = `job-${randomUUID().slice(0, 8)}`;
  const writer = `w-${randomUUID().slice(0, 8)}`;
  c.fake.enqueue(
    call('w1', 'memory_write', {
      title: 'Offline pip installs',
      text: 'Use pip install --no-index --find-links /wheels; the mirror is offline.',
      tags: ['pip'],
    }),
    call('w2', 'memory_write', {
      key: 'offline-pip-installs',
      title: 'Offline pip installs',
      text: 'Use pip install --no-index --find-links /wheels (v2: also for setup.py).',
      tags: ['pip'],
    }),
    call('w3', 'finish_task', { summary: 'noted' }),
  );
  expect(await run(writer, agent({ scope }))).toMatchObject({ stopReason: 'FINISHED' });
  expect(c.fake.chatRequests[0]?.body.messages[0]).toMatchObject({
    role: 'system',
    content: expect.stringContaining(`long-term memory (scope ${scope})`),
  });
  expect(toolResults(c.fake.chatRequests[1]?.body)['w1']).toMatch(
    new RegExp(
      `^wrote offline-pip-installs \\(version \\d+, by session ${writer} run \\S+ step 1 at `,
    ),
  );
  c.fake.reset();

  const reader = `r-${randomUUID().slice(0, 8)}`;
  c.fake.enqueue(
    call('r1', 'memory_search', { query: 'how to install pip packages offline' }),
    call('r2', 'memory_read', { key: 'offline-pip-installs' }),
    call('r3', 'memory_read', { key: 'never-written' }),
    call('r4', 'finish_task', { summary: 'found it' }),
  );
  expect(await run(reader, agent({ scope, write: false }))).toMatchObject({
    stopReason: 'FINISHED',
  });
  const requests = c.fake.chatRequests;
  const offered = (requests[0]?.body.tools ?? []).map((t) =>
    t.type === 'function' ? t.function.name : '',
  );
  expect(offered.sort()).toEqual(['finish_task', 'memory_read', 'memory_search']);
  expect(toolResults(requests[1]?.body)['r1']).toMatch(
    new RegExp(
      `^- Offline pip installs — offline-pip-installs \\(version \\d+, by session ${writer} run \\S+ step 2 at`,
    ),
  );
  const read = toolResults(requests[2]?.body)['r2'] ?? '';
  expect(read).toContain('(v2: also for setup.py)');
  expect(read).toContain('tags: pip');
  expect(toolResults(requests[3]?.body)['r3']).toBe(
    `error: NOT_FOUND: \`arguments.key\`: no entry 'never-written' in memory ${scope}`,
  );
  // Both versions are kept, each with its own provenance.
  const versions = await store.versions(scope, 'offline-pip-installs');
  expect(versions.map((v) => v.provenance.step)).toEqual([1, 2]);
  expect(versions.every((v) => v.provenance.session === writer)).toBe(true);
  const first = await store.read(scope, 'offline-pip-installs', versions[0]!.version);
  expect(first?.text).not.toContain('v2');
}, 60_000);

test('a read-only memory cannot write; a scope exports and imports as JSONL', async () => {
  const scope = `ro-${randomUUID().slice(0, 8)}`;
  c.fake.enqueue(
    call('x1', 'memory_write', { title: 't', text: 'x' }),
    call('x2', 'finish_task', { summary: 'done' }),
  );
  await run(`ro-${randomUUID().slice(0, 8)}`, agent({ scope, write: false }));
  expect(toolResults(c.fake.chatRequests[1]?.body)['x1']).toMatch(
    /^error: unknown tool 'memory_write'/,
  );
  expect(await store.list(scope)).toEqual([]);

  await store.write({
    scope,
    key: 'a',
    title: 'A',
    text: 'alpha',
    tags: [],
    provenance: { session: 's', run: 'r', step: 3, atMs: 1 },
  });
  const jsonl = await store.exportJsonl(scope);
  expect(jsonl.trim().split('\n')).toHaveLength(1);
  const other = `copy-${randomUUID().slice(0, 8)}`;
  expect(await store.importJsonl(other, jsonl)).toBe(1);
  expect(await store.read(other, 'a')).toMatchObject({
    scope: other,
    text: 'alpha',
    provenance: { session: 's', step: 3 },
  });
  await expect(store.importJsonl(other, '{"key":"b"}\n')).rejects.toThrow(/line 1/);
}, 60_000);
