import { z } from 'zod';

/** A skill version, `name@vN`. */
const SkillRefSchema = z.object({ name: z.string(), version: z.int() }).strict();

/** What happened to the library around one task. */
export const SkillActivitySchema = z
  .object({
    /** Retrieved for the task (newest non-dropped versions). */
    retrieved: z.array(SkillRefSchema).default([]),
    /** Passed `check_skill` in the task's fresh world and were offered to the agent. */
    checked: z.array(SkillRefSchema).default([]),
    /** Failed `check_skill` and were dropped from the library, with the logged reason. */
    dropped: z.array(SkillRefSchema.extend({ reason: z.string() })).default([]),
    /** Library skills the agent's actions called. */
    used: z.array(z.string()).default([]),
    /** Functions of successful actions admitted after grading. */
    admitted: z.array(SkillRefSchema).default([]),
    /** Functions not admitted, and why (same source, task failed under `passed`, ...). */
    skipped: z.array(z.object({ name: z.string(), reason: z.string() }).strict()).default([]),
    /** Functions defined by actions that failed: never candidates. */
    rejected: z.array(z.string()).default([]),
  })
  .strict();
/** What happened to the library around one task. */
export type SkillActivity = z.output<typeof SkillActivitySchema>;

/** One task of a scenario's run, as graded (also its journal record). */
export const SequenceTaskRunSchema = z
  .object({
    taskId: z.string(),
    seed: z.int(),
    passed: z.boolean(),
    /** The grader's reason. */
    reason: z.string(),
    checks: z
      .array(z.object({ name: z.string(), passed: z.boolean(), detail: z.string() }).loose())
      .default([]),
    /** Whether the agent called `complete_task` (its own claim; the grader decides). */
    completed: z.boolean(),
    /** `completed`, `max_steps` or `idle` (the agent stopped acting). */
    stopReason: z.enum(['completed', 'max_steps', 'idle']),
    /** Actions executed. */
    steps: z.int(),
    /** Actions that raised. */
    failedSteps: z.int(),
    promptTokens: z.int(),
    completionTokens: z.int(),
    costUsd: z.number(),
    durationMs: z.int(),
    skills: SkillActivitySchema,
  })
  .strict();
/** One task of a scenario's run. */
export type SequenceTaskRun = z.output<typeof SequenceTaskRunSchema>;

/** One run of a scenario (with or without the library). */
export interface SequenceArmRun {
  arm: 'library' | 'baseline';
  tasks: SequenceTaskRun[];
  /** Scenario goal completion: every task passed. */
  goalCompleted: boolean;
  passed: number;
  steps: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  /** Tasks read back from the journal (finished by an earlier execution). */
  resumed: number;
}

/** Sums a scenario run's tasks. */
export function summariseArm(
  arm: SequenceArmRun['arm'],
  tasks: SequenceTaskRun[],
  resumed: number,
): SequenceArmRun {
  const sum = (f: (t: SequenceTaskRun) => number): number => tasks.reduce((a, t) => a + f(t), 0);
  return {
    arm,
    tasks,
    goalCompleted: tasks.length > 0 && tasks.every((t) => t.passed),
    passed: tasks.filter((t) => t.passed).length,
    steps: sum((t) => t.steps),
    promptTokens: sum((t) => t.promptTokens),
    completionTokens: sum((t) => t.completionTokens),
    costUsd: Math.round(sum((t) => t.costUsd) * 1e6) / 1e6,
    resumed,
  };
}
