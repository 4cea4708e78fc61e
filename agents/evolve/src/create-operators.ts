import { TroupeError } from '@troupe/proto';
import { BuiltinOperators } from './builtin-operators';
import { type EvolveConfig } from './evolve-config';
import { type ChatFunction, LlmOperator } from './llm-operator';
import { type SearchOperators } from './search-operators';

/**
 * The operators a configuration asks for: {@link BuiltinOperators} (with its mutation settings)
 * or {@link LlmOperator} over `chat`.
 * @throws TroupeError `INVALID_ARGUMENT` for LLM operators without a chat function
 */
export function createOperators(
  config: EvolveConfig,
  deps: { chat?: ChatFunction } = {},
): SearchOperators {
  if (config.operators === 'builtin') {
    return new BuiltinOperators({
      mutationSigma: config.mutationSigma,
      maxMutatedParams: config.maxMutatedParams,
    });
  }
  if (!deps.chat) {
    throw new TroupeError('INVALID_ARGUMENT', '`evolve.operators`: llm needs a chat function');
  }
  return new LlmOperator({
    chat: deps.chat,
    description: config.description,
    direction: config.direction,
  });
}
