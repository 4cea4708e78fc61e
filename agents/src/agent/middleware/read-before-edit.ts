import { posix } from 'node:path';
import { AgentToolName } from '../agent-tool-name';
import type { AgentMiddleware } from './middleware';
import { conversationCalls, isErrorResult } from './conversation-calls';

/** The `path` argument of a file tool's call, normalised; undefined when it has none. */
function pathOf(argumentsText: string): string | undefined {
  try {
    const args: unknown = JSON.parse(argumentsText);
    const p = (args as { path?: unknown } | null)?.path;
    return typeof p === 'string' && p.length > 0 ? posix.normalize(p) : undefined;
  } catch {
    return undefined;
  }
}

/** Calls that show the agent a file's content: viewing it, or writing it whole. */
const READS = new Set<string>([AgentToolName.VIEW_FILE, AgentToolName.WRITE_FILE]);

/**
 * `read_before_edit`: refuses `edit_file` on a path that no successful `view_file` (or
 * `write_file`) of this conversation showed the agent — an edit made blind tends to match the
 * wrong text. Derived from the conversation, so a compaction that dropped the view asks for
 * another one.
 */
export function readBeforeEdit(): AgentMiddleware {
  return {
    name: 'read_before_edit',
    beforeTool(ctx, call) {
      if (call.name !== AgentToolName.EDIT_FILE) return undefined;
      const path = pathOf(call.argumentsText);
      if (path === undefined) return undefined; // the tool itself names the bad argument
      const seen = conversationCalls(ctx.session.messages).some(
        (c) =>
          READS.has(c.call.name) &&
          c.result !== undefined &&
          !isErrorResult(c.result) &&
          pathOf(c.call.argumentsText) === path,
      );
      if (seen) return undefined;
      return {
        block: `\`arguments.path\`: view ${path} with view_file before editing it (this agent's read_before_edit rule)`,
      };
    },
  };
}
