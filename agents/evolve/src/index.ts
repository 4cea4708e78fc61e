/**
 * @packageDocumentation
 * @troupe/evolve: evolutionary program search (OpenRSI / AIRA-dojo) — the journal and its
 * replay, the search runner (budgets, planning, generation closing, final selection), the
 * island actor, Draft/Improve/Crossover/Debug operators (built-in or LLM-backed) and search task
 * specs. The `evolve` job driver of @troupe/benchmarks runs it. Exports what the other packages
 * use; the package's own tests import the rest by path.
 */
export { createOperators } from './create-operators';
export { scoreOf } from './direction';
export type { Evaluate, EvaluateOptions, EvaluationRequest } from './evaluation-request';
export { type EvaluatorResult, parseEvaluatorOutput } from './evaluator-result';
export {
  type EvolveConfig,
  EvolveLimitsSchema,
  EvolveOptionsSchema,
  parseEvolveConfig,
} from './evolve-config';
export { islandActorId } from './evolve-names';
export {
  defineIslandActor,
  EVOLVE_ISLAND_KIND,
  type IslandStepReply,
  IslandStepReplySchema,
} from './island-actor';
export type { IslandStep } from './island-worker';
export { JetStreamJournalStore } from './jet-stream-journal-store';
export type { FinalRecord, JournalRecord, NodeRecord } from './journal-record';
export {
  type AppendReceipt,
  InMemoryJournalStore,
  type JournalRead,
  type JournalStore,
} from './journal-store';
export { llmChatFunction } from './llm-chat-function';
export type { ChatFunction } from './llm-operator';
export { type Program, ProgramSchema } from './program';
export { SearchRunner } from './search-runner';
export { parseTunableParams, type TunableParam } from './tunable-params';
export {
  applyJournalRecord,
  budgetUsage,
  createSearchState,
  type SearchState,
} from './search-state';
export {
  evolveOptionsFromSpec,
  parseSearchTaskSpec,
  renderEvaluatorCommand,
  type SearchTaskSpec,
  SearchTaskSpecSchema,
} from './search-task-spec';
