import { z } from 'zod';
import { ArtifactNameSchema } from './artifact-store';
import type { GradeStatus } from './evaluator';
import { JobIdSchema } from './sandbox-actor-messages';

/** Actor kind of evaluators. */
export const EVALUATOR_KIND = 'evaluator';

/** `grade`: grades an exported workspace with hidden grader files, in a fresh sandbox. */
export const GradeMessageSchema = z
  .object({
    /** Idempotency key: a repeated `grade` with the same id returns the stored grade. */
    gradeId: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'must match [A-Za-z0-9_-]{1,128}'),
    /** Object name of the workspace tar (its contents, as `exportFiles` of `/workspace/.` writes). */
    workspaceArtifact: ArtifactNameSchema,
    /** Object name of the grader tar (unpacked to `/grader`, read-only for the grader). */
    graderArtifact: ArtifactNameSchema,
    /** Image to grade in (the task's image). */
    image: z.string().min(1).max(256),
    /** Grader command, cwd the workspace. @default ['bash', '/grader/run-tests.sh'] */
    command: z.array(z.string()).min(1).optional(),
    /** Where the workspace goes in the grading sandbox (e.g. `/testbed`). @default /workspace */
    workdir: z.string().min(1).max(256).optional(),
    /** Time limit of the grader. @default 600000 (node agent config) */
    timeoutMs: z.int().min(1).optional(),
    /** Extra environment for the grader (no secret-looking keys). */
    env: z.record(z.string(), z.string()).optional(),
    /** Job id, for the grading sandbox's labels. */
    jobId: JobIdSchema.optional(),
    /**
     * Where the logs go: `<logPrefix>/grade-<gradeId>/{stdout.log,stderr.log,grade.json}`.
     * @default the workspace artifact's folder (`jobs/j1/tasks/t1` for `jobs/j1/tasks/t1/workspace.tar`)
     */
    logPrefix: ArtifactNameSchema.optional(),
  })
  .strict();
/** Payload of `grade`. */
export type GradeMessage = z.input<typeof GradeMessageSchema>;

/** Every message of the evaluator actor, by type. */
export const EvaluatorMessages = { grade: GradeMessageSchema } as const;

/** Reply to `grade`. */
export interface GradeReply {
  gradeId: string;
  /** `passed` / `failed` are verdicts; `error` (the grader could not run) and `timeout` are not. */
  status: GradeStatus;
  /** `score` from the grader's report. */
  score?: number;
  /** The grader's JSON report, when it wrote one. */
  report?: Record<string, unknown>;
  exitCode: number;
  /** Last 4 KiB of the grader's stdout. */
  stdoutTail: string;
  /** Last 4 KiB of the grader's stderr. */
  stderrTail: string;
  durationMs: number;
  /** sha256 hex of the grader tar (equals its artifact's digest). */
  graderDigest: string;
  /** sha256 hex of the workspace tar artifact. */
  workspaceDigest: string;
  /** Object names of the full logs (head and tail within the configured `maxLogBytes`). */
  logArtifacts: { stdout: string; stderr: string };
  /** Why the status is `error`. */
  error?: string;
  /** True when this is the stored grade of an earlier `grade` with the same `gradeId`. */
  replayed: boolean;
}

/** Persisted state of an evaluator actor: the grades it made, by id (bounded, oldest dropped). */
export const EvaluatorActorStateSchema = z.object({
  grades: z.record(
    z.string(),
    z.object({
      /** sha256 of the request, to refuse a different request under the same id. */
      requestDigest: z.string(),
      /** Object name of the stored reply (`…/grade-<id>/grade.json`). */
      artifact: z.string(),
      status: z.enum(['passed', 'failed', 'error', 'timeout']),
      atMs: z.number(),
    }),
  ),
  /** Grade ids, oldest first. */
  order: z.array(z.string()),
});
/** Persisted state of an evaluator actor. */
export type EvaluatorActorState = z.infer<typeof EvaluatorActorStateSchema>;
