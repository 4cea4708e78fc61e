import type { ModelConfig } from './model-config';

/** USD for `promptTokens` and `completionTokens` at the model's per-million prices. */
export function computeCostUsd(
  model: Pick<ModelConfig, 'inputUsdPer1M' | 'outputUsdPer1M'>,
  promptTokens: number,
  completionTokens: number,
): number {
  return (promptTokens * model.inputUsdPer1M + completionTokens * model.outputUsdPer1M) / 1_000_000;
}
