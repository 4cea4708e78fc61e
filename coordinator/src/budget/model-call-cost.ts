import { parseWith } from '@troupe/proto';
import { z } from 'zod';
import { type BudgetAmount } from './budget-amount';

const Price = z.number().finite().nonnegative({ message: 'must be >= 0' });
const Tokens = z
  .number()
  .int({ message: 'must be an integer' })
  .nonnegative({ message: 'must be >= 0' });

/** Prices of a model, USD per million tokens. */
export const ModelPricesSchema = z.strictObject({
  inputUsdPerMTok: Price,
  outputUsdPerMTok: Price,
});
/** Prices of a model, USD per million tokens. */
export type ModelPrices = z.infer<typeof ModelPricesSchema>;

/**
 * What a model call reserves before it is sent — its worst case:
 * `promptTokens × input price + maxTokens × output price`, and `promptTokens + maxTokens` tokens.
 * `promptTokens` is the client's estimate of the prompt; overestimate rather than under.
 */
export function worstCaseAmount(
  call: { promptTokens: number; maxTokens: number },
  prices: ModelPrices,
): BudgetAmount {
  const c = parseWith(z.object({ promptTokens: Tokens, maxTokens: Tokens }), call);
  const p = parseWith(ModelPricesSchema, prices, { prefix: 'prices' });
  return {
    usd: (c.promptTokens * p.inputUsdPerMTok + c.maxTokens * p.outputUsdPerMTok) / 1_000_000,
    tokens: c.promptTokens + c.maxTokens,
  };
}

/** What a finished call settles: the provider's reported usage at the model's prices. */
export function actualAmount(
  usage: { promptTokens: number; completionTokens: number },
  prices: ModelPrices,
): BudgetAmount {
  const u = parseWith(z.object({ promptTokens: Tokens, completionTokens: Tokens }), usage, {
    prefix: 'usage',
  });
  const p = parseWith(ModelPricesSchema, prices, { prefix: 'prices' });
  return {
    usd: (u.promptTokens * p.inputUsdPerMTok + u.completionTokens * p.outputUsdPerMTok) / 1_000_000,
    tokens: u.promptTokens + u.completionTokens,
  };
}
