import { ActorSystem } from '@troupe/actors';
import { LlmClient, ModelRegistry } from '@troupe/llm';
import { BudgetLedger, createBudgetLedgerActor, LedgerBudgetHook } from '@troupe/coordinator';
import { type TroupeError } from '@troupe/proto';
import { FakeOpenAI } from '@troupe/testkit';
import { TestCluster } from '@troupe/test-cluster';

// The LLM client charging the coordinator's ledger through LedgerBudgetHook: concurrent model calls
// against a job scope never send more than the limit allows, and the scope ends with the settled
// usage and nothing reserved.

const Ledger = createBudgetLedgerActor({ sweepIntervalMs: 50 });

let tc: TestCluster;
let fake: FakeOpenAI;
let system: ActorSystem;

beforeAll(async () => {
  // Only nats-server: the ledger is hosted (and placed locally) by this test's actor system.
  tc = await TestCluster.start({ coordinator: false, docker: false });
  fake = await FakeOpenAI.start();
  system = await ActorSystem.start({
    cluster: tc.cluster,
    servers: tc.server.url,
    hosting: [Ledger],
  });
});
afterAll(async () => {
  await system?.shutdown({ graceMs: 1_000 });
  await fake?.close();
  await tc?.stop();
});

test('concurrent model calls reserve from the ledger: no call is sent past the limit', async () => {
  const ledger = new BudgetLedger(system, { definition: Ledger });
  // Worst case of one call: max_tokens 1000 × $10/M = $0.01 (plus a few prompt tokens), so a
  // $0.035 scope holds three calls in flight and refuses the rest before anything is sent.
  await ledger.createScope('job:hook', 'cluster', { usd: 0.035 });
  const llm = new LlmClient({
    registry: new ModelRegistry({
      models: {
        m: {
          baseURL: fake.baseURL,
          model: 'fake-model',
          inputUsdPer1M: 1,
          outputUsdPer1M: 10,
          maxTokens: 1_000,
        },
      },
    }),
    budget: new LedgerBudgetHook({ ledger, scope: 'job:hook', holder: 'test/hook', ttlMs: 60_000 }),
    retry: { maxAttempts: 1 },
  });
  for (let i = 0; i < 10; i++) {
    fake.enqueue({
      content: `reply ${i}`,
      usage: { prompt_tokens: 20, completion_tokens: 100 },
      delayMs: 500,
    });
  }
  const results = await Promise.allSettled(
    Array.from({ length: 10 }, (_, i) =>
      llm.chat({
        model: 'm',
        messages: [{ role: 'user', content: `question ${i}` }],
        signal: AbortSignal.timeout(30_000),
      }),
    ),
  );
  const ok = results.filter((r) => r.status === 'fulfilled');
  const refused = results
    .filter((r): r is PromiseRejectedResult => r.status === 'rejected')
    .map((r) => r.reason as TroupeError);
  expect(ok).toHaveLength(3);
  expect(refused.map((e) => e.code)).toEqual(Array(7).fill('BUDGET_EXHAUSTED'));
  expect(fake.chatRequests).toHaveLength(3);

  const usage = await ledger.get('job:hook');
  // Each sent call settled at its real usage: 20 × $1/M + 100 × $10/M = $0.00102.
  expect(usage.spent.usd).toBeCloseTo(3 * 0.00102, 9);
  expect(usage.spent.tokens).toBe(3 * 120);
  expect(usage.reserved.usd).toBe(0);
});

test("a call whose metadata names a budgetScope is charged there, not to the hook's scope", async () => {
  const ledger = new BudgetLedger(system, { definition: Ledger });
  await ledger.createScope('job:default', 'cluster', { usd: 1 });
  await ledger.createScope('job:named', 'cluster', { usd: 1 });
  const hook = new LedgerBudgetHook({ ledger, scope: 'job:default', holder: 'test/hook' });
  const llm = new LlmClient({
    registry: new ModelRegistry({
      models: {
        m: { baseURL: fake.baseURL, model: 'fake-model', inputUsdPer1M: 1, outputUsdPer1M: 10 },
      },
    }),
    budget: hook,
  });
  fake.enqueue({ content: 'ok', usage: { prompt_tokens: 10, completion_tokens: 10 } });
  await llm.chat({
    model: 'm',
    messages: [{ role: 'user', content: 'hi' }],
    metadata: { budgetScope: 'job:named' },
    signal: AbortSignal.timeout(30_000),
  });
  expect((await ledger.get('job:named')).spent.requests).toBe(1);
  expect((await ledger.get('job:default')).spent.requests).toBe(0);
});
