import { z } from 'zod';

/** How a completion cap is sent: most OpenAI-compatible servers read `max_tokens`; OpenAI's reasoning models require `max_completion_tokens`. */
export const MaxTokensParam = {
  MAX_TOKENS: 'max_tokens',
  MAX_COMPLETION_TOKENS: 'max_completion_tokens',
} as const;

/** One of the {@link MaxTokensParam} values. */
export type MaxTokensParam = (typeof MaxTokensParam)[keyof typeof MaxTokensParam];

/** Name of an environment variable: what `apiKeyEnv` holds (never the key itself). */
export const ENV_VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

// Headers that carry credentials: those belong in the environment variable named by apiKeyEnv,
// never in a config file that is logged, diffed and serialised.
const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'api-key',
  'x-api-key',
  'proxy-authorization',
]);

const typeError = (expected: string): { error: (issue: { input?: unknown }) => string } => ({
  error: (issue) => (issue.input === undefined ? 'is required' : `must be ${expected}`),
});

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

const price = () => z.number(typeError('a number')).min(0, 'must be ≥ 0');
const positiveInt = () => z.int(typeError('an integer ≥ 1')).min(1, 'must be an integer ≥ 1');

/**
 * The zod schema of one model entry: strict (an unknown field is an error), with defaults. Rules
 * are worded so that `fromZodError` gives `models.gpt-4o.inputUsdPer1M: must be ≥ 0`.
 */
export const ModelConfigSchema = z
  .strictObject({
    baseURL: z
      .string(typeError('a string'))
      .refine(isHttpUrl, 'must be an http(s) URL such as https://api.openai.com/v1'),
    apiKeyEnv: z
      .string(typeError('a string'))
      .regex(
        ENV_VAR_NAME,
        'must be the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*), not the key itself',
      )
      .optional(),
    model: z.string(typeError('a string')).min(1, 'must be a non-empty string'),
    inputUsdPer1M: price(),
    outputUsdPer1M: price(),
    maxConcurrency: positiveInt().optional(),
    rpm: positiveInt().optional(),
    tpm: positiveInt().optional(),
    maxTokens: positiveInt().default(4_096),
    contextTokens: positiveInt().optional(),
    timeoutMs: positiveInt().default(600_000),
    headers: z
      .record(z.string(), z.string(typeError('a string')), typeError('a map of header → value'))
      .superRefine((headers, ctx) => {
        for (const name of Object.keys(headers)) {
          if (CREDENTIAL_HEADERS.has(name.toLowerCase())) {
            ctx.addIssue({
              code: 'custom',
              path: [name],
              message:
                'must not carry credentials: put the key in the environment variable named by apiKeyEnv',
            });
          }
        }
      })
      .optional(),
    maxTokensParam: z
      .enum([MaxTokensParam.MAX_TOKENS, MaxTokensParam.MAX_COMPLETION_TOKENS], {
        error: 'must be "max_tokens" or "max_completion_tokens"',
      })
      .default(MaxTokensParam.MAX_TOKENS),
  })
  .superRefine((model, ctx) => {
    if (model.contextTokens !== undefined && model.maxTokens > model.contextTokens) {
      ctx.addIssue({
        code: 'custom',
        path: ['maxTokens'],
        message: `must be ≤ contextTokens (${model.contextTokens})`,
      });
    }
  });

/**
 * One model as a caller writes it (in an object, YAML or JSON). Prices are USD per million
 * tokens. Secrets never go here: `apiKeyEnv` names the environment variable that holds the key,
 * read by the client at call time.
 */
export interface ModelOptions {
  /** OpenAI-compatible base URL, e.g. `https://api.openai.com/v1`, `http://localhost:8000/v1`. */
  baseURL: string;
  /** Name of the environment variable holding the API key. @default none: no key is sent (local servers) */
  apiKeyEnv?: string;
  /** Model id sent to the provider, e.g. `gpt-4o`, `Qwen/Qwen2.5-Coder-7B-Instruct`. */
  model: string;
  /** USD per million prompt tokens (≥ 0; 0 for self-hosted). */
  inputUsdPer1M: number;
  /** USD per million completion tokens (≥ 0). */
  outputUsdPer1M: number;
  /** Calls in flight at once from this client. @default unlimited */
  maxConcurrency?: number;
  /** Requests per minute (local token bucket unless a RateLimitHook is injected). @default unlimited */
  rpm?: number;
  /** Tokens per minute, counted as estimated prompt + completion cap like OpenAI does. @default unlimited */
  tpm?: number;
  /** Completion cap when a call does not set `maxTokens`; also the worst case reserved. @default 4096 */
  maxTokens?: number;
  /** Context window, for callers that compact history; `maxTokens` must not exceed it. @default unknown */
  contextTokens?: number;
  /** Timeout of one attempt (headers and body, streamed or not); a timed-out attempt is retried. @default 600000 */
  timeoutMs?: number;
  /** Extra, non-secret request headers. Credential headers are rejected. @default none */
  headers?: Record<string, string>;
  /** Request field carrying the completion cap. @default 'max_tokens' */
  maxTokensParam?: MaxTokensParam;
}

/** A {@link ModelOptions} once validated and defaulted. */
export type ModelConfig = z.output<typeof ModelConfigSchema>;
