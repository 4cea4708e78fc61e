/**
 * @packageDocumentation
 * @troupe/agents: the agent actor — sessions, tools, subagents, compaction and trajectories. The
 * model registry and LLM client are @troupe/llm, the evolutionary search @troupe/evolve. Exports
 * what the other packages use, plus the two entry points docs/agents.md shows users
 * (`cancelAgentRun`, `trajectoriesToJsonl`); the package's own tests import the rest by path.
 */
export { createAgentActor } from './agent/agent-actor';
export { cancelAgentRun, runAgentSession, startAgentSession } from './agent/agent-session';
export { AgentStopReason } from './agent/agent-stop-reason';
export {
  type AgentTemplateInput,
  ModelEndpointSchema,
  type SamplingInput,
  SamplingSchema,
} from './agent/agent-template';
export { toolDefinition } from './agent/agent-tool-args';
export { AgentToolName } from './agent/agent-tool-name';
export { ActorSandboxPort } from './agent/actor-sandbox-port';
export { type AgentTemplate, parseAgentTemplate } from './agent/agent-template';
export { type ToolContext } from './agent/tools/agent-tool';
export { AGENT_TOOLS, runToolCall } from './agent/tools/agent-tools';
export { type TrajectoryEvent } from './agent/trajectory-event';
export {
  trajectoriesToJsonl,
  type TrajectoryJsonlRecord,
  trajectoryToRecord,
} from './agent/trajectory-jsonl';
export { TrajectoryStore } from './agent/trajectory-store';
export {
  ActorSandboxProvisioner,
  type ActorSandboxProvisionerOptions,
  type SandboxProvisioner,
} from './sandboxes/sandbox-provisioner';
export { type SandboxGrant, type TemplateSandbox } from './sandboxes/sandbox-template';
export {
  type AgentMiddleware,
  type AfterModelVerdict,
  type AfterToolVerdict,
  type BeforeModelVerdict,
  type BeforeToolVerdict,
  type MiddlewareContext,
  type ToolOutcomeView,
} from './agent/middleware/middleware';
export { type MiddlewarePlugin, type MiddlewarePlugins } from './agent/middleware/build-chain';
export { parseSkillMarkdown, type Skill, SkillNameSchema, SkillSchema } from './skills/skill';
export { loadSkillFolder, loadSkillsDir, SKILL_FILE } from './skills/skill-folder';
export { type SkillSource, SkillStore, type SkillStoreOptions } from './skills/skill-store';
export {
  type MemoryEntry,
  type MemoryHit,
  MemoryStore,
  type MemoryStoreOptions,
  rankMemory,
  type VersionedMemoryEntry,
} from './memory/memory-store';
export {
  MCP_SERVER_NAME,
  MCP_TOOL_PREFIX,
  type McpConfig,
  type McpConfigInput,
  McpConfigSchema,
  type McpServerConfig,
  McpServerSchema,
  mcpServerOf,
  mcpToolName,
} from './mcp/mcp-config';
export { mcpArgumentsProblem } from './mcp/mcp-args';
export { McpSessions } from './mcp/mcp-sessions';
export {
  SandboxStdioTransport,
  type SandboxStdioTransportOptions,
} from './mcp/sandbox-stdio-transport';
export {
  Bm25Retriever,
  type Bm25RetrieverOptions,
  skillTerms,
} from './skill-library/bm25-retriever';
export { type ExtractedFunction, extractFunctions } from './skill-library/extract-functions';
export {
  AdmissionPolicy,
  type AdmitOutcome,
  DEFAULT_RETRIEVE_LIMIT,
  SkillLibrary,
  type SkillLibraryOptions,
} from './skill-library/skill-library';
export {
  type SkillProvenance,
  SkillProvenanceSchema,
  type SkillRecord,
  SkillRecordSchema,
  SkillLibraryLimits,
  skillSourceHash,
} from './skill-library/skill-record';
export { type SkillQuery, type SkillRetriever } from './skill-library/skill-retriever';
