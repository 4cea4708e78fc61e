import { invalidArgument, TroupeError } from '@troupe/proto';
import {
  type TaskAgentRunContext,
  type TaskAgentRunner,
  type TaskAgentRunResult,
} from './task-agent-runner';
import { applyFilePatch, parsePatch } from './unified-patch';

/**
 * The `gold` agent: applies the task's reference `solution.patch` to the workspace in its sandbox
 * (reads each file there, applies the hunks exactly, writes it back) instead of calling a model,
 * to validate tasks and harness as SWE-bench does with gold predictions. A task without a patch,
 * or a patch that does not apply, fails the attempt with `INVALID_ARGUMENT` (not retried).
 */
export function createGoldAgentRunner(): TaskAgentRunner {
  return {
    kind: 'gold',
    validate(agent) {
      if (agent !== undefined) {
        throw invalidArgument('spec.agent', 'the gold agent calls no model: remove spec.agent');
      }
    },
    async run(ctx) {
      if (ctx.solutionPatch === undefined) {
        throw invalidArgument(
          `tasks/${ctx.taskId}/solution.patch`,
          'must exist for the gold agent',
        );
      }
      return applyPatchAgent(ctx, ctx.solutionPatch, `tasks/${ctx.taskId}/solution.patch`);
    },
  };
}

/**
 * Applies `patchText` to the workspace in the sandbox (reads each file there, applies the hunks
 * exactly, writes it back): the work of the gold and predictions agents. A patch that does not
 * apply fails with `INVALID_ARGUMENT` naming `field`.
 */
export async function applyPatchAgent(
  ctx: TaskAgentRunContext,
  patchText: string,
  field: string,
): Promise<TaskAgentRunResult> {
  const started = Date.now();
  const files = patchText.trim() === '' ? [] : parsePatch(patchText);
  const trajectory: Record<string, unknown>[] = [];
  for (const file of files) {
    ctx.signal.throwIfAborted();
    const target = file.newPath ?? file.oldPath;
    if (target === null) continue;
    if (file.newPath === null) {
      await ctx.sandbox.removeFile(target, ctx.signal);
      trajectory.push({ type: 'remove', path: target });
      continue;
    }
    const old = file.oldPath === null ? '' : await ctx.sandbox.readFile(file.oldPath, ctx.signal);
    if (old === undefined) {
      throw invalidArgument(
        field,
        `patches ${file.oldPath ?? ''}, which the repository does not have`,
      );
    }
    let next: string;
    try {
      next = applyFilePatch(old, file);
    } catch (err) {
      throw new TroupeError('INVALID_ARGUMENT', `${field}: ${(err as Error).message}`, {
        details: { field, rule: 'must apply' },
      });
    }
    await ctx.sandbox.writeFiles({ [target]: next }, ctx.signal);
    if (file.oldPath !== null && file.oldPath !== target) {
      await ctx.sandbox.removeFile(file.oldPath, ctx.signal);
    }
    trajectory.push({ type: 'apply', path: target, hunks: file.hunks.length });
  }
  trajectory.push({ type: 'finish', durationMs: Date.now() - started });
  return {
    stopReason: 'finished',
    finalText: `applied ${field} (${files.length} file(s))`,
    steps: files.length,
    usage: { promptTokens: 0, completionTokens: 0 },
    costUsd: 0,
    trajectory,
  };
}
