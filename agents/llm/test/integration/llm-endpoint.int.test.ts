import { LlmClient } from '../../src/llm-client';
import { ModelRegistry } from '../../src/model-registry';
import { TroupeError } from '@troupe/proto';
import { FakeOpenAI } from '@troupe/testkit';

// Calls to a call-supplied endpoint (an RL trainer's policy server): sampling settings and
// logprobs reach the server, the reply's per-token logprobs come back, and the cluster's key
// never leaves for the endpoint.

const SECRET = 'sk-cluster-key-never-forwarded-7c1e';
let cluster: FakeOpenAI;
let policy: FakeOpenAI;

beforeAll(async () => {
  cluster = await FakeOpenAI.start();
  policy = await FakeOpenAI.start();
});

afterAll(async () => {
  await cluster.close();
  await policy.close();
});

function client(): LlmClient {
  return new LlmClient({
    registry: new ModelRegistry({
      models: {
        // The same registry name as the endpoint's model: the endpoint must still win.
        'policy-v1': {
          baseURL: cluster.baseURL,
          apiKeyEnv: 'CLUSTER_KEY',
          model: 'cluster-model',
          inputUsdPer1M: 1,
          outputUsdPer1M: 1,
        },
      },
    }),
    env: { CLUSTER_KEY: SECRET },
    retry: { initialBackoffMs: 1, maxBackoffMs: 5, jitterRatio: 0 },
  });
}

test('an endpoint call sends sampling and logprobs, returns token logprobs, carries no key', async () => {
  policy.enqueue({
    content: 'Hi there',
    usage: { prompt_tokens: 12, completion_tokens: 2 },
    logprobs: [
      { token: 'Hi', logprob: -0.25, topLogprobs: [{ token: 'Hello', logprob: -1.5 }] },
      { token: ' there', logprob: -0.5 },
    ],
  });
  const result = await client().chat({
    model: 'policy-v1',
    endpoint: { baseURL: policy.baseURL, model: 'org/policy-v1' },
    messages: [{ role: 'user', content: 'Say hi.' }],
    temperature: 0.8,
    topP: 0.9,
    seed: 42,
    logprobs: true,
    topLogprobs: 1,
    signal: AbortSignal.timeout(30_000),
  });
  expect(result.message.content).toBe('Hi there');
  expect(result.costUsd).toBe(0);
  expect(result.logprobs).toEqual([
    {
      token: 'Hi',
      logprob: -0.25,
      bytes: [72, 105],
      topLogprobs: [{ token: 'Hello', logprob: -1.5 }],
    },
    { token: ' there', logprob: -0.5, bytes: [32, 116, 104, 101, 114, 101], topLogprobs: [] },
  ]);
  expect(cluster.requests).toHaveLength(0);
  const req = policy.chatRequests[0]!;
  expect(req.body).toMatchObject({
    model: 'org/policy-v1',
    temperature: 0.8,
    top_p: 0.9,
    seed: 42,
    logprobs: true,
    top_logprobs: 1,
  });
  expect(JSON.stringify(req.headers)).not.toContain(SECRET);
});

test('a registry call without logprobs gets none, and the key goes to the registry model', async () => {
  cluster.enqueue({ content: 'ok' });
  const result = await client().chat({
    model: 'policy-v1',
    messages: [{ role: 'user', content: 'x' }],
    signal: AbortSignal.timeout(30_000),
  });
  expect(result.logprobs).toBeUndefined();
  expect(cluster.chatRequests[0]!.headers.authorization).toBe(`Bearer ${SECRET}`);
  expect(cluster.chatRequests[0]!.body).not.toHaveProperty('logprobs');
});

test.each([
  [{ topP: 1.5 }, 'topP'],
  [{ topLogprobs: 21 }, 'topLogprobs'],
  [{ seed: 0.5 }, 'seed'],
])('refuses %j before sending anything', async (bad, field) => {
  const before = policy.requests.length;
  const err = await client()
    .chat({
      model: 'policy-v1',
      endpoint: { baseURL: policy.baseURL, model: 'org/policy-v1' },
      messages: [{ role: 'user', content: 'x' }],
      signal: AbortSignal.timeout(30_000),
      ...bad,
    })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(err).toBeInstanceOf(TroupeError);
  expect((err as TroupeError).code).toBe('INVALID_ARGUMENT');
  expect((err as TroupeError).message).toContain(field);
  expect(policy.requests.length).toBe(before);
});
