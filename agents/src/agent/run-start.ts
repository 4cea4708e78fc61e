import { ErrorCode } from '@troupe/proto';
import type { z } from 'zod';
import type { RunMessageSchema } from './agent-messages';
import type { AgentSessionState, StoredMessage } from './agent-state';
import type { AgentTemplate } from './agent-template';
import { middlewareProblem, type MiddlewarePlugins } from './middleware/build-chain';
import type { ModelNames } from './tools/agent-tool';
import { SANDBOX_TOOLS } from './tools/agent-tools';
import { resolveSandboxes } from '../sandboxes/session-sandboxes';
import { MAIN_SANDBOX } from '../sandboxes/sandbox-template';

/** A new run's start: refused (why), or begun (the messages it added to the conversation). */
export type RunStart =
  | { ok: false; code: ErrorCode; why: string }
  | { ok: true; template: AgentTemplate; added: StoredMessage[] };

/** What {@link startRun} needs besides the session and the message. */
export interface RunStartContext {
  /** The session's id (the ids of the sandboxes its template declares derive from it). */
  sessionId: string;
  models: ModelNames;
  now: () => number;
  /** Middleware plugins this host offers. @default none */
  plugins?: MiddlewarePlugins;
  /** Appended to the first run's system message (the template's skills and memory policy). */
  promptExtra?: string | undefined;
}

/**
 * Starts run `msg` on session `s`, which has no run in progress: refused without a template (the
 * run's or the session's), with a model the registry lacks, with middleware this host cannot run
 * (see {@link middlewareProblem}), or with sandboxes that do not resolve (see
 * {@link resolveSandboxes}: sandbox tools and no sandbox, a name given twice). The first run's
 * system message is the instruction followed by `promptExtra` and the list of sandboxes.
 * Otherwise sets the session's template, sandboxes and family, appends the instruction (first
 * run) with any parent history, the pinned texts and the task, and sets the run `running`.
 */
export function startRun(
  s: AgentSessionState,
  msg: z.output<typeof RunMessageSchema>,
  c: RunStartContext,
): RunStart {
  const { models } = c;
  const template = msg.template ?? s.template;
  if (!template) {
    return {
      ok: false,
      code: ErrorCode.INVALID_ARGUMENT,
      why: '`run.template`: required on the first run of a session',
    };
  }
  if (template.endpoint === undefined && !models.has(template.model)) {
    return {
      ok: false,
      code: ErrorCode.INVALID_ARGUMENT,
      why: `\`run.template.model\`: '${template.model}' is not in the model registry (registered: ${models.names().join(', ')})`,
    };
  }
  const problem = middlewareProblem(template, models, c.plugins ?? {});
  if (problem) return { ok: false, code: ErrorCode.INVALID_ARGUMENT, why: problem };
  const sandboxes = resolveSandboxes({
    sessionId: c.sessionId,
    runId: msg.runId,
    stored: s,
    given: msg,
    declared: template.sandboxes,
    sandboxTools: template.tools.filter((t) => SANDBOX_TOOLS.has(t)),
    subagent: msg.parentSessionId !== undefined,
  });
  if (!sandboxes.ok) return { ok: false, code: ErrorCode.INVALID_ARGUMENT, why: sandboxes.why };
  const promptExtra =
    [c.promptExtra, sandboxes.prompt].filter((t) => t !== undefined).join('\n\n') || undefined;
  // Stdio MCP servers run inside the session's `main` sandbox, never on the agent host.
  const stdioServers = (template.mcp?.servers ?? []).filter((m) => m.stdio).map((m) => m.name);
  if (stdioServers.length > 0 && !Object.hasOwn(sandboxes.held, MAIN_SANDBOX)) {
    return {
      ok: false,
      code: ErrorCode.INVALID_ARGUMENT,
      why: `\`run.sandboxId\`: required because the template's MCP servers ${stdioServers.join(', ')} run in the main sandbox (or declare \`template.sandboxes.main\`)`,
    };
  }
  s.template = template;
  delete s.sandboxId; // read into `sandboxes` as a given `main`
  if (Object.keys(sandboxes.held).length > 0) s.sandboxes = sandboxes.held;
  else delete s.sandboxes;
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
    startedAtMs: c.now(),
    steps: 0,
    inputTokens: 0,
    outputTokens: 0,
    costUsd: 0,
    continues: 0,
    ...(msg.replyTo ? { replyTo: msg.replyTo } : {}),
    ...(msg.budgetScope ? { budgetScope: msg.budgetScope } : {}),
    ...(msg.jobId ? { jobId: msg.jobId } : {}),
  };
  return { ok: true, template, added };
}
