/**
 * perf/llm-client: LlmClient's cost per call over the raw openai SDK, both calling the same
 * FakeOpenAI (zero latency, non-streaming) in the same run, interleaved in rounds so drift hits
 * both alike.
 *   llm_overhead_p50_ms   median LlmClient call − median raw SDK call (ms), with a recorder,
 *                         a budget hook and a maxConcurrency slot on the path
 *   llm_overhead_ratio    median LlmClient call / median raw SDK call
 */
import {
  type BudgetHook,
  InMemoryCallRecorder,
  LlmClient,
  type ChatMessage,
  ModelRegistry,
} from '@troupe/llm';
import { FakeOpenAI } from '@troupe/testkit';
import OpenAI from 'openai';
import { median, nowUs, printResult, printTable, quantile } from '../lib/report';

const ROUNDS = 30;
const PER_ROUND = 100;
const WARMUP = 300;

const SYSTEM = 'You are a careful software engineer. Answer briefly.';
const USER = 'What does `git rebase --onto` do? '.repeat(20);
const messages: ChatMessage[] = [
  { role: 'system', content: SYSTEM },
  { role: 'user', content: USER },
];

async function main(): Promise<void> {
  const fake = await FakeOpenAI.start();
  fake.setHandler(() => ({
    content: 'It transplants a range of commits onto a new base.',
    usage: { prompt_tokens: 200, completion_tokens: 12 },
  }));

  const raw = new OpenAI({ baseURL: fake.baseURL, apiKey: 'perf', maxRetries: 0 });
  const registry = new ModelRegistry({
    models: {
      bare: { baseURL: fake.baseURL, model: 'fake-model', inputUsdPer1M: 1, outputUsdPer1M: 2 },
      full: {
        baseURL: fake.baseURL,
        model: 'fake-model',
        inputUsdPer1M: 1,
        outputUsdPer1M: 2,
        maxConcurrency: 8,
      },
    },
  });
  let reservations = 0;
  const budget: BudgetHook = {
    reserve: () => ({ reservationId: String(++reservations) }),
    settle: () => undefined,
    release: () => undefined,
  };
  const recorder = new InMemoryCallRecorder();
  const client = new LlmClient({ registry, recorder, budget });
  const bare = new LlmClient({ registry });
  const signal = new AbortController().signal;

  // The raw baseline passes no signal: the SDK adds an abort listener to any signal it is given
  // and never removes it, so a long-lived one collects a listener per request. (LlmClient hands
  // the SDK a per-attempt signal, which keeps the caller's signal clean.)
  const rawCall = async (): Promise<void> => {
    await raw.chat.completions.create({
      model: 'fake-model',
      max_tokens: 4_096,
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: USER },
      ],
    });
  };
  const clientCall = (llm: LlmClient, model: string) => async (): Promise<void> => {
    await llm.chat({ model, messages, signal });
  };
  const variants = {
    raw: rawCall,
    bare: clientCall(bare, 'bare'),
    full: clientCall(client, 'full'),
  };
  const samples: Record<keyof typeof variants, number[]> = { raw: [], bare: [], full: [] };

  for (let i = 0; i < WARMUP; i++) for (const call of Object.values(variants)) await call();
  const names = Object.keys(variants) as (keyof typeof variants)[];
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order each round so no variant always runs right after another.
    const order = names.map((_, i) => names[(i + round) % names.length]!);
    for (const name of order) {
      const call = variants[name];
      for (let i = 0; i < PER_ROUND; i++) {
        const start = nowUs();
        await call();
        samples[name].push((nowUs() - start) / 1_000);
      }
    }
  }
  await fake.close();

  const p50 = (name: keyof typeof variants): number => median(samples[name]);
  const overheadMs = p50('full') - p50('raw');
  printTable('llm-client: ms per non-streaming call against FakeOpenAI (zero latency)', {
    calls_per_variant: ROUNDS * PER_ROUND,
    raw_sdk_p50_ms: p50('raw'),
    raw_sdk_p99_ms: quantile(samples.raw, 0.99),
    client_bare_p50_ms: p50('bare'),
    client_full_p50_ms: p50('full'),
    client_full_p99_ms: quantile(samples.full, 0.99),
    bare_overhead_p50_ms: p50('bare') - p50('raw'),
    full_overhead_p50_ms: overheadMs,
    recorded_calls: recorder.records.length,
  });
  printResult('llm-client', {
    llm_overhead_p50_ms: overheadMs,
    llm_overhead_ratio: p50('full') / p50('raw'),
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
