import { readFileSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { applyFilePatch, parsePatch } from '@troupe/benchmarks';
import { type RolloutResponse__Output, type TroupeError } from '@troupe/proto';
import {
  ensureDocker,
  FakeOpenAI,
  type FakeTokenLogprob,
  type ScriptedResponse,
} from '@troupe/testkit';
import { PassThrough } from 'node:stream';
import { EmbeddedCluster } from '../../src/cli/embedded-cluster';
import { runCli } from '../../src/cli/run-cli';
import { TroupeClient } from '../../src/troupe-client';

// RL rollouts end to end on the embedded cluster (nats-server, coordinator, Docker node agent,
// agent host): 20 episodes through the gRPC `Rollout` method from 10 parallel client calls (two
// samples each) against a policy server (FakeOpenAI). The scripted policy solves a task with the
// reference fix when the call's seed is even and gives up when it is odd, so every episode's
// grade is known in advance; each reward must equal it and the grader's score in the job's
// results. Every reply carries logprobs, which must come back per token in the trajectory. The
// cluster's own model (with a key) must never be called and its key never reach the policy.

jest.setTimeout(600_000);

const ROOT = path.resolve(__dirname, '../../..');
const SUITE = path.join(ROOT, 'benchmarks/suites/bugfix-mini');
const TASKS = ['py-lru-cache', 'js-slugify', 'sh-log-rotate', 'py-version-compare', 'js-paginate'];
const SEEDS = [0, 1];
const SAMPLES = 2;
/**
 * Rewards of the unfixed repositories (the `none` outcome): 0, except where the hidden grader
 * reports a partial score — sh-log-rotate's grader passes 4 of its 8 hidden tests on the
 * unchanged script. Passing episodes (the reference fix, the `gold` outcome) get 1.
 */
const NONE_REWARD: Record<string, number> = { 'sh-log-rotate': 0.5 };
const CLUSTER_KEY = 'sk-cluster-key-must-stay-home-91b3';

let policy: FakeOpenAI;
let clusterModel: FakeOpenAI;
let cluster: EmbeddedCluster;
let dir: string;

/** The whole fixed files of a task's reference patch, as the scripted policy writes them. */
function fixedFiles(taskId: string): { path: string; content: string }[] {
  const patches = parsePatch(readFileSync(path.join(SUITE, taskId, 'solution.patch'), 'utf8'));
  return patches.map((p) => {
    const rel = p.newPath ?? p.oldPath ?? '';
    const old = p.oldPath ? readFileSync(path.join(SUITE, taskId, 'repo', p.oldPath), 'utf8') : '';
    return { path: rel, content: applyFilePatch(old, p) };
  });
}

const FIRST_LINES = new Map(
  TASKS.map((id) => {
    const yaml = readFileSync(path.join(SUITE, id, 'task.yaml'), 'utf8');
    return [id, /instruction: \|\n\s+(.+)/.exec(yaml)?.[1]?.trim() ?? ''] as const;
  }),
);

function taskOf(firstUser: string): string {
  for (const [id, line] of FIRST_LINES) if (line && firstUser.includes(line)) return id;
  throw new Error(`no task matches the request: ${firstUser.slice(0, 200)}`);
}

/** The logprobs the policy sends with reply `step` of a task: a function of both, to check. */
function logprobsOf(task: string, step: number): FakeTokenLogprob[] {
  return [
    {
      token: `step${step}`,
      logprob: -0.125 * (step + 1),
      topLogprobs: [{ token: 'alt', logprob: -3 }],
    },
    { token: ` ${task}`, logprob: -0.5 },
  ];
}

function reply(body: { messages: unknown[]; seed?: number | null }): ScriptedResponse {
  const messages = body.messages as { role: string; content?: string | null }[];
  const task = taskOf(messages.find((m) => m.role === 'user')?.content ?? '');
  const step = messages.filter((m) => m.role === 'assistant').length;
  const base = {
    content: `step${step} ${task}`,
    logprobs: logprobsOf(task, step),
    usage: { prompt_tokens: 500, completion_tokens: 50 },
  };
  const solves = (body.seed ?? 1) % 2 === 0;
  const files = solves ? fixedFiles(task) : [];
  if (step < files.length) {
    return { ...base, toolCalls: [{ name: 'write_file', arguments: files[step]! }] };
  }
  return {
    ...base,
    toolCalls: [{ name: 'finish_task', arguments: { summary: solves ? 'fixed' : 'gave up' } }],
  };
}

beforeAll(async () => {
  await ensureDocker();
  policy = await FakeOpenAI.start();
  policy.setHandler((req) => reply(req.body));
  clusterModel = await FakeOpenAI.start({ apiKey: CLUSTER_KEY });
  dir = mkdtempSync(path.join(tmpdir(), 'troupe-rollouts-'));
  const modelsFile = path.join(dir, 'models.yaml');
  writeFileSync(
    modelsFile,
    [
      'models:',
      '  cluster-model:',
      `    baseURL: ${clusterModel.baseURL}`,
      '    apiKeyEnv: CLUSTER_LLM_KEY',
      '    model: cluster-model',
      '    inputUsdPer1M: 1',
      '    outputUsdPer1M: 10',
      '',
    ].join('\n'),
  );
  cluster = await EmbeddedCluster.start({
    dataDir: path.join(dir, 'data'),
    cluster: `rollouts-${process.pid.toString(36)}`,
    grpcPort: 0,
    advertise: false,
    modelsFile,
    env: { CLUSTER_LLM_KEY: CLUSTER_KEY },
  });
});

afterAll(async () => {
  await cluster?.stop();
  await policy?.close();
  await clusterModel?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('20 rollouts through the gRPC method: rewards equal the grader, token logprobs kept', async () => {
  const client = new TroupeClient({ address: cluster.address, token: cluster.token });
  try {
    const started = Date.now();
    const calls = TASKS.flatMap((task) =>
      SEEDS.map(async (seed) => ({
        task,
        seed,
        res: await client.rollout(
          {
            endpoint: { baseUrl: policy.baseURL, model: 'org/policy-v7' },
            suite: SUITE,
            taskIds: [task],
            samplesPerTask: SAMPLES,
            sampling: {
              temperature: 1,
              topP: 0.95,
              seed,
              logprobs: true,
              topLogprobs: 1,
              maxTokens: 1024,
            },
            maxSteps: 8,
            concurrency: SAMPLES,
            labels: { policy: 'v7' },
          },
          { timeoutMs: 400_000 },
        ),
      })),
    );
    const done = await Promise.all(calls);
    const wallMs = Date.now() - started;
    // eslint-disable-next-line no-console
    console.log(`20 rollouts in ${wallMs} ms`);

    let episodes = 0;
    for (const { task, seed, res } of done) {
      expect(res.state).toBe('SUCCEEDED');
      expect(res.rollouts).toHaveLength(SAMPLES);
      const solved = seed % 2 === 0;
      const expected = solved ? 1 : (NONE_REWARD[task] ?? 0);
      // The grader's own verdicts, from the job's results.
      const results = await client.getResults(res.jobId);
      for (const r of res.rollouts) {
        episodes++;
        expect(r.taskId).toBe(task);
        expect(r.rolloutId).toBe(`${task}.s${r.sampleIndex}`);
        expect(r.status).toBe(solved ? 'TASK_PASSED' : 'TASK_FAILED');
        expect(r.reward).toBe(expected);
        expect(r.passed).toBe(solved);
        const graded = results.tasks.find((t) => t.taskId === r.rolloutId)!;
        expect(graded.score).toBe(r.reward);
        expect(JSON.parse(graded.detailsJson).grade).toBe(solved ? 'passed' : 'failed');
        expect(r.stopReason).toBe('finished');
        // Usage: the scripted 500 + 50 tokens per model call.
        const steps = solved ? fixedFiles(task).length + 1 : 1;
        expect(r.usage).toEqual({
          promptTokens: 500 * steps,
          completionTokens: 50 * steps,
          steps,
        });
        // The trajectory: OpenAI messages, and logprobs per assistant message.
        const trajectory = JSON.parse(r.trajectoryJson) as {
          messages: { role: string; content: string | null }[];
          logprobs: { messageIndex: number; tokens: { token: string; logprob: number }[] }[];
        };
        const assistants = trajectory.messages.flatMap((m, i) =>
          m.role === 'assistant' ? [i] : [],
        );
        expect(assistants).toHaveLength(steps);
        expect(trajectory.logprobs.map((l) => l.messageIndex)).toEqual(assistants);
        trajectory.logprobs.forEach((l, step) => {
          expect(trajectory.messages[l.messageIndex]!.content).toBe(`step${step} ${task}`);
          expect(l.tokens).toEqual(
            logprobsOf(task, step).map((t) => ({
              token: t.token,
              logprob: t.logprob,
              bytes: [...Buffer.from(t.token)],
              topLogprobs: t.topLogprobs ?? [],
            })),
          );
        });
      }
      // The same rollouts are readable later by job id.
      const again: RolloutResponse__Output = await client.getRollouts(res.jobId);
      expect(again.rollouts.map((r) => [r.rolloutId, r.reward])).toEqual(
        res.rollouts.map((r) => [r.rolloutId, r.reward]),
      );
    }
    expect(episodes).toBe(20);

    // Every policy request carried the call's sampling settings and never the cluster's key.
    expect(policy.unexpectedRequests).toHaveLength(0);
    expect(policy.chatRequests.length).toBeGreaterThanOrEqual(20);
    for (const req of policy.chatRequests) {
      expect(req.body).toMatchObject({
        model: 'org/policy-v7',
        temperature: 1,
        top_p: 0.95,
        logprobs: true,
        top_logprobs: 1,
        max_tokens: 1024,
      });
      expect(JSON.stringify(req.headers)).not.toContain(CLUSTER_KEY);
    }
    expect(clusterModel.requests).toHaveLength(0);
  } finally {
    client.close();
  }
});

test('a bad request is refused naming the field, and nothing runs', async () => {
  const client = new TroupeClient({ address: cluster.address, token: cluster.token });
  try {
    const before = policy.requests.length;
    const err = await client
      .rollout(
        {
          endpoint: { baseUrl: 'file:///etc/passwd', model: 'm' },
          suite: SUITE,
          taskIds: ['py-lru-cache'],
        },
        { timeoutMs: 30_000 },
      )
      .then(
        () => undefined,
        (e: unknown) => e as TroupeError,
      );
    expect(err?.code).toBe('INVALID_ARGUMENT');
    expect(err?.message).toContain('request.endpoint.baseURL');
    const hot = await client
      .rollout(
        {
          endpoint: { baseUrl: policy.baseURL, model: 'm' },
          suite: SUITE,
          sampling: { temperature: 3 },
        },
        { timeoutMs: 30_000 },
      )
      .then(
        () => undefined,
        (e: unknown) => e as TroupeError,
      );
    expect(hot?.code).toBe('INVALID_ARGUMENT');
    expect(hot?.message).toContain('request.sampling.temperature');
    expect(policy.requests.length).toBe(before);
  } finally {
    client.close();
  }
});

test('troupe rollout runs an episode and prints its reward and trajectory as JSON', async () => {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await runCli(
    [
      '--address',
      cluster.address,
      '--token',
      cluster.token,
      'rollout',
      '--endpoint',
      policy.baseURL,
      '--model',
      'org/policy-v7',
      '--suite',
      SUITE,
      '--task',
      'js-slugify',
      '--seed',
      '0',
      '--logprobs',
      '--max-steps',
      '8',
      '--timeout-ms',
      '300000',
    ],
    { stdout, stderr, env: {}, cwd: dir, onInterrupt: () => () => undefined },
  );
  expect({ code, err }).toEqual({ code: 0, err: '' });
  const res = JSON.parse(out) as RolloutResponse__Output;
  expect(res.rollouts.map((r) => [r.rolloutId, r.reward, r.status])).toEqual([
    ['js-slugify.s0', 1, 'TASK_PASSED'],
  ]);
  expect(JSON.parse(res.rollouts[0]!.trajectoryJson).logprobs.length).toBeGreaterThan(0);
});
