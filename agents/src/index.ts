/**
 * @packageDocumentation
 * @troupe/agents: LLM client, agent actor, tools, subagents, skills, evolution and RSI roles.
 * The model registry and the LLM client (`LlmClient`) with its budget, rate-limit and
 * call-recording hooks; the agent actor (sessions, tools, subagents, compaction, trajectories);
 * the evolutionary search actors.
 */
export type {
  BudgetAmount,
  BudgetHook,
  BudgetReservation,
  BudgetReserveContext,
} from './llm/budget-hook';
export type { CallRecorder, LlmCallRecord } from './llm/call-recorder';
export type {
  AssistantMessage,
  AssistantReply,
  ChatMessage,
  SystemMessage,
  ToolCall,
  ToolChoice,
  ToolDefinition,
  ToolMessage,
  UserMessage,
} from './llm/chat-message';
export type { ChatDelta, ChatOptions } from './llm/chat-options';
export { type ChatResult, FinishReason, type LlmUsage } from './llm/chat-result';
export { computeCostUsd } from './llm/compute-cost-usd';
export {
  estimatePromptTokens,
  estimateTextTokens,
  type TokenEstimator,
} from './llm/estimate-tokens';
export {
  InMemoryCallRecorder,
  type InMemoryCallRecorderOptions,
  type ModelCallTotals,
} from './llm/in-memory-call-recorder';
export { LlmClient, type LlmClientOptions } from './llm/llm-client';
export {
  type ModelConfig,
  ModelConfigSchema,
  type ModelOptions,
  MaxTokensParam,
} from './llm/model-config';
export {
  MODEL_NAME,
  ModelRegistry,
  type ModelRegistryConfig,
  type ModelRegistryOptions,
} from './llm/model-registry';
export type { RateLimitDecision, RateLimitHook, RateLimitRequest } from './llm/rate-limit-hook';
export {
  backoffDelayMs,
  resolveRetryConfig,
  type RetryConfig,
  type RetryOptions,
} from './llm/retry-options';
export {
  type ModelRateLimits,
  TokenBucketRateLimiter,
  type TokenBucketRateLimiterOptions,
} from './llm/token-bucket-rate-limiter';
// The agent actor: sessions, tools, subagents, compaction and trajectories.
export {
  ActorSandboxPort,
  type ActorSandboxPortOptions,
  SANDBOX_ACTOR_KIND,
} from './agent/actor-sandbox-port';
export {
  type AgentActorDefinition,
  type AgentActorOptions,
  createAgentActor,
} from './agent/agent-actor';
export {
  AGENT_KIND,
  AgentMessages,
  type AgentRunResult,
  AgentRunResultSchema,
  AgentTextMessageSchema,
  type CancelMessage,
  CancelMessageSchema,
  type RunMessage,
  RunMessageSchema,
  SubagentResultMessageSchema,
} from './agent/agent-messages';
export {
  type AgentSessionHandle,
  type AgentSessionOptions,
  cancelAgentRun,
  type CancelAgentRunOptions,
  runAgentSession,
  startAgentSession,
} from './agent/agent-session';
export {
  type AgentRunState,
  type AgentSessionState,
  AgentSessionStateSchema,
  type StoredMessage,
  StoredMessageSchema,
  type SubagentRecord,
} from './agent/agent-state';
export { AgentStopReason } from './agent/agent-stop-reason';
export {
  AGENT_NAME_PATTERN,
  type AgentLimits,
  type AgentLimitsInput,
  AgentLimitsSchema,
  type AgentTemplate,
  type AgentTemplateInput,
  AgentTemplateSchema,
  type CompactionInput,
  parseAgentTemplate,
} from './agent/agent-template';
export { AgentToolArgs, toolDefinition } from './agent/agent-tool-args';
export { AGENT_TOOL_NAMES, AgentToolName } from './agent/agent-tool-name';
export {
  applyCompaction,
  type CompactionWindow,
  conversationChars,
  findCompactionWindow,
} from './agent/compact-history';
export {
  ELIDED_PREFIX,
  type ElisionResult,
  elideOlderMessages,
  growingChars,
  MAX_JSON_BYTES_PER_CHAR,
  stateBytes,
} from './agent/elide-older-messages';
export { headTail, replaceExact } from './agent/replace-exact';
export type { SandboxExecResult, SandboxJobStatus, SandboxPort } from './agent/sandbox-port';
export { SessionBudget } from './agent/session-budget';
export {
  type TrajectoryEvent,
  TrajectoryEventSchema,
  TrajectoryEventType,
} from './agent/trajectory-event';
export {
  type OpenAIChatMessage,
  toOpenAIMessage,
  trajectoriesToJsonl,
  type TrajectoryJsonlRecord,
  trajectoryToRecord,
} from './agent/trajectory-jsonl';
export {
  latestPerSeq,
  TrajectoryStore,
  type TrajectoryStoreOptions,
} from './agent/trajectory-store';
// Evolutionary program search (the `evolve` driver's actors and pure search logic).
export { BuiltinOperators, type BuiltinOperatorsOptions } from './evolve/builtin-operators';
export { createOperators } from './evolve/create-operators';
export {
  type DebugChainDecision,
  type DebugChainLimits,
  type DebugChainProgress,
  nextDebugStep,
} from './evolve/debug-chain';
export { Direction, fitnessOf, scoreOf } from './evolve/direction';
export {
  type Evaluate,
  type EvaluateOptions,
  EvaluationPhase,
  type EvaluationRequest,
} from './evolve/evaluation-request';
export {
  type EvaluatorResult,
  EvaluatorResultSchema,
  EvaluatorStatus,
  isBuggyResult,
  parseEvaluatorOutput,
  parseEvaluatorResult,
  parseLenientJson,
} from './evolve/evaluator-result';
export {
  createEvolveActors,
  defineIslandActor,
  EVOLVE_ISLAND_KIND,
  EVOLVE_SEARCH_KIND,
  type EvolveActorDeps,
  EvolveRunMessageSchema,
  type IslandActorDeps,
  type IslandStepReply,
  IslandStepReplySchema,
  type IslandStepSession,
} from './evolve/evolve-actors';
export {
  type EvolveConfig,
  type EvolveLimits,
  EvolveLimitsSchema,
  type EvolveOptions,
  EvolveOptionsSchema,
  OperatorMode,
  parseEvolveConfig,
} from './evolve/evolve-config';
export {
  evolveStreamName,
  evolveSubject,
  evolveSubjectFilter,
  islandActorId,
  searchActorId,
  validateTaskId,
} from './evolve/evolve-names';
export { extractFirstCodeBlock } from './evolve/extract-code-block';
export { type FinalSelection, selectFinal } from './evolve/final-selection';
export {
  AdmissionReason,
  type AdmissionOutcome,
  admitChild,
  chooseIsland,
  evictWorst,
  islandAverage,
  islandBest,
  type IslandMember,
  sampleParents,
} from './evolve/island';
export {
  evaluateWithRetry,
  type IslandStep,
  IslandStepSchema,
  type IslandWorkerDeps,
  runIslandStep,
  type SlotWork,
  SlotWorkSchema,
} from './evolve/island-worker';
export {
  JetStreamJournalStore,
  type JetStreamJournalStoreOptions,
} from './evolve/jet-stream-journal-store';
export {
  attemptIdOf,
  type AttemptRecord,
  AttemptRecordSchema,
  EvolveTaskStatus,
  type FinalRecord,
  FinalRecordSchema,
  type GenerationRecord,
  GenerationRecordSchema,
  type JournalRecord,
  JournalRecordSchema,
  journalMessageId,
  NodeOutcome,
  type NodeRecord,
  NodeRecordSchema,
  SelectionSource,
  type StopRecord,
  StopRecordSchema,
  TASK_ID_PATTERN,
  type TaskRecord,
  TaskRecordSchema,
  type TestStartRecord,
  TestStartRecordSchema,
} from './evolve/journal-record';
export {
  type AppendReceipt,
  InMemoryJournalStore,
  type JournalRead,
  type JournalStore,
} from './evolve/journal-store';
export {
  type ChatFunction,
  type ChatReply,
  LlmOperator,
  type LlmOperatorOptions,
} from './evolve/llm-operator';
export { llmChatFunction, type LlmChatFunctionOptions } from './evolve/llm-chat-function';
export { OperatorKind } from './evolve/operator-kind';
export {
  buildOperatorPrompt,
  type OperatorChatMessage,
  type PromptInput,
} from './evolve/operator-prompts';
export { createProcessEvaluate, type ProcessEvaluateOptions } from './evolve/process-evaluate';
export { MAX_PROGRAM_CHARS, type Program, programHash, ProgramSchema } from './evolve/program';
export { replayJournal } from './evolve/replay-journal';
export { type MigrationMove, type MigrationOutcome, ringMigration } from './evolve/ring-migration';
export {
  activeIntervals,
  type AttemptTimings,
  budgetStopReason,
  type BudgetUsage,
  StopReason,
  type TimeInterval,
  unionLengthMs,
} from './evolve/search-budget';
export type {
  OperatorContext,
  OperatorParent,
  Proposal,
  SearchOperators,
} from './evolve/search-operators';
export {
  type IslandStepper,
  SearchRunner,
  type SearchRunnerDeps,
  type SearchTask,
} from './evolve/search-runner';
export {
  applyJournalRecord,
  budgetUsage,
  comparePositions,
  computeGenerationClose,
  createSearchState,
  type GenerationClose,
  nodesInOrder,
  planGeneration,
  type SearchState,
  type SlotPlan,
  type SlotProgress,
  slotChain,
  slotProgress,
} from './evolve/search-state';
export {
  evolveOptionsFromSpec,
  loadSearchTask,
  type LoadedSearchTask,
  parseSearchTaskSpec,
  renderEvaluatorCommand,
  type SearchTaskSpec,
  SearchTaskSpecSchema,
} from './evolve/search-task-spec';
export { SeededRng } from './evolve/seeded-rng';
export { softmaxOverNormalised } from './evolve/softmax';
export {
  formatParamValue,
  parseTunableParams,
  rewriteTunableParams,
  TUNABLE_PARAM_MARKER,
  type TunableParam,
  TunableParamType,
} from './evolve/tunable-params';
