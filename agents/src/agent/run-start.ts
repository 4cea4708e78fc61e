import { ErrorCode } from '@troupe/proto';
import type { z } from 'zod';
import type { RunMessageSchema } from './agent-messages';
import type { AgentSessionState, StoredMessage } from './agent-state';
import type { AgentTemplate } from './agent-template';
import { middlewareProblem, type MiddlewarePlugins } from './middleware/build-chain';
import type { ModelNames } from './tools/agent-tool';
import { SANDBOX_TOOLS } from './tools/agent-tools';

/** A new run's start: refused (why), or begun (the messages it added to the conversation). */
export type RunStart =
  | { ok: false; code: ErrorCode; why: string }
  | { ok: true; template: AgentTemplate; added: StoredMessage[] };

/**
 * Starts run `msg` on session `s`, which has no run in progress: refused without a template (the
 * run's or the session's), with a model the registry lacks, with sandbox tools and no sandbox, or
 * with middleware this host cannot run (see {@link middlewareProblem}). The first run's system
 * message is the instruction followed by `promptExtra` (the template's skills and memory policy).
 * Otherwise sets the session's template, sandbox and family, appends the instruction (first run)
 * with any parent history, the pinned texts and the task, and sets the run `running`.
 */
export function startRun(
  s: AgentSessionState,
  msg: z.output<typeof RunMessageSchema>,
  models: ModelNames,
  now: () => number,
  plugins: MiddlewarePlugins = {},
  promptExtra?: string,
): RunStart {
  const template = msg.template ?? s.template;
  if (!template) {
    return {
      ok: false,
      code: ErrorCode.INVALID_ARGUMENT,
      why: '`run.template`: required on the first run of a session',
    };
  }
  if (!models.has(template.model)) {
    return {
      ok: false,
      code: ErrorCode.INVALID_ARGUMENT,
      why: `\`run.template.model\`: '${template.model}' is not in the model registry (registered: ${models.names().join(', ')})`,
    };
  }
  const problem = middlewareProblem(template, models, plugins);
  if (problem) return { ok: false, code: ErrorCode.INVALID_ARGUMENT, why: problem };
  const sandboxId = msg.sandboxId ?? s.sandboxId;
  const needsSandbox: string[] = template.tools.filter((t) => SANDBOX_TOOLS.has(t));
  // Stdio MCP servers run inside the sandbox, never on the agent host.
  for (const m of template.mcp?.servers ?? [])
    if (m.stdio) needsSandbox.push(`mcp server ${m.name}`);
  if (needsSandbox.length > 0 && !sandboxId) {
    return {
      ok: false,
      code: ErrorCode.INVALID_ARGUMENT,
      why: `\`run.sandboxId\`: required because the template holds ${needsSandbox.join(', ')}`,
    };
  }
  s.template = template;
  if (sandboxId) s.sandboxId = sandboxId;
  if (msg.parentSessionId) s.parentSessionId = msg.parentSessionId;
  if (msg.siblings) s.siblings = msg.siblings;
  const added: StoredMessage[] = [];
  if (s.messages.length === 0) {
    const instruction = promptExtra
      ? `${template.instruction}\n\n${promptExtra}`
      : template.instruction;
    added.push({ role: 'system', content: instruction, pinned: true });
    for (const m of msg.history ?? []) if (m.role !== 'system') added.push(m);
  }
  for (const p of msg.pinned ?? []) added.push({ role: 'user', content: p, pinned: true });
  added.push({ role: 'user', content: msg.task, pinned: true });
  s.messages.push(...added);
  s.run = {
    runId: msg.runId,
    status: 'running',
    startedAtMs: now(),
    steps: 0,
    inputTokens: 0,
    outputTokens: 0,
    costUsd: 0,
    continues: 0,
    ...(msg.replyTo ? { replyTo: msg.replyTo } : {}),
    ...(msg.budgetScope ? { budgetScope: msg.budgetScope } : {}),
  };
  return { ok: true, template, added };
}
