import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

/** A finished task's result as {@link ResultStore} keeps it. */
export const StoredTaskResultSchema = z
  .object({
    version: z.literal(1),
    taskId: z.string(),
    /** Digest of the task (task.yaml, repo, grader, patch) the result is for. */
    taskDigest: z.string(),
    /** Agent kind and settings the result is for. */
    agentKey: z.string(),
    /** The job that produced it. */
    jobId: z.string(),
    finishedUnixMs: z.number(),
    grade: z
      .object({
        passed: z.boolean(),
        score: z.number().optional(),
        stopReason: z.string().optional(),
        costUsd: z.number().optional(),
        promptTokens: z.number().optional(),
        completionTokens: z.number().optional(),
        details: z.record(z.string(), z.unknown()).optional(),
      })
      .strict(),
  })
  .strict();
/** A stored task result. */
export type StoredTaskResult = z.output<typeof StoredTaskResultSchema>;

/**
 * Finished task results on disk, `<dir>/<taskId>/result.json`, written atomically (temp file and
 * rename) once the task is graded: a task interrupted before that has no result and runs again
 * from scratch. A result counts only for the same task digest and agent key.
 */
export class ResultStore {
  constructor(
    /** Absolute folder. */
    readonly dir: string,
  ) {}

  private fileOf(taskId: string): string {
    return path.join(this.dir, taskId, 'result.json');
  }

  /** The complete, valid result of a task for this digest and agent, or `undefined`. */
  read(taskId: string, taskDigest: string, agentKey: string): StoredTaskResult | undefined {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(this.fileOf(taskId), 'utf8'));
    } catch {
      return undefined; // missing or torn: run the task again
    }
    const parsed = StoredTaskResultSchema.safeParse(raw);
    if (!parsed.success) return undefined;
    const r = parsed.data;
    return r.taskId === taskId && r.taskDigest === taskDigest && r.agentKey === agentKey
      ? r
      : undefined;
  }

  /** Stores a task's result (replacing an older one). */
  write(result: StoredTaskResult): void {
    const file = this.fileOf(result.taskId);
    mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(result, null, 2)}\n`);
    renameSync(tmp, file);
  }
}
