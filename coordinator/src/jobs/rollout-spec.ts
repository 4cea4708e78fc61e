import {
  invalidArgument,
  isHttpUrlWithoutCredentials,
  NamePattern,
  NameRule,
  parseWith,
  type RolloutRequest__Output,
} from '@troupe/proto';
import { z } from 'zod';
import { MAX_INLINE_TASKS, TASK_ID_PATTERN, TASK_ID_RULE } from './job-driver';
import { MAX_JOB_CONCURRENCY } from './job-spec';

/** The job kind of RL rollouts (the driver lives in `@troupe/benchmarks`). */
export const ROLLOUT_JOB_KIND = 'rollout';

/** Most episodes per task of one rollout job (a GRPO group). */
export const MAX_SAMPLES_PER_TASK = 64;
/** Largest completion cap per model call of a rollout. */
export const MAX_ROLLOUT_TOKENS = 32_768;

/** The policy server of a rollout job: an OpenAI-compatible base URL and model id. */
export const RolloutEndpointSchema = z.strictObject({
  baseURL: z
    .string({ error: 'is required (an http(s) URL)' })
    .min(1, { error: 'is required (an http(s) URL)' })
    .max(2_048, { error: 'must be at most 2048 characters' })
    .refine(isHttpUrlWithoutCredentials, {
      error: 'must be an http(s) URL without credentials, such as http://policy:8000/v1',
    }),
  model: z
    .string({ error: 'is required' })
    .regex(NamePattern.MODEL_NAME, { error: NameRule.MODEL_NAME }),
});

/** Sampling settings of every model call of a rollout job. */
export const RolloutSamplingSchema = z.strictObject({
  temperature: z
    .number({ error: 'must be a number' })
    .min(0, { error: 'must be >= 0' })
    .max(2, { error: 'must be <= 2' })
    .optional(),
  topP: z
    .number({ error: 'must be a number' })
    .gt(0, { error: 'must be > 0' })
    .max(1, { error: 'must be <= 1' })
    .optional(),
  seed: z
    .number({ error: 'must be a number' })
    .int({ error: 'must be an integer' })
    .min(0, { error: 'must be >= 0' })
    .max(2 ** 31 - 1, { error: 'must be <= 2147483647' })
    .optional(),
  logprobs: z.boolean({ error: 'must be a boolean' }).default(false),
  topLogprobs: z
    .number({ error: 'must be a number' })
    .int({ error: 'must be an integer' })
    .min(0, { error: 'must be >= 0' })
    .max(20, { error: 'must be <= 20' })
    .optional(),
  maxTokens: z
    .number({ error: 'must be a number' })
    .int({ error: 'must be an integer' })
    .min(1, { error: 'must be >= 1' })
    .max(MAX_ROLLOUT_TOKENS, { error: `must be <= ${MAX_ROLLOUT_TOKENS}` })
    .optional(),
});

/**
 * `spec.config` of a `rollout` job: the policy endpoint, sampling, episodes per task and the
 * step cap of an episode. `topLogprobs` needs `logprobs`.
 */
export const RolloutConfigSchema = z
  .strictObject({
    endpoint: RolloutEndpointSchema,
    sampling: RolloutSamplingSchema.default(() => RolloutSamplingSchema.parse({})),
    samplesPerTask: z
      .number({ error: 'must be a number' })
      .int({ error: 'must be an integer' })
      .min(1, { error: 'must be >= 1' })
      .max(MAX_SAMPLES_PER_TASK, { error: `must be <= ${MAX_SAMPLES_PER_TASK}` })
      .default(1),
    maxSteps: z
      .number({ error: 'must be a number' })
      .int({ error: 'must be an integer' })
      .min(1, { error: 'must be >= 1' })
      .max(1_000, { error: 'must be <= 1000' })
      .optional(),
  })
  .superRefine((c, ctx) => {
    if (c.sampling.topLogprobs !== undefined && !c.sampling.logprobs) {
      ctx.addIssue({
        code: 'custom',
        path: ['sampling', 'topLogprobs'],
        message: 'needs sampling.logprobs: true',
      });
    }
  });
/** A validated `spec.config` of a rollout job. */
export type RolloutConfig = z.output<typeof RolloutConfigSchema>;

/** The job task id of episode `sample` of suite task `taskId`: `<taskId>.s<sample>`. */
export function rolloutTaskId(taskId: string, sample: number): string {
  return `${taskId}.s${sample}`;
}

/** The suite task and sample index of a rollout job's task id, or undefined. */
export function parseRolloutTaskId(
  id: string,
): { taskId: string; sampleIndex: number } | undefined {
  const m = /^(.+)\.s(\d+)$/.exec(id);
  return m ? { taskId: m[1]!, sampleIndex: Number(m[2]) } : undefined;
}

/**
 * The job spec (a plain object, validated again by the job manager) of a `Rollout` request. The
 * request's own rules are checked here so errors name the request's fields
 * (`request.sampling.temperature: must be <= 2`).
 * @throws TroupeError `INVALID_ARGUMENT` naming the field and the rule
 */
export function rolloutJobSpec(req: RolloutRequest__Output): Record<string, unknown> {
  if (!req.endpoint) throw invalidArgument('request.endpoint', 'is required');
  if (!req.suite) throw invalidArgument('request.suite', 'is required (a suite folder)');
  if (req.taskIds.length > MAX_INLINE_TASKS) {
    throw invalidArgument('request.task_ids', `must hold at most ${MAX_INLINE_TASKS} ids`);
  }
  req.taskIds.forEach((id, i) => {
    if (!TASK_ID_PATTERN.test(id))
      throw invalidArgument(`request.task_ids[${i}]`, TASK_ID_RULE, id);
  });
  if (req.concurrency < 0 || req.concurrency > MAX_JOB_CONCURRENCY) {
    throw invalidArgument('request.concurrency', `must be from 0 to ${MAX_JOB_CONCURRENCY}`);
  }
  if (req.maxSteps < 0) throw invalidArgument('request.max_steps', 'must be >= 0');
  if (req.samplesPerTask < 0) throw invalidArgument('request.samples_per_task', 'must be >= 0');
  if (req.taskTimeoutMs < 0) throw invalidArgument('request.task_timeout_ms', 'must be >= 0');
  const s = req.sampling;
  const config = parseWith(
    RolloutConfigSchema,
    {
      endpoint: { baseURL: req.endpoint.baseUrl, model: req.endpoint.model },
      sampling: {
        ...(s?.temperature !== undefined ? { temperature: s.temperature } : {}),
        ...(s?.topP !== undefined ? { topP: s.topP } : {}),
        ...(s?.seed !== undefined ? { seed: s.seed } : {}),
        logprobs: s?.logprobs ?? false,
        ...(s?.topLogprobs !== undefined ? { topLogprobs: s.topLogprobs } : {}),
        ...(s?.maxTokens !== undefined ? { maxTokens: s.maxTokens } : {}),
      },
      samplesPerTask: req.samplesPerTask || 1,
      ...(req.maxSteps ? { maxSteps: req.maxSteps } : {}),
    },
    { prefix: 'request' },
  );
  return {
    kind: ROLLOUT_JOB_KIND,
    tasks: { suite: req.suite, ...(req.taskIds.length > 0 ? { include: req.taskIds } : {}) },
    config,
    ...(req.concurrency ? { concurrency: req.concurrency } : {}),
    ...(req.taskTimeoutMs ? { taskTimeoutMs: req.taskTimeoutMs } : {}),
    labels: req.labels,
    // Graded failures are never retried; an infrastructure failure of an episode is, once.
    retries: { max: 1 },
  };
}
