import { type ModelConfig, ModelConfigSchema } from './model-config';

/**
 * A model reached at a base URL given with the call instead of through the registry: a trainer's
 * policy server in an RL rollout (a vLLM server per policy version). Such a call is untrusted in
 * both directions, so it never carries a key (no `apiKeyEnv`, no credential headers, no
 * organisation/project headers), costs nothing (prices 0: the caller pays for its own server),
 * and has no client-side rate limit or concurrency cap.
 */
export interface ModelEndpoint {
  /** OpenAI-compatible base URL (`http:` or `https:`), e.g. `http://policy-17:8000/v1`. */
  baseURL: string;
  /** Model id sent in the request body, e.g. `Qwen/Qwen2.5-Coder-7B-Instruct`. */
  model: string;
}

/**
 * The {@link ModelConfig} a call to `endpoint` runs with: the registry defaults (`maxTokens`
 * 4096, `timeoutMs` 600000), prices 0, no key. @throws TroupeError-free: a malformed endpoint
 * fails zod here, so callers validate endpoints at their boundary first.
 */
export function endpointModelConfig(endpoint: ModelEndpoint): ModelConfig {
  return ModelConfigSchema.parse({
    baseURL: endpoint.baseURL,
    model: endpoint.model,
    inputUsdPer1M: 0,
    outputUsdPer1M: 0,
  });
}

/** The provider cache key of an endpoint (never collides with a registry name). */
export function endpointProviderKey(endpoint: ModelEndpoint): string {
  return `endpoint\u0000${endpoint.baseURL}`;
}
