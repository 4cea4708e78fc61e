/** Names of the tools an agent template may hold. */
export const AgentToolName = {
  RUN_TERMINAL_COMMAND: 'run_terminal_command',
  VIEW_FILE: 'view_file',
  EDIT_FILE: 'edit_file',
  WRITE_FILE: 'write_file',
  FINISH_TASK: 'finish_task',
  CREATE_SUBAGENT: 'create_subagent',
  CALL_SUBAGENT: 'call_subagent',
  SEND_MESSAGE: 'send_message',
  LIST_AGENTS: 'list_agents',
  LOAD_SKILL: 'load_skill',
  MEMORY_WRITE: 'memory_write',
  MEMORY_SEARCH: 'memory_search',
  MEMORY_READ: 'memory_read',
} as const;
/** One of {@link AgentToolName}. */
export type AgentToolName = (typeof AgentToolName)[keyof typeof AgentToolName];

/** Every tool name, in a stable order. */
export const AGENT_TOOL_NAMES: readonly AgentToolName[] = Object.values(AgentToolName);
