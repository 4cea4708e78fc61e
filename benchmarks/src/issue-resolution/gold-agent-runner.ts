import { invalidArgument, TroupeError } from '@troupe/proto';
import { type TaskAgentRunner } from './task-agent-runner';
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
      const started = Date.now();
      if (ctx.solutionPatch === undefined) {
        throw invalidArgument(
          `tasks/${ctx.taskId}/solution.patch`,
          'must exist for the gold agent',
        );
      }
      const files = parsePatch(ctx.solutionPatch);
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
        const old =
          file.oldPath === null ? '' : await ctx.sandbox.readFile(file.oldPath, ctx.signal);
        if (old === undefined) {
          throw invalidArgument(
            `tasks/${ctx.taskId}/solution.patch`,
            `patches ${file.oldPath ?? ''}, which the repository does not have`,
          );
        }
        let next: string;
        try {
          next = applyFilePatch(old, file);
        } catch (err) {
          throw new TroupeError(
            'INVALID_ARGUMENT',
            `tasks/${ctx.taskId}/solution.patch: ${(err as Error).message}`,
            { details: { field: `tasks/${ctx.taskId}/solution.patch`, rule: 'must apply' } },
          );
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
        finalText: `applied solution.patch (${files.length} file(s))`,
        steps: files.length,
        usage: { promptTokens: 0, completionTokens: 0 },
        costUsd: 0,
        trajectory,
      };
    },
  };
}
