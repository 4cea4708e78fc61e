import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { invalidArgument, type Logger, noopLogger, parseWith, throwIfAborted } from '@troupe/proto';
import { z } from 'zod';
import { collect, packDirectory, sha256Hex } from './internal/tar';
import type { Sandbox } from './sandbox';
import type { SandboxBackend } from './sandbox-backend';
import { SandboxLabelsSchema } from './sandbox-spec';

/** Where the grader files are mounted (a root-owned volume the sandbox user can only read). */
export const GRADER_DIR = '/grader';
/** A tmpfs outside the workspace where the grader may write its report. */
export const GRADER_OUT_DIR = '/grader-out';
/** The report the grader may write: JSON with an optional numeric `score`. */
export const GRADER_REPORT_FILE = `${GRADER_OUT_DIR}/report.json`;

const MAX_REPORT_BYTES = 256 * 1024;
const TAIL_BYTES = 4096;

/** Validated settings of an {@link Evaluator}. */
export const EvaluatorConfigSchema = z
  .object({
    /** Owner labels of grading sandboxes (`job` may be set per request). */
    labels: SandboxLabelsSchema,
    /** Grading time limit when a request gives none. @default 600000 */
    defaultTimeoutMs: z.int().min(1).default(600_000),
    /** Memory limit of grading sandboxes. @default 1024 */
    memoryMb: z.int().min(16).default(1024),
    /** CPU limit of grading sandboxes. @default 1 */
    cpus: z.number().min(0.01).default(1),
    /** Pids limit of grading sandboxes. @default 256 */
    pidsLimit: z.int().min(8).default(256),
    /** Output kept per stream of the grader (head + tail). @default 1048576 */
    maxLogBytes: z
      .int()
      .min(1024)
      .default(1024 * 1024),
  })
  .strict();

/** Validated settings of an {@link Evaluator}. */
export type EvaluatorConfig = z.output<typeof EvaluatorConfigSchema>;

/** Options of {@link Evaluator}. */
export interface EvaluatorOptions extends z.input<typeof EvaluatorConfigSchema> {
  /** Where grading sandboxes come from (Docker in production). */
  backend: SandboxBackend;
  /** Logger. @default a logger that drops everything */
  logger?: Logger;
}

/** Bytes of a tar, or a stream of them. */
export type TarSource = Uint8Array | Readable;

/** One grading request. */
export interface GradeRequest {
  /** The exported workspace (a tar of the workspace's contents). */
  workspaceTar: TarSource;
  /** The hidden grader files: a tar, or a host directory path to pack. */
  graderFiles: TarSource | string;
  /** Image to grade in (the task's image). */
  image: string;
  /** The grader command (cwd: the workspace). @default ['bash', '/grader/run-tests.sh'] */
  command?: string[];
  /** Where the workspace goes (the sandbox's workdir). @default /workspace */
  workdir?: string;
  /** Time limit; the whole process tree is killed after it. @default 600000 (config) */
  timeoutMs?: number;
  /** Extra environment for the grader (no secret-looking keys). @default {} */
  env?: Record<string, string>;
  /** Job id for the sandbox's labels. @default the evaluator's */
  jobId?: string;
  /** Aborts grading (the sandbox is destroyed). */
  signal?: AbortSignal;
}

/** How grading went. */
export type GradeStatus = 'passed' | 'failed' | 'error' | 'timeout';

/** A structured grade. */
export interface GradeResult {
  /**
   * `passed`: exit 0 and no output line starting with `FAILED`; `failed`: anything else the
   * grader reported; `timeout`: the time limit passed; `error`: the grader could not run (exit
   * 126/127, a malformed report) — not a verdict on the workspace.
   */
  status: GradeStatus;
  /** `score` from the grader's report, when it wrote one. */
  score?: number;
  /** The parsed report, when the grader wrote {@link GRADER_REPORT_FILE}. */
  report?: Record<string, unknown>;
  /** The grader's exit status. */
  exitCode: number;
  /** Last 4 KiB of stdout. */
  stdoutTail: string;
  /** Last 4 KiB of stderr. */
  stderrTail: string;
  /** Time the grader ran. */
  durationMs: number;
  /** sha256 (hex) of the grader tar as delivered into the sandbox. */
  graderDigest: string;
  /** The grader's output (head and tail within `maxLogBytes` per stream). */
  logs: { stdout: string; stderr: string };
  /** Why the status is `error`. */
  error?: string;
}

const GradeRequestSchema = z
  .object({
    image: z.string().min(1),
    command: z
      .array(z.string())
      .min(1)
      .default(['bash', `${GRADER_DIR}/run-tests.sh`]),
    workdir: z.string().optional(),
    timeoutMs: z.int().min(1).optional(),
    env: z.record(z.string(), z.string()).default({}),
    jobId: z.string().optional(),
  })
  .strict();

/**
 * Grades a workspace in a fresh sandbox: the workspace goes to `/workspace` (owned by the sandbox
 * user), the hidden grader files to `/grader` (a separate volume, owned by root, so neither the
 * agent's code nor anything in the workspace can change them, and absolute paths mean a
 * workspace file named like the grader is never run instead of it), the report to a tmpfs at
 * `/grader-out`. The sandbox is destroyed afterwards, whatever happened.
 *
 * The grader sees `GRADER_DIR`, `GRADER_REPORT_FILE` and `WORKSPACE` in its environment.
 */
export class Evaluator {
  /** Validated settings. */
  readonly config: EvaluatorConfig;
  private readonly backend: SandboxBackend;
  private readonly log: Logger;

  constructor(options: EvaluatorOptions) {
    const { backend, logger, ...rest } = options;
    this.config = parseWith(EvaluatorConfigSchema, rest, { prefix: 'options' });
    this.backend = backend;
    this.log = (logger ?? noopLogger).child({ component: 'evaluator' });
  }

  /**
   * Runs one grading.
   * @throws TroupeError `INVALID_ARGUMENT` for a bad request, `UNAVAILABLE` when no sandbox can be
   *   created, `CANCELLED` when aborted
   */
  async grade(request: GradeRequest): Promise<GradeResult> {
    const { workspaceTar, graderFiles, signal, ...rest } = request;
    const req = parseWith(GradeRequestSchema, rest, { prefix: 'request' });
    throwIfAborted(signal);
    const graderTar = await this.graderBytes(graderFiles);
    const graderDigest = sha256Hex(graderTar);
    const workspace = workspaceTar instanceof Uint8Array ? Buffer.from(workspaceTar) : workspaceTar;
    const labels = { ...this.config.labels, job: req.jobId ?? this.config.labels.job };
    const log = this.log.child({ jobId: labels.job, graderDigest: graderDigest.slice(0, 12) });
    const sandbox: Sandbox = await this.backend.create(
      {
        image: req.image,
        ...(req.workdir !== undefined ? { workdir: req.workdir } : {}),
        memoryMb: this.config.memoryMb,
        cpus: this.config.cpus,
        pidsLimit: this.config.pidsLimit,
        volumes: [GRADER_DIR],
        tmpfs: { [GRADER_OUT_DIR]: 16 },
        labels,
      },
      { signal },
    );
    try {
      await sandbox.putFiles(sandbox.spec.workdir, workspace, { owner: 'sandbox', signal });
      await sandbox.putFiles(GRADER_DIR, graderTar, { owner: 'root', signal });
      const run = await sandbox.exec(req.command, {
        cwd: sandbox.spec.workdir,
        env: {
          ...req.env,
          GRADER_DIR,
          GRADER_REPORT_FILE,
          WORKSPACE: sandbox.spec.workdir,
        },
        timeoutMs: req.timeoutMs ?? this.config.defaultTimeoutMs,
        maxOutputBytes: this.config.maxLogBytes,
        signal,
      });
      const result: GradeResult = {
        status: 'failed',
        exitCode: run.exitCode,
        stdoutTail: tail(run.stdout),
        stderrTail: tail(run.stderr),
        durationMs: run.durationMs,
        graderDigest,
        logs: { stdout: run.stdout, stderr: run.stderr },
      };
      if (run.timedOut) {
        result.status = 'timeout';
      } else if (run.exitCode === 126 || run.exitCode === 127 || run.exitCode < 0) {
        result.status = 'error';
        result.error = `the grader could not run (exit ${run.exitCode}): ${tail(run.stderr, 300).trim()}`;
      } else {
        const failedLine = /^FAILED/m.test(run.stdout) || /^FAILED/m.test(run.stderr);
        result.status = run.exitCode === 0 && !failedLine ? 'passed' : 'failed';
      }
      if (result.status !== 'timeout') await this.readReport(sandbox, result, signal);
      log.info(
        { status: result.status, score: result.score, exitCode: run.exitCode, ms: run.durationMs },
        'graded',
      );
      return result;
    } finally {
      await sandbox.destroy().catch((err: unknown) => {
        log.warn({ err }, 'grading sandbox not destroyed (the reaper will remove it)');
      });
    }
  }

  private async graderBytes(files: TarSource | string): Promise<Buffer> {
    if (typeof files === 'string') {
      const st = await stat(files).catch(() => undefined);
      if (!st?.isDirectory()) {
        throw invalidArgument(
          'request.graderFiles',
          'must be a tar or an existing directory',
          files,
        );
      }
      return packDirectory(files, { owner: { uid: 0, gid: 0 } });
    }
    if (files instanceof Uint8Array) return Buffer.from(files);
    if (files instanceof Readable) return collect(files);
    throw invalidArgument(
      'request.graderFiles',
      'must be a tar (bytes or stream) or a directory path',
    );
  }

  private async readReport(
    sandbox: Sandbox,
    result: GradeResult,
    signal?: AbortSignal,
  ): Promise<void> {
    const read = await sandbox.exec(['cat', GRADER_REPORT_FILE], {
      timeoutMs: 10_000,
      maxOutputBytes: MAX_REPORT_BYTES,
      signal,
    });
    if (read.exitCode !== 0) return; // no report: the exit status is the verdict
    let report: unknown;
    try {
      if (read.stdoutDroppedBytes > 0) throw new Error(`larger than ${MAX_REPORT_BYTES} bytes`);
      report = JSON.parse(read.stdout);
      if (typeof report !== 'object' || report === null || Array.isArray(report)) {
        throw new Error('not a JSON object');
      }
    } catch (err) {
      result.status = 'error';
      result.error = `malformed ${GRADER_REPORT_FILE}: ${(err as Error).message}`;
      return;
    }
    result.report = report as Record<string, unknown>;
    const score = (report as { score?: unknown }).score;
    if (typeof score === 'number' && Number.isFinite(score)) result.score = score;
  }
}

function tail(text: string, bytes = TAIL_BYTES): string {
  const buf = Buffer.from(text);
  return buf.length <= bytes ? text : buf.subarray(buf.length - bytes).toString('utf8');
}
