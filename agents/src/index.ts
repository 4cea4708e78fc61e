/** @packageDocumentation @troupe/agents: LLM client, agent actor, tools, subagents, skills, evolution and RSI roles. */
export const PACKAGE_NAME = '@troupe/agents';
