import path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ActorSystem } from '@troupe/actors';
import { createAgentActor, TrajectoryStore } from '@troupe/agents';
import { type JobEventRecord } from '@troupe/coordinator';
import { LlmClient, ModelRegistry } from '@troupe/llm';
import { errorCode } from '@troupe/proto';
import { BankStore } from '@troupe/rsi';
import { type ChatRequest, FakeOpenAI, type FakeCompletion } from '@troupe/testkit';
import { TestCluster } from '@troupe/test-cluster';
import { createRsiDriver, rsiBankId } from '../../src';

// The `rsi` driver end to end on the shipped rsi-shell-mini suite: a real coordinator, node
// agent (Docker sandboxes) and agent host; every role's model is the testkit's FakeOpenAI,
// scripted per role. Phase 2 develops the bank on both development tasks (each PASS teaches a
// lesson, each output bank the next input), Phase 3 runs the held-out tasks' Actors on the frozen
// bank and scores them with the suite's evaluators: the scripted Actor gets one right and one
// wrong, so the mean is 0.5 — computed from the machines, not from what the Actor claims.

jest.setTimeout(600_000);

const REPO = path.resolve(__dirname, '../../..');
const SUITE = 'benchmarks/suites/rsi-shell-mini';

let fake: FakeOpenAI;
let tc: TestCluster;
let nc: NatsConnection;
let host: ActorSystem;

beforeAll(async () => {
  fake = await FakeOpenAI.start();
  const model = () => ({
    baseURL: fake.baseURL,
    model: 'fake-model',
    inputUsdPer1M: 0,
    outputUsdPer1M: 0,
    maxTokens: 512,
  });
  const registry = new ModelRegistry({
    models: { actor: model(), verifier: model(), curriculum: model() },
  });
  tc = await TestCluster.start({
    coordinator: { drivers: [createRsiDriver({ models: registry, baseDir: REPO })] },
    nodeAgent: { slots: { sandbox: 4, evaluator: 0 } },
  });
  nc = await connect({ servers: tc.server.url });
  const trajectories = new TrajectoryStore({ connection: nc, cluster: tc.cluster });
  host = await ActorSystem.start({
    cluster: tc.cluster,
    connection: nc,
    hostId: `agents-${tc.cluster.slice(-6)}`,
    hosting: [
      createAgentActor({
        llm: new LlmClient({ registry, retry: { maxAttempts: 1 } }),
        trajectories,
      }),
    ],
    placement: 'none',
  });
  await tc.waitForHost(host.hostId);
}, 180_000);

afterAll(async () => {
  await host?.shutdown({ graceMs: 1_000 }).catch(() => undefined);
  await nc?.close().catch(() => undefined);
  await tc?.stop();
  await fake?.close();
});

type Msg = { role: string; content?: unknown };

/** The role (from the system message), the run's task text and the tool results since. */
function read(req: ChatRequest) {
  const messages = req.body.messages as Msg[];
  const system = String(messages[0]?.content);
  const role = system.startsWith('You are the Actor')
    ? 'actor'
    : system.startsWith('You are the Verifier')
      ? 'verifier'
      : 'curriculum';
  let last = 0;
  messages.forEach((m, i) => {
    if (m.role === 'user') last = i;
  });
  return {
    role,
    task: String(messages[last]?.content),
    results: messages.slice(last + 1).filter((m) => m.role === 'tool').length,
  };
}

const call = (name: string, args: Record<string, unknown>): FakeCompletion => ({
  toolCalls: [{ name, arguments: args }],
});
const sh = (command: string) => call('run_terminal_command', { command });
const finish = (summary: string) => call('finish_task', { summary });

/** What the scripted Actor runs for each task (farewell is deliberately wrong). */
const WORK: [string, string, string][] = [
  ['greeting.txt', 'greeting', "printf 'hello\\n' > greeting.txt"],
  ['count.txt', 'count-lines', 'wc -l < data.txt > count.txt'],
  ['farewell.txt', 'farewell', "printf 'goodbye\\n' > farewell.txt"],
  ['wc.txt', 'count-words', 'wc -w < words.txt > wc.txt'],
];

function script(req: ChatRequest): FakeCompletion {
  const { role, task, results } = read(req);
  const work = WORK.find(([file]) => task.includes(file));
  if (role === 'verifier') {
    return results === 0 ? sh(`cat ${work?.[0] ?? '.'}`) : finish('HANDOFF\nthe file is there');
  }
  if (role === 'actor' && task.includes('Propose what it should keep')) {
    // The lesson run continues the Actor's session: the task is earlier in its conversation.
    const conversation = JSON.stringify(req.body.messages);
    const name = WORK.find(([file]) => conversation.includes(file))?.[1] ?? 'general';
    return results === 0
      ? sh(
          `mkdir -p /proposal/lessons && printf 'write files with printf\\n' > /proposal/lessons/${name}.md`,
        )
      : finish('proposed one lesson');
  }
  if (role === 'actor') {
    if (!work) throw new Error(`no scripted work for: ${task.slice(0, 200)}`);
    return results === 0 ? sh(work[2]) : finish('DONE\nwrote the file');
  }
  throw new Error(`the Curriculum is not scripted: ${task.slice(0, 200)}`);
}

test('a study develops the bank on the dev tasks and measures it on the held-out ones', async () => {
  fake.setHandler(script);
  const jobs = tc.coordinator.jobs!;
  const record = await jobs.submit({
    spec: {
      kind: 'rsi',
      taskTimeoutMs: 500_000,
      config: { models: { actor: 'actor', verifier: 'verifier', curriculum: 'curriculum' } },
      tasks: { suite: SUITE },
    },
  });
  const events: JobEventRecord[] = [];
  for await (const e of await jobs.watch(record.jobId, { signal: AbortSignal.timeout(550_000) })) {
    events.push(e);
  }
  expect(events.at(-1)?.type).toBe('JOB_FINISHED');
  const results = await jobs.results(record.jobId);
  const study = results.tasks.find((t) => t.taskId === 'study')!;
  expect([study.status, study.error]).toEqual(['TASK_PASSED', '']);
  expect(study.score).toBe(0.5);
  const details = study.details as {
    bankId: string;
    seedTreeHash: string;
    frozenTreeHash: string;
    phase2: { task: string; status: string; verdict: string; bankIn: string; bankOut: string }[];
    scored: number;
    unscored: number;
    links: Record<string, string>;
  };
  expect(details.bankId).toBe(rsiBankId(record.jobId));
  expect(details.phase2.map((t) => [t.task, t.status, t.verdict])).toEqual([
    ['greeting', 'passed', 'PASS'],
    ['count-lines', 'passed', 'PASS'],
  ]);
  // The lineage: seed → greeting's output → count-lines' output = the frozen bank.
  expect(details.phase2[0]?.bankIn).toBe(details.seedTreeHash);
  expect(details.phase2[1]?.bankIn).toBe(details.phase2[0]?.bankOut);
  expect(details.phase2[1]?.bankOut).toBe(details.frozenTreeHash);
  expect(
    new Set([details.seedTreeHash, details.phase2[0]?.bankOut, details.frozenTreeHash]).size,
  ).toBe(3);
  expect([details.scored, details.unscored]).toEqual([2, 0]);
  expect(Object.keys(details.links).sort()).toEqual(['phase1', 'phase2', 'phase3', 'report']);

  // The frozen bank holds the seed and both lessons, and verifies.
  const banks = await BankStore.open(nc, { cluster: tc.cluster });
  const frozen = await banks.load(details.bankId, 'head', {
    expectTreeHash: details.frozenTreeHash,
  });
  expect(frozen.bank.paths).toEqual(['README.md', 'lessons/count-lines.md', 'lessons/greeting.md']);

  const requests = fake.chatRequests.map((r) => ({ ...read(r), body: JSON.stringify(r.body) }));
  // Phase 3's Actors saw the frozen bank's inventory, and no held-out task was learned from.
  const heldOut = requests.filter((r) => r.role === 'actor' && r.task.includes('wc.txt'));
  expect(heldOut.length).toBeGreaterThan(0);
  for (const r of heldOut) expect(r.task).toContain('lessons/greeting.md');
  expect(
    requests.some(
      (r) => r.task.includes('Propose what it should keep') && r.task.includes('wc.txt'),
    ),
  ).toBe(false);
  // No role ever saw an evaluator.
  for (const r of requests) expect(r.body).not.toContain('tr -d');
});

test('a study naming a model the cluster does not have is refused, naming the field', async () => {
  const err = await tc.coordinator
    .jobs!.submit({
      spec: {
        kind: 'rsi',
        config: { models: { actor: 'actor', verifier: 'gpt-nope', curriculum: 'curriculum' } },
        tasks: { suite: SUITE },
      },
    })
    .catch((e: unknown) => e);
  expect(errorCode(err)).toBe('INVALID_ARGUMENT');
  expect(String(err)).toContain('spec.config.models.verifier');
});
