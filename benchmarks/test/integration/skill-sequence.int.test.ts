import { connect, type NatsConnection } from '@nats-io/transport-node';
import { SkillLibrary } from '@troupe/agents';
import { DriverRegistry } from '@troupe/coordinator';
import { LlmClient, ModelRegistry } from '@troupe/llm';
import { FakeOpenAI } from '@troupe/testkit';
import { TestCluster } from '@troupe/test-cluster';
import { registerBuiltinDrivers } from '../../src';
import {
  REPO,
  runJob,
  sageScript,
  type ScenarioResult,
  type ScriptLog,
  SUITE,
  suiteTasks,
} from './skill-sequence-fixtures/sequence-harness';

// The skill-sequence driver end to end on the shipped appworld-mini suite: a real coordinator,
// a real node agent with Docker sandboxes (python-slim, no network) running the world's REPL, the
// library in the cluster's JetStream KV, and FakeOpenAI (the only fake) as the model. Gold
// passes every task, none fails every task; a scripted SAGE model writes functions in task 1
// that later tasks reuse after re-checking them in their own world, with fewer steps than the
// same model without the library.

jest.setTimeout(900_000);

/** The scenario the scripted model works, and the solution function it reuses. */
const SCENARIO = 'city_contacts';
const SKILL = 'contact_names_in';

let fake: FakeOpenAI;
let tc: TestCluster;
let nc: NatsConnection;

beforeAll(async () => {
  fake = await FakeOpenAI.start({ models: ['fake-sage'] });
  const models = new ModelRegistry({
    models: {
      sage: { baseURL: fake.baseURL, model: 'fake-sage', inputUsdPer1M: 1, outputUsdPer1M: 2 },
    },
  });
  const client = new LlmClient({ registry: models, retry: { maxAttempts: 1 } });
  tc = await TestCluster.start({
    docker: true,
    coordinator: {
      drivers: () =>
        registerBuiltinDrivers(new DriverRegistry(), {
          skillSequence: { baseDir: REPO, models: { client, models } },
        }),
    },
    nodeAgent: {},
  });
  nc = await connect({ servers: tc.server.url });
});

afterAll(async () => {
  await nc?.close().catch(() => undefined);
  await tc?.stop();
  await fake?.close();
});

const perTask = (r: ScenarioResult, arm: string) => r.details.arms[arm]!.perTask;

test('on the whole suite gold passes every task and none fails every one', async () => {
  const scenarios = suiteTasks()
    .filter((t) => t.id.endsWith('_1'))
    .map((t) => t.scenario);
  expect(scenarios.length).toBeGreaterThanOrEqual(8);
  const spec = (kind: 'gold' | 'none') => ({
    kind: 'skill-sequence',
    concurrency: 2,
    taskTimeoutMs: 600_000,
    config: { agent: { kind } },
    tasks: { suite: SUITE },
  });
  const gold = await runJob(tc.coordinator.jobs!, spec('gold'), 800_000);
  expect(gold.tasks.map((t) => [t.taskId, t.status, t.error]).sort()).toEqual(
    scenarios.map((s) => [s, 'TASK_PASSED', '']).sort(),
  );
  for (const t of gold.tasks) {
    const tasks = perTask(t, 'library');
    expect(tasks.map((x) => [x.taskId, x.passed, x.completed, x.steps])).toEqual(
      [1, 2, 3].map((n) => [`${t.taskId}_${n}`, true, true, 1]),
    );
    // The solutions define functions: admitted after task 1, then checked in each later world.
    // (The library is the job's, shared by its scenarios: the first task may find some too.)
    expect(tasks.flatMap((x) => x.skills.admitted).length).toBeGreaterThan(0);
    expect(tasks[1]!.skills.checked.length).toBeGreaterThan(0);
    expect(tasks[1]!.skills.dropped).toEqual([]);
  }

  const none = await runJob(tc.coordinator.jobs!, spec('none'), 800_000);
  expect(none.tasks.map((t) => [t.taskId, t.status, t.error]).sort()).toEqual(
    scenarios.map((s) => [s, 'TASK_FAILED', '']).sort(),
  );
  for (const t of none.tasks) {
    expect(perTask(t, 'library').map((x) => [x.passed, x.completed, x.steps])).toEqual([
      [false, false, 0],
      [false, false, 0],
      [false, false, 0],
    ]);
  }
});

test('a scripted SAGE model reuses task 1 functions: fewer steps with the library than without', async () => {
  const log: ScriptLog = { requests: [] };
  fake.setHandler(sageScript(log, SKILL));
  const libraryId = `sage-${tc.cluster.slice(-6)}`;
  const run = await runJob(
    tc.coordinator.jobs!,
    {
      kind: 'skill-sequence',
      taskTimeoutMs: 600_000,
      config: {
        agent: { kind: 'model', model: 'sage', maxSteps: 6 },
        library: { enabled: true, admission: 'passed', id: libraryId },
        ablation: true,
        scenarios: [SCENARIO],
      },
      tasks: { suite: SUITE },
    },
    800_000,
  );
  fake.setHandler(undefined);
  const [scenario] = run.tasks;
  expect([scenario?.status, scenario?.error]).toEqual(['TASK_PASSED', '']);
  const lib = perTask(scenario!, 'library');
  const base = perTask(scenario!, 'baseline');

  // Both arms pass every task; without the library each task takes the model's four steps,
  // with it tasks 2 and 3 call the checked skill at once.
  expect(base.map((t) => [t.passed, t.steps])).toEqual([
    [true, 4],
    [true, 4],
    [true, 4],
  ]);
  expect(lib.map((t) => [t.passed, t.steps])).toEqual([
    [true, 4],
    [true, 1],
    [true, 1],
  ]);
  const arms = scenario!.details.arms;
  expect(arms['library']!.steps).toBeLessThan(arms['baseline']!.steps);
  expect(arms['library']!.tokens).toBeLessThan(arms['baseline']!.tokens);
  // The fake's usage: 1,000 + 100 per earlier turn prompt tokens and 50 completion tokens a call.
  expect([arms['baseline']!.tokens, arms['library']!.tokens]).toEqual([14_400, 6_900]);

  // Task 1 admitted the solution's functions and the world-bound helper; the helper defined by
  // the failing action never entered.
  const admitted = lib[0]!.skills.admitted.map((s) => s.name);
  expect(admitted).toEqual(expect.arrayContaining([SKILL, 'marked_total']));
  expect(admitted).not.toContain('broken_helper');
  expect(lib[0]!.skills.rejected).toEqual(['broken_helper']);
  // Task 2 re-checked the skill in its fresh world, offered it and the model used it; the
  // helper that needs task 1's namespace failed the check and was dropped with the reason.
  expect(lib[1]!.skills.checked).toContainEqual({ name: SKILL, version: 1 });
  expect(lib[1]!.skills.used).toContain(SKILL);
  expect(lib[1]!.skills.dropped).toEqual([
    { name: 'marked_total', version: 1, reason: expect.stringContaining('WORLD_MARK') },
  ]);
  expect(lib[2]!.skills.retrieved.map((s) => s.name)).not.toContain('marked_total');
  // The baseline never saw a skill.
  for (const t of base) expect(t.skills.retrieved).toEqual([]);
  expect(log.requests.filter((r) => r.withSkills).map((r) => r.taskId)).toEqual([
    `${SCENARIO}_2`,
    `${SCENARIO}_3`,
  ]);

  // The library in KV: provenance of the reused skill, the drop recorded, no failing function.
  const library = await SkillLibrary.open(nc, { cluster: tc.cluster, libraryId });
  const records = await library.list();
  const skill = records.find((r) => r.name === SKILL)!;
  expect(skill).toMatchObject({
    version: 1,
    scenario: SCENARIO,
    provenance: { jobId: run.jobId, taskId: `${SCENARIO}_1`, step: 3, outcome: 'passed' },
  });
  expect(skill.dropped).toBeUndefined();
  expect(records.find((r) => r.name === 'marked_total')?.dropped).toMatchObject({
    reason: expect.stringContaining('WORLD_MARK'),
    by: { taskId: `${SCENARIO}_2` },
  });
  expect(records.map((r) => r.name)).not.toContain('broken_helper');
  // Tasks 2 and 3 redefine nothing new: one version per name.
  expect(records.filter((r) => r.name === SKILL)).toHaveLength(1);
});
