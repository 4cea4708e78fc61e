import { randomUUID } from 'node:crypto';
import { type FakeCompletion } from '@troupe/testkit';
import { runAgentSession } from '../../src/agent/agent-session';
import { SkillStore } from '../../src/skills/skill-store';
import { type AgentCluster, startAgentCluster, toolResults } from './agent-cluster';

// Skills end to end (issue 21): skills pushed to the cluster's skill store, an agent host process
// reading them; the system prompt lists the template's skills, `load_skill` loads one on demand,
// and a subagent gets only the skills its parent grants.

let c: AgentCluster;
let store: SkillStore;
beforeAll(async () => {
  c = await startAgentCluster({ docker: false });
  await c.startHost('h1');
  store = await SkillStore.open(c.nc, { cluster: c.cluster });
  await store.put({
    name: 'bisect',
    description: 'Find the commit that broke a test with git bisect.',
    instructions: 'BISECT-STEPS: git bisect start; git bisect run <test>.',
    files: { 'scripts/run.sh': 'git bisect run make test\n' },
  });
  await store.put({
    name: 'release',
    description: 'Cut a release.',
    instructions: 'RELEASE-STEPS: tag, build, publish.',
    files: {},
  });
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

test('the prompt lists the skills; load_skill loads instructions and files on demand', async () => {
  c.fake.enqueue(
    call('c1', 'load_skill', { name: 'bisect' }),
    call('c2', 'load_skill', { name: 'bisect', file: 'scripts/run.sh' }),
    call('c3', 'load_skill', { name: 'release' }),
    call('c4', 'finish_task', { summary: 'read it' }),
  );
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId: `sk-${randomUUID().slice(0, 8)}`,
    template: { name: 'fixer', instruction: 'You fix bugs.', model: 'fake', skills: ['bisect'] },
    task: 'Find the bad commit.',
    signal: AbortSignal.timeout(60_000),
  });
  expect(result).toMatchObject({ stopReason: 'FINISHED', steps: 4 });
  const requests = c.fake.chatRequests;
  const system = JSON.stringify(requests[0]?.body.messages[0]);
  expect(system).toContain('- bisect: Find the commit that broke a test with git bisect.');
  // Descriptions only: the body is loaded on demand.
  expect(system).not.toContain('BISECT-STEPS');
  expect(system).not.toContain('release');
  const offered = (requests[0]?.body.tools ?? []).map((t) =>
    t.type === 'function' ? t.function.name : '',
  );
  expect(offered.sort()).toEqual(['finish_task', 'load_skill']);
  expect(toolResults(requests[1]?.body)['c1']).toContain('BISECT-STEPS');
  expect(toolResults(requests[1]?.body)['c1']).toContain('- scripts/run.sh');
  expect(toolResults(requests[2]?.body)['c2']).toBe('git bisect run make test\n');
  expect(toolResults(requests[3]?.body)['c3']).toBe(
    "error: `arguments.name`: 'release' is not one of your skills (bisect)",
  );
  c.fake.assertScriptConsumed();
}, 60_000);

test('a subagent gets only the skills its parent grants; others are refused', async () => {
  c.fake.setHandler((req) => {
    const system = JSON.stringify(req.body.messages[0]);
    const results = req.body.messages.filter((m) => m.role === 'tool').length;
    if (system.includes('You are the helper')) {
      return results === 0
        ? call('h1', 'load_skill', { name: 'bisect' })
        : call('h2', 'finish_task', { summary: 'helper done' });
    }
    const script: FakeCompletion[] = [
      call('p1', 'create_subagent', { name: 'greedy', instruction: 'x', skills: ['release'] }),
      call('p2', 'create_subagent', {
        name: 'helper',
        instruction: 'You are the helper.',
        skills: ['bisect'],
      }),
      call('p3', 'call_subagent', { target: 'helper', request: 'bisect it' }),
      call('p4', 'finish_task', { summary: 'parent done' }),
    ];
    return script[results];
  });
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId: `skp-${randomUUID().slice(0, 8)}`,
    template: {
      name: 'lead',
      instruction: 'You lead.',
      model: 'fake',
      tools: ['create_subagent', 'call_subagent'],
      skills: ['bisect'],
    },
    task: 'Delegate.',
    signal: AbortSignal.timeout(60_000),
  });
  expect(result).toMatchObject({ stopReason: 'FINISHED', finalText: 'parent done' });
  const requests = c.fake.chatRequests;
  const parentResults = Object.assign(
    {},
    ...requests
      .filter((r) => !JSON.stringify(r.body.messages[0]).includes('helper.'))
      .map((r) => toolResults(r.body)),
  ) as Record<string, string>;
  expect(parentResults['p1']).toBe(
    'error: PERMISSION_DENIED: `arguments.skills`: a subagent may only get skills you have; you lack release',
  );
  expect(parentResults['p2']).toContain('skills [bisect]');
  expect(parentResults['p3']).toContain('helper done');
  const helper = requests.filter((r) =>
    JSON.stringify(r.body.messages[0]).includes('You are the helper'),
  );
  expect(helper.length).toBe(2);
  expect(JSON.stringify(helper[0]?.body.messages[0])).toContain('- bisect: Find the commit');
  expect(toolResults(helper[1]?.body)['h1']).toContain('BISECT-STEPS');
}, 60_000);

test('a template naming a skill the store lacks is refused, naming the field', async () => {
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId: `skm-${randomUUID().slice(0, 8)}`,
    template: { name: 'fixer', instruction: 'x', model: 'fake', skills: ['bisect', 'nope'] },
    task: 'Go.',
    signal: AbortSignal.timeout(60_000),
  });
  expect(result.stopReason).toBe('REJECTED');
  expect(result.error).toBe(
    "NOT_FOUND: `run.template.skills[1]`: no skill 'nope' in the cluster's skill store",
  );
  expect(c.fake.chatRequests).toHaveLength(0);
}, 60_000);
