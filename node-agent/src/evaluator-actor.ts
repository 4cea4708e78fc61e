import { posix } from 'node:path';
import {
  type ActorContext,
  ActorRef,
  defineActor,
  type HandlerResult,
  type RefFactory,
} from '@troupe/actors';
import { ErrorCode, formatAddress, type Logger, noopLogger, TroupeError } from '@troupe/proto';
import { type z } from 'zod';
import { type ArtifactStore } from './artifact-store';
import { Evaluator, type EvaluatorOptions } from './evaluator';
import {
  EVALUATOR_KIND,
  type EvaluatorActorState,
  EvaluatorActorStateSchema,
  EvaluatorMessages,
  type GradeMessageSchema,
  type GradeReply,
} from './evaluator-actor-messages';
import { type ImagePreparer } from './image-resolver';
import { notFoundAt, passivateAfterTurn, type PassivateFn } from './internal/actor-support';
import { digestOf } from './internal/canonical-json';
import type { SandboxBackend } from './sandbox-backend';

/** What a caller passes to {@link createEvaluatorActor}. */
export interface EvaluatorActorOptions {
  /** Where grading sandboxes come from (Docker in production). */
  backend: SandboxBackend;
  /** The cluster's artifact store: inputs come from it, logs and grades go to it. */
  artifacts: ArtifactStore;
  /** Cluster name, for the `troupe.cluster` label. */
  cluster: string;
  /** This host's id, for the `troupe.host` label. */
  hostId: string;
  /** Prepares an image before first use. @default none */
  images?: ImagePreparer;
  /**
   * Passivates the activation after each grade: an evaluator holds nothing between grades, so its
   * slot goes back at once. @default none (passivate after `idleTimeoutMs`)
   */
  passivate?: PassivateFn;
  /**
   * Settings of the grading sandboxes and the grader (see {@link Evaluator}).
   * @default defaultTimeoutMs 600000, memoryMb 1024, cpus 1, pidsLimit 256, maxLogBytes 1048576
   */
  evaluator?: Partial<Omit<EvaluatorOptions, 'backend' | 'logger' | 'labels'>>;
  /** Grades remembered per evaluator id for replays (oldest forgotten first). @default 500 */
  maxStoredGrades?: number;
  /** Passivate after this long without a message. @default 60000 */
  idleTimeoutMs?: number;
  /** Logger. @default a logger that drops everything */
  logger?: Logger;
}

type State = EvaluatorActorState;
type Ctx = ActorContext<State>;

/**
 * Defines the `evaluator` actor kind: `grade` runs the library {@link Evaluator} in a fresh
 * sandbox with the workspace and grader tars from the artifact store, stores the full logs and
 * the grade as artifacts (`<logPrefix>/grade-<gradeId>/stdout.log|stderr.log|grade.json`) and
 * replies with the structured grade. Idempotent per `gradeId`: a replay returns the stored grade
 * (`replayed: true`) without grading again; the same id with a different request is
 * `ALREADY_EXISTS`. Infrastructure failures (no sandbox could be made, the store is down) are
 * errors; a grader that cannot run is a grade with status `error`.
 */
export function createEvaluatorActor(options: EvaluatorActorOptions) {
  const { backend, artifacts, cluster, hostId } = options;
  const maxStoredGrades = options.maxStoredGrades ?? 500;
  const log = (options.logger ?? noopLogger).child({ component: 'evaluator-actor' });

  const grade = async (
    ctx: Ctx,
    msg: z.output<typeof GradeMessageSchema>,
    state: State,
  ): Promise<HandlerResult<State, GradeReply>> => {
    const { gradeId } = msg;
    const requestDigest = digestOf({ ...msg, gradeId: undefined });
    const stored = state.grades[gradeId];
    if (stored) {
      if (stored.requestDigest !== requestDigest) {
        throw new TroupeError(
          ErrorCode.ALREADY_EXISTS,
          `grade.gradeId: grade ${gradeId} was made for a different request`,
          { details: { field: 'grade.gradeId', gradeId } },
        );
      }
      const bytes = await artifacts.get(stored.artifact, { signal: ctx.signal });
      const previous = JSON.parse(Buffer.from(bytes).toString('utf8')) as GradeReply;
      return { reply: { ...previous, replayed: true } };
    }
    const signal = ctx.signal;
    const prefix = msg.logPrefix ?? defaultPrefix(msg.workspaceArtifact);
    const base = `${prefix}/grade-${gradeId}`;
    await options.images?.prepare(msg.image, { signal });
    const grader = await artifacts.get(msg.graderArtifact, { signal }).catch((err: unknown) => {
      throw notFoundAt(err, 'grade.graderArtifact');
    });
    const workspace = await artifacts
      .getStream(msg.workspaceArtifact, { signal })
      .catch((err: unknown) => {
        throw notFoundAt(err, 'grade.workspaceArtifact');
      });
    const evaluator = new Evaluator({
      ...options.evaluator,
      backend,
      labels: { cluster, host: hostId, actor: formatAddress(ctx.self), job: msg.jobId ?? '' },
      logger: ctx.log,
    });
    let result;
    try {
      result = await evaluator.grade({
        workspaceTar: workspace.stream,
        graderFiles: grader,
        image: msg.image,
        ...(msg.command ? { command: msg.command } : {}),
        ...(msg.workdir ? { workdir: msg.workdir } : {}),
        ...(msg.timeoutMs !== undefined ? { timeoutMs: msg.timeoutMs } : {}),
        ...(msg.env ? { env: msg.env } : {}),
        ...(msg.jobId ? { jobId: msg.jobId } : {}),
        signal,
      });
    } finally {
      workspace.stream.destroy();
    }
    const meta = { gradeId, evaluator: ctx.self.id, ...(msg.jobId ? { jobId: msg.jobId } : {}) };
    const logArtifacts = { stdout: `${base}/stdout.log`, stderr: `${base}/stderr.log` };
    await artifacts.put(logArtifacts.stdout, Buffer.from(result.logs.stdout), {
      contentType: 'text/plain; charset=utf-8',
      meta,
      signal,
    });
    await artifacts.put(logArtifacts.stderr, Buffer.from(result.logs.stderr), {
      contentType: 'text/plain; charset=utf-8',
      meta,
      signal,
    });
    const reply: GradeReply = {
      gradeId,
      status: result.status,
      exitCode: result.exitCode,
      stdoutTail: result.stdoutTail,
      stderrTail: result.stderrTail,
      durationMs: result.durationMs,
      graderDigest: result.graderDigest,
      workspaceDigest: workspace.info.digest,
      logArtifacts,
      replayed: false,
      ...(result.score !== undefined ? { score: result.score } : {}),
      ...(result.report !== undefined ? { report: result.report } : {}),
      ...(result.error !== undefined ? { error: result.error } : {}),
    };
    const artifact = `${base}/grade.json`;
    await artifacts.put(artifact, Buffer.from(JSON.stringify(reply)), {
      contentType: 'application/json',
      meta,
      signal,
    });
    const grades = {
      ...state.grades,
      [gradeId]: { requestDigest, artifact, status: result.status, atMs: Date.now() },
    };
    const order = [...state.order.filter((id) => id !== gradeId), gradeId];
    while (order.length > maxStoredGrades) delete grades[order.shift() as string];
    return { state: { grades, order }, reply };
  };

  return defineActor({
    kind: EVALUATOR_KIND,
    state: EvaluatorActorStateSchema,
    initialState: (): State => ({ grades: {}, order: [] }),
    messages: EvaluatorMessages,
    handlers: {
      grade: async (ctx: Ctx, msg: z.output<typeof GradeMessageSchema>, state: State) => {
        try {
          return await grade(ctx, msg, state);
        } finally {
          passivateAfterTurn(options.passivate, ctx, log);
        }
      },
    },
    idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
  });
}

/** The evaluator actor's definition type (for typed refs). */
export type EvaluatorActorDefinition = ReturnType<typeof createEvaluatorActor>;

/** A typed ref to evaluator `id` from any process (no backend needed). */
export function evaluatorRef(refs: RefFactory, id: string): ActorRef<EvaluatorActorDefinition> {
  return new ActorRef<EvaluatorActorDefinition>(refs.refOf({ kind: EVALUATOR_KIND, id }));
}

/** The workspace artifact's folder, or `grades` for a name without one. */
function defaultPrefix(workspaceArtifact: string): string {
  const dir = posix.dirname(workspaceArtifact);
  return dir === '.' ? 'grades' : dir;
}
