import path from 'node:path';
import { JetStreamJournalStore, type NodeRecord } from '@troupe/evolve';
import { LlmClient, ModelRegistry } from '@troupe/llm';
import { BudgetLedger, type JobEventRecord } from '@troupe/coordinator';
import { FakeOpenAI } from '@troupe/testkit';
import { createEvolveDriver, evolveJournalTaskId, searchBudgetScope } from '../../src/evolve';
import { TestCluster } from '@troupe/test-cluster';

// LLM operators selected by the job spec's model (`agent.model`), through the agents' LlmClient
// and model registry, against FakeOpenAI (the only fake: a scripted model that answers with code
// blocks). Each call costs $0.01 (1000 prompt tokens at $10 per million); the search's
// maxCostUsd stops it and the final selection and test grading still happen. The island actors
// (on the coordinator) make the calls; each reserves its worst case in the search's own ledger
// scope first, so a round of concurrent calls cannot overshoot maxCostUsd when the worst case is
// the real cost (the second test). Real nats-server, coordinator, node agent and Docker sandboxes.

jest.setTimeout(600_000);

const SUITE = path.resolve(__dirname, 'evolve-fixtures/quick-suite');

let fake: FakeOpenAI;
let tc: TestCluster;

const good = (x: number, y: number): string =>
  `Here you go:\n\n\`\`\`python\nX = ${x}\nY = ${y}\nprint(X, Y)\n\`\`\`\n`;

beforeAll(async () => {
  fake = await FakeOpenAI.start({ models: ['fake-coder'] });
  const models = new ModelRegistry({
    models: {
      coder: {
        baseURL: fake.baseURL,
        model: 'fake-coder',
        inputUsdPer1M: 10,
        outputUsdPer1M: 0,
      },
      // Prices whose worst case (max_tokens × output price) is exactly what a call costs when
      // the reply uses all of max_tokens: $10 per million completion tokens.
      exact: {
        baseURL: fake.baseURL,
        model: 'fake-coder',
        inputUsdPer1M: 0,
        outputUsdPer1M: 10,
      },
    },
  });
  const client = new LlmClient({ registry: models, retry: { maxAttempts: 1 } });
  tc = await TestCluster.start({
    coordinator: { drivers: [createEvolveDriver({ llm: { client, models } })] },
    nodeAgent: {},
  });
});

afterAll(async () => {
  await tc?.stop();
  await fake?.close();
});

test('a job naming a model runs LLM operators (draft, improve, debug) until the cost budget stops it, then selects and grades', async () => {
  let n = 0;
  fake.setHandler((req) => {
    n++;
    const prompt = JSON.stringify(req.body.messages);
    const usage = { prompt_tokens: 1000, completion_tokens: 50 };
    // A Debug prompt gets a repaired program; otherwise (counting those replies only: the
    // hard cost cap leaves room for few calls) every fourth reply is a program that crashes
    // (buggy: a Debug chain follows) and the third and every fifth have no code block at all.
    if (/debug|fix|repair/i.test(prompt) && /Traceback|error/i.test(prompt)) {
      n--;
      return { content: good(0.3, 0.69), usage };
    }
    if (n === 3 || n % 5 === 0) {
      return { content: 'I would rather not write code today.', usage };
    }
    if (n % 4 === 0) {
      return { content: "```python\nraise SystemExit('boom')\n```", usage };
    }
    return { content: good(0.25 + 0.01 * (n % 7), 0.6 + 0.01 * (n % 11)), usage };
  });
  const jobs = tc.coordinator.jobs!;
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

  const journal = new JetStreamJournalStore({ connection: tc.nc, cluster: tc.cluster });
  const { records } = await journal.read(evolveJournalTaskId(record.jobId, 'q'));
  const nodes = records.filter((r): r is NodeRecord => r.type === 'node');
  // Operator calls the search's budget refused before sending are no_code nodes of their own.
  const llmNodes = nodes.filter(
    (r) => r.operator !== 'seed' && !(r.error ?? '').includes('BUDGET_EXHAUSTED'),
  );
  // Every other operator call reached the model once (no retries configured), each cost $0.01.
  expect(fake.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(
    llmNodes.length,
  );
  expect(task.costUsd).toBeCloseTo(0.01 * llmNodes.length, 6);
  // The ledger refuses a call once spent + reserved + its worst case pass the limit; this
  // model's worst case (the prompt estimate) is below the $0.01 it reports, so the last calls
  // may pass the limit by less than a call each.
  expect(task.costUsd).toBeGreaterThanOrEqual(0.06);
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

test('maxCostUsd is a hard cap across the islands: a limit holding 3 worst-case calls lets at most 3 reach the model', async () => {
  fake.setHandler(() => ({
    content: good(0.28, 0.71),
    // Every reply uses all of max_tokens: each call costs exactly its reserved worst case.
    usage: { prompt_tokens: 300, completion_tokens: 512 },
  }));
  const before = fake.requests.filter((r) => r.path.endsWith('/chat/completions')).length;
  const worstCaseUsd = (512 * 10) / 1e6;
  const jobs = tc.coordinator.jobs!;
  const record = await jobs.submit({
    spec: {
      kind: 'evolve',
      concurrency: 1,
      taskTimeoutMs: 400_000,
      retries: { max: 0 },
      agent: { model: 'exact', maxTokens: 512 },
      config: { evaluatorSlots: 2 },
      tasks: [
        {
          id: 'cap',
          suite: SUITE,
          // Room for 3 calls, not 4; generation 0 alone asks for 6 drafts at once.
          limits: { maxEvaluations: 40, maxCostUsd: worstCaseUsd * 3.5 },
          search: { seed: 4, islands: 3, draftsPerIsland: 2, islandConcurrency: 2 },
        },
      ],
    },
  });
  for await (const e of await jobs.watch(record.jobId, { signal: AbortSignal.timeout(500_000) })) {
    void e;
  }
  const task = (await jobs.results(record.jobId)).tasks[0]!;
  const details = task.details as Record<string, unknown>;
  const calls = fake.requests.filter((r) => r.path.endsWith('/chat/completions')).length - before;
  process.stderr.write(`hard cap: ${JSON.stringify({ calls, costUsd: task.costUsd, details })}\n`);
  expect(calls).toBeGreaterThanOrEqual(1);
  expect(calls).toBeLessThanOrEqual(3);
  expect(task.costUsd).toBeLessThanOrEqual(worstCaseUsd * 3.5);
  expect(details['stopReason']).toBe('cost');
  // The search still selected its final program (the seed scored) and graded it.
  expect(details['status']).toBe('succeeded');
  expect(details['selectionSource']).toBe('best_validation');
  expect(typeof details['testScore']).toBe('number');
  // The search's scope in the job's ledger holds what was spent, within its limit.
  const scope = searchBudgetScope(record.jobId, evolveJournalTaskId(record.jobId, 'cap'));
  const usage = await new BudgetLedger(tc.coordinator.system, { root: `job:${record.jobId}` }).get(
    scope,
  );
  expect(usage.spent.usd).toBeCloseTo(calls * worstCaseUsd, 9);
  expect(usage.spent.usd).toBeLessThanOrEqual(worstCaseUsd * 3.5);
  expect(usage.reservations).toBe(0);
  expect(fake.unexpectedRequests).toEqual([]);
});
