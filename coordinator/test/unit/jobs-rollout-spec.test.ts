import {
  parseRolloutTaskId,
  RolloutConfigSchema,
  rolloutJobSpec,
  rolloutTaskId,
} from '@troupe/coordinator';
import { type RolloutRequest__Output, type TroupeError } from '@troupe/proto';

/** A valid request as the server decodes it (defaults for absent fields). */
function request(over: Partial<RolloutRequest__Output> = {}): RolloutRequest__Output {
  return {
    endpoint: { baseUrl: 'http://policy-3:8000/v1', model: 'Qwen/Qwen2.5-Coder-7B-Instruct' },
    suite: 'benchmarks/suites/bugfix-mini',
    taskIds: ['py-lru-cache'],
    samplesPerTask: 0,
    sampling: null,
    maxSteps: 0,
    concurrency: 0,
    idempotencyKey: '',
    noWait: false,
    labels: {},
    taskTimeoutMs: 0,
    ...over,
  };
}

function sampling(s: Record<string, unknown>): RolloutRequest__Output['sampling'] {
  return { logprobs: false, ...s };
}

function errorOf(fn: () => unknown): TroupeError {
  try {
    fn();
  } catch (err) {
    return err as TroupeError;
  }
  throw new Error('expected an error');
}

describe('rolloutJobSpec', () => {
  test('maps a request to a rollout job spec with defaults', () => {
    const spec = rolloutJobSpec(
      request({
        samplesPerTask: 4,
        sampling: sampling({
          temperature: 0.7,
          topP: 0.95,
          seed: 7,
          logprobs: true,
          topLogprobs: 2,
          maxTokens: 512,
        }),
        maxSteps: 12,
        concurrency: 8,
        labels: { policy: 'v17' },
      }),
    );
    expect(spec).toEqual({
      kind: 'rollout',
      tasks: { suite: 'benchmarks/suites/bugfix-mini', include: ['py-lru-cache'] },
      config: {
        endpoint: { baseURL: 'http://policy-3:8000/v1', model: 'Qwen/Qwen2.5-Coder-7B-Instruct' },
        sampling: {
          temperature: 0.7,
          topP: 0.95,
          seed: 7,
          logprobs: true,
          topLogprobs: 2,
          maxTokens: 512,
        },
        samplesPerTask: 4,
        maxSteps: 12,
      },
      concurrency: 8,
      labels: { policy: 'v17' },
      retries: { max: 1 },
    });
    const bare = rolloutJobSpec(request({ taskIds: [] }));
    expect(bare['tasks']).toEqual({ suite: 'benchmarks/suites/bugfix-mini' });
    expect(bare['config']).toEqual({
      endpoint: { baseURL: 'http://policy-3:8000/v1', model: 'Qwen/Qwen2.5-Coder-7B-Instruct' },
      sampling: { logprobs: false },
      samplesPerTask: 1,
    });
  });

  test.each([
    [{ endpoint: null }, 'request.endpoint: is required'],
    [{ suite: '' }, 'request.suite: is required'],
    [
      { endpoint: { baseUrl: 'ftp://x/v1', model: 'm' } },
      'request.endpoint.baseURL: must be an http(s) URL',
    ],
    [
      { endpoint: { baseUrl: 'not a url', model: 'm' } },
      'request.endpoint.baseURL: must be an http(s) URL',
    ],
    [
      { endpoint: { baseUrl: 'http://user:secret@policy/v1', model: 'm' } },
      'request.endpoint.baseURL: must be an http(s) URL without credentials',
    ],
    [
      { endpoint: { baseUrl: 'http://policy/v1', model: '' } },
      'request.endpoint.model: must match',
    ],
    [
      { endpoint: { baseUrl: 'http://policy/v1', model: 'a b' } },
      'request.endpoint.model: must match',
    ],
    [{ sampling: sampling({ temperature: 2.5 }) }, 'request.sampling.temperature: must be <= 2'],
    [{ sampling: sampling({ temperature: -0.1 }) }, 'request.sampling.temperature: must be >= 0'],
    [{ sampling: sampling({ topP: 0 }) }, 'request.sampling.topP: must be > 0'],
    [{ sampling: sampling({ topP: 1.5 }) }, 'request.sampling.topP: must be <= 1'],
    [{ sampling: sampling({ seed: 1.5 }) }, 'request.sampling.seed: must be an integer'],
    [{ sampling: sampling({ seed: -1 }) }, 'request.sampling.seed: must be >= 0'],
    [{ sampling: sampling({ maxTokens: 0 }) }, 'request.sampling.maxTokens: must be >= 1'],
    [{ sampling: sampling({ maxTokens: 40_000 }) }, 'request.sampling.maxTokens: must be <= 32768'],
    [
      { sampling: sampling({ logprobs: true, topLogprobs: 21 }) },
      'request.sampling.topLogprobs: must be <= 20',
    ],
    [
      { sampling: sampling({ topLogprobs: 3 }) },
      'request.sampling.topLogprobs: needs sampling.logprobs: true',
    ],
    [{ samplesPerTask: 65 }, 'request.samplesPerTask: must be <= 64'],
    [{ samplesPerTask: -1 }, 'request.samples_per_task: must be >= 0'],
    [{ maxSteps: 1_001 }, 'request.maxSteps: must be <= 1000'],
    [{ concurrency: 5_000 }, 'request.concurrency: must be from 0 to 1000'],
    [{ taskIds: ['ok', '../etc'] }, 'request.task_ids[1]: must match'],
  ])('refuses %j naming the field and the rule', (over, message) => {
    const err = errorOf(() => rolloutJobSpec(request(over)));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message.replace(/`/g, '')).toContain(message);
  });

  test('the config schema refuses unknown keys (a key smuggled into the endpoint)', () => {
    const r = RolloutConfigSchema.safeParse({
      endpoint: { baseURL: 'http://p/v1', model: 'm', apiKeyEnv: 'OPENAI_API_KEY' },
    });
    expect(r.success).toBe(false);
  });
});

test('rollout task ids round-trip', () => {
  expect(rolloutTaskId('py-lru-cache', 3)).toBe('py-lru-cache.s3');
  expect(parseRolloutTaskId('py-lru-cache.s3')).toEqual({ taskId: 'py-lru-cache', sampleIndex: 3 });
  expect(parseRolloutTaskId('a.s1.s12')).toEqual({ taskId: 'a.s1', sampleIndex: 12 });
  expect(parseRolloutTaskId('plain')).toBeUndefined();
});
