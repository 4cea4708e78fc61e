import path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { JetStreamJournalStore, LlmClient, ModelRegistry, type NodeRecord } from '@troupe/agents';
import { Coordinator, DriverRegistry, type JobEventRecord } from '@troupe/coordinator';
import { NodeAgent } from '@troupe/node-agent';
import {
  FakeOpenAI,
  randomClusterName,
  startNatsServer,
  waitFor,
  type NatsServerHandle,
} from '@troupe/testkit';
import { createEvolveDriver, evolveJournalTaskId } from '../../src/evolve';

// LLM operators selected by the job spec's model (`agent.model`), through the agents' LlmClient
// and model registry, against FakeOpenAI (the only fake: a scripted model that answers with code
// blocks). Each call costs $0.01 (1000 prompt tokens at $10 per million); the search's
// maxCostUsd stops it and the final selection and test grading still happen. Real nats-server,
// coordinator, node agent and Docker sandboxes.

jest.setTimeout(600_000);

const SUITE = path.resolve(__dirname, 'evolve-fixtures/quick-suite');

let server: NatsServerHandle;
let nc: NatsConnection;
let fake: FakeOpenAI;
let coordinator: Coordinator;
let agent: NodeAgent;
let cluster: string;

const good = (x: number, y: number): string =>
  `Here you go:\n\n\`\`\`python\nX = ${x}\nY = ${y}\nprint(X, Y)\n\`\`\`\n`;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect(server.connectOptions);
  fake = await FakeOpenAI.start({ models: ['fake-coder'] });
  cluster = randomClusterName();
  const models = new ModelRegistry({
    models: {
      coder: {
        baseURL: fake.baseURL,
        model: 'fake-coder',
        inputUsdPer1M: 10,
        outputUsdPer1M: 0,
      },
    },
  });
  const client = new LlmClient({ registry: models, retry: { maxAttempts: 1 } });
  coordinator = await Coordinator.start(
    {
      cluster,
      nats: { servers: server.url },
      heartbeatMs: 250,
      missedHeartbeats: 4,
      sweepIntervalMs: 500,
      metrics: { port: null },
      shutdownGraceMs: 0,
    },
    { drivers: new DriverRegistry().register(createEvolveDriver({ llm: { client, models } })) },
  );
  agent = await NodeAgent.start({
    cluster,
    hostId: `agent-${cluster.slice(-6)}`,
    nats: { servers: server.url },
    shutdownGraceMs: 2_000,
  });
  await waitFor(
    () => coordinator.registry?.schedulable().some((h) => h.info.hostId === agent.hostId),
    { timeoutMs: 20_000, message: 'node agent registered' },
  );
});

afterAll(async () => {
  await agent?.stop().catch(() => undefined);
  await coordinator?.stop().catch(() => undefined);
  await fake?.close();
  await nc?.close().catch(() => undefined);
  await server?.stop();
});

test('a job naming a model runs LLM operators (draft, improve, debug) until the cost budget stops it, then selects and grades', async () => {
  let n = 0;
  fake.setHandler((req) => {
    n++;
    const prompt = JSON.stringify(req.body.messages);
    const usage = { prompt_tokens: 1000, completion_tokens: 50 };
    // A Debug prompt gets a repaired program; otherwise every fourth reply is a program that
    // crashes (buggy: a Debug chain follows) and every fifth has no code block at all.
    if (/debug|fix|repair/i.test(prompt) && /Traceback|error/i.test(prompt)) {
      return { content: good(0.3, 0.69), usage };
    }
    if (n % 5 === 0) return { content: 'I would rather not write code today.', usage };
    if (n % 4 === 0) {
      return { content: "```python\nraise SystemExit('boom')\n```", usage };
    }
    return { content: good(0.25 + 0.01 * (n % 7), 0.6 + 0.01 * (n % 11)), usage };
  });
  const jobs = coordinator.jobs!;
  const record = await jobs.submit({
    spec: {
      kind: 'evolve',
      concurrency: 1,
      taskTimeoutMs: 400_000,
      retries: { max: 0 },
      agent: { model: 'coder', maxTokens: 512 },
      config: { evaluatorSlots: 2 },
      tasks: [
        {
          id: 'q',
          suite: SUITE,
          limits: { maxEvaluations: 60, maxCostUsd: 0.075 },
          search: { seed: 2, debugMaxDepth: 2 },
        },
      ],
    },
  });
  const events: JobEventRecord[] = [];
  for await (const e of await jobs.watch(record.jobId, { signal: AbortSignal.timeout(500_000) })) {
    events.push(e);
  }
  expect(events.at(-1)?.type).toBe('JOB_FINISHED');
  const task = (await jobs.results(record.jobId)).tasks[0]!;
  const details = task.details as Record<string, unknown>;
  process.stderr.write(
    `llm job: ${JSON.stringify({ details, costUsd: task.costUsd, requests: fake.requests.length })}\n`,
  );
  expect(details['stopReason']).toBe('cost');
  expect(task.status).toBe('TASK_PASSED');
  expect(details['status']).toBe('succeeded');
  expect(typeof details['testScore']).toBe('number');

  const journal = new JetStreamJournalStore({ connection: nc, cluster });
  const { records } = await journal.read(evolveJournalTaskId(record.jobId, 'q'));
  const nodes = records.filter((r): r is NodeRecord => r.type === 'node');
  const llmNodes = nodes.filter((r) => r.operator !== 'seed');
  // Every operator call reached the model once (no retries configured), each cost $0.01.
  expect(fake.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(
    llmNodes.length,
  );
  expect(task.costUsd).toBeCloseTo(0.01 * llmNodes.length, 6);
  expect(task.costUsd).toBeGreaterThanOrEqual(0.075);
  // The stop came from the budget, long before the evaluation limit.
  expect(details['evaluations']).toBeLessThan(60);
  const ops = new Set(llmNodes.map((r) => r.operator));
  expect(ops.has('draft')).toBe(true);
  expect(ops.has('improve') || ops.has('crossover')).toBe(true);
  // The scripted replies' outcomes: code blocks became programs, the reply without code a
  // no_code node, the crashing program a buggy node followed by a Debug attempt.
  expect(llmNodes.some((r) => r.outcome === 'scored' && r.program.source.includes('X = 0.'))).toBe(
    true,
  );
  expect(llmNodes.some((r) => r.outcome === 'no_code')).toBe(true);
  const buggy = llmNodes.filter((r) => r.outcome === 'buggy');
  expect(buggy.length).toBeGreaterThan(0);
  const debug = llmNodes.filter((r) => r.operator === 'debug');
  expect(debug.length).toBeGreaterThan(0);
  for (const d of debug) expect(buggy.map((b) => b.attemptId)).toContain(d.parentIds[0]);
  expect(fake.unexpectedRequests).toEqual([]);
});
