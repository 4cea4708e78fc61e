import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { connect } from '@nats-io/transport-node';
import { SkillStore } from '@troupe/agents';
import { applyFilePatch, parsePatch } from '@troupe/benchmarks';
import { ensureDocker, FakeOpenAI, type ScriptedResponse } from '@troupe/testkit';
import { EmbeddedCluster } from '../../src/cli/embedded-cluster';
import { TroupeClient } from '../../src/troupe-client';

// Model agents end to end on the embedded cluster (what `troupe run --models` starts): nats-server,
// coordinator, node agent (Docker) and the agent host, with FakeOpenAI as the provider. The scripted
// model solves two bugfix-mini tasks and gives up on a third; on every task it first tries to read
// the hidden grader, which must fail.

jest.setTimeout(600_000);

const ROOT = path.resolve(__dirname, '../../..');
const SUITE = path.join(ROOT, 'benchmarks/suites/bugfix-mini');
const KEY = 'sk-fake-model-agents-test';
const SOLVED = ['py-lru-cache', 'js-slugify'];
const GIVES_UP = 'sh-log-rotate';

let fake: FakeOpenAI;
let cluster: EmbeddedCluster;
let dir: string;

/** The whole fixed files of a task's reference patch, as the scripted model writes them. */
function fixedFiles(taskId: string): { path: string; content: string }[] {
  const patches = parsePatch(readFileSync(path.join(SUITE, taskId, 'solution.patch'), 'utf8'));
  return patches.map((p) => {
    const rel = p.newPath ?? p.oldPath ?? '';
    const old = p.oldPath ? readFileSync(path.join(SUITE, taskId, 'repo', p.oldPath), 'utf8') : '';
    return { path: rel, content: applyFilePatch(old, p) };
  });
}

function taskOf(firstUser: string): string {
  const yaml = (id: string) => readFileSync(path.join(SUITE, id, 'task.yaml'), 'utf8');
  for (const id of [...SOLVED, GIVES_UP]) {
    const firstLine = /instruction: \|\n\s+(.+)/.exec(yaml(id))?.[1]?.trim() ?? '';
    if (firstLine && firstUser.includes(firstLine)) return id;
  }
  throw new Error(`no task matches the request: ${firstUser.slice(0, 200)}`);
}

/** What the tool results the model got said, by task (the grader probe's answer first). */
const seen = new Map<string, string[]>();

function reply(body: { messages: unknown[] }): ScriptedResponse {
  const messages = body.messages as { role: string; content?: string | null }[];
  const firstUser = messages.find((m) => m.role === 'user');
  const task = taskOf(firstUser?.content ?? '');
  const tools = messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
  seen.set(task, tools);
  const step = messages.filter((m) => m.role === 'assistant').length;
  const usage = { prompt_tokens: 1_000, completion_tokens: 100 };
  if (step === 0) {
    return {
      toolCalls: [
        { name: 'run_terminal_command', arguments: { command: 'cat /grader/run-tests.sh' } },
      ],
      usage,
    };
  }
  if (task === GIVES_UP) {
    return {
      toolCalls: [{ name: 'finish_task', arguments: { summary: 'could not fix it' } }],
      usage,
    };
  }
  const files = fixedFiles(task);
  if (step <= files.length) {
    const f = files[step - 1]!;
    return { toolCalls: [{ name: 'write_file', arguments: f }], usage };
  }
  return { toolCalls: [{ name: 'finish_task', arguments: { summary: 'fixed' } }], usage };
}

beforeAll(async () => {
  await ensureDocker();
  fake = new FakeOpenAI({ apiKey: KEY });
  await fake.start();
  fake.setHandler((req) => reply(req.body));
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-model-agents-'));
  const modelsFile = path.join(dir, 'models.yaml');
  writeFileSync(
    modelsFile,
    [
      'models:',
      '  fake:',
      `    baseURL: ${fake.baseURL}`,
      '    apiKeyEnv: FAKE_LLM_KEY',
      '    model: fake-model',
      '    inputUsdPer1M: 1',
      '    outputUsdPer1M: 10',
      '    maxTokens: 1000',
      '',
    ].join('\n'),
  );
  // A skills directory (`--skills`): pushed to the cluster's skill store when the host starts.
  mkdirSync(path.join(dir, 'skills', 'bisect'), { recursive: true });
  writeFileSync(
    path.join(dir, 'skills', 'bisect', 'SKILL.md'),
    '---\nname: bisect\ndescription: Find a bad commit.\n---\nRun git bisect.\n',
  );
  cluster = await EmbeddedCluster.start({
    dataDir: path.join(dir, 'data'),
    cluster: `models-${process.pid.toString(36)}`,
    grpcPort: 0,
    advertise: false,
    modelsFile,
    skillsDir: path.join(dir, 'skills'),
    env: { FAKE_LLM_KEY: KEY },
  });
});

afterAll(async () => {
  await cluster?.stop();
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('a scripted model solves two tasks and gives up on one; it cannot read the grader', async () => {
  const client = new TroupeClient({ address: cluster.address, token: cluster.token });
  const spec = {
    name: 'model-agents',
    kind: 'issue-resolution',
    concurrency: 2,
    budget: { usd: 5 },
    agent: { model: 'fake', maxSteps: 10 },
    config: { agent: { kind: 'model' } },
    tasks: { suite: SUITE, include: [...SOLVED, GIVES_UP] },
  };
  const job = await client.submitJob(JSON.stringify(spec), { format: 'json' });
  const signal = AbortSignal.timeout(480_000);
  let last = '';
  for await (const e of client.watch(job.jobId, { signal })) last = String(e.type);
  expect(last).toBe('JOB_FINISHED');

  const results = await client.getResults(job.jobId);
  const status = Object.fromEntries(results.tasks.map((t) => [t.taskId, t.status]));
  expect(status).toEqual({
    'py-lru-cache': 'TASK_PASSED',
    'js-slugify': 'TASK_PASSED',
    'sh-log-rotate': 'TASK_FAILED',
  });
  for (const t of results.tasks) {
    expect(t.stopReason).toBe('finished');
    // Every step cost 1000 × $1/M + 100 × $10/M = $0.002, charged to the job.
    expect(t.costUsd).toBeGreaterThan(0);
    expect(t.artifacts.some((a) => a.endsWith('trajectory.jsonl'))).toBe(true);
  }
  expect(results.aggregate?.costUsd).toBeGreaterThan(0);
  // The grader probe: the model's first tool result says the file is not there.
  for (const id of [...SOLVED, GIVES_UP]) {
    expect(seen.get(id)?.[0]).toMatch(/No such file|exit code [1-9]/i);
    expect(seen.get(id)?.[0]).not.toContain('Hidden grader');
  }
  // The model's requests carried the key from the environment; none of them carried a grader.
  expect(fake.unexpectedRequests).toHaveLength(0);
});

test('--skills pushes the skill folders to the cluster skill store at start', async () => {
  const nc = await connect({ servers: cluster.natsUrl });
  try {
    const store = await SkillStore.open(nc, { cluster: cluster.options.cluster! });
    expect(await store.list()).toEqual([{ name: 'bisect', description: 'Find a bad commit.' }]);
    expect((await store.get('bisect'))?.instructions).toBe('Run git bisect.');
  } finally {
    await nc.close();
  }
});
