import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TroupeError } from '@troupe/proto';
import { type Evaluate, type EvaluationRequest } from '../../src/evaluation-request';
import { type EvaluatorResult, parseEvaluatorOutput } from '../../src/evaluator-result';

/** What a caller passes to {@link createProcessEvaluate}. */
export interface ProcessEvaluateOptions {
  /** The evaluator command for a request; `programPath` is where the program was written. */
  command: (request: EvaluationRequest, programPath: string) => string[];
  /**
   * Evaluations running at once; further calls wait (and that wait is reported as queue time).
   * @default 1
   */
  concurrency?: number;
  /** Parent of the per-evaluation temp directories. @default os.tmpdir() */
  workDir?: string;
  /** File name the program is written to. @default `program.py` for python, else `program.txt` */
  programFile?: (language: string) => string;
  /** The evaluator's environment. @default this process's */
  env?: NodeJS.ProcessEnv;
}

const MAX_STDOUT_BYTES = 1 << 20;
const STDERR_TAIL_CHARS = 2_000;

/**
 * **Test-only.** An {@link Evaluate} that runs the evaluator command as a child process of this
 * host (e.g. the suite's `grader/evaluate.py` under the host's `python3`), with the program in a
 * temp file and a hard kill of the whole process group at `timeoutMs`. It isolates nothing — no
 * sandbox, network allowed, the host's user — so it is for tests and local experiments with
 * trusted programs only; production searches get the driver's evaluate, which runs evaluators in
 * the node agent's sandboxes.
 *
 * Outcomes: the evaluator's JSON line is the result; a kill at the deadline is a `timeout`
 * result; a non-zero exit or a missing/malformed line is an infrastructure failure
 * (`UNAVAILABLE`, which the search retries once).
 */
export function createProcessEvaluate(options: ProcessEvaluateOptions): Evaluate {
  const limit = Math.max(1, options.concurrency ?? 1);
  let running = 0;
  const waiting: (() => void)[] = [];
  const acquire = async (signal: AbortSignal): Promise<void> => {
    if (running < limit) {
      running++;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const go = (): void => {
        signal.removeEventListener('abort', onAbort);
        running++;
        resolve();
      };
      const onAbort = (): void => {
        const i = waiting.indexOf(go);
        if (i >= 0) waiting.splice(i, 1);
        reject(signal.reason as Error);
      };
      waiting.push(go);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  };
  const release = (): void => {
    running--;
    waiting.shift()?.();
  };
  const fileFor =
    options.programFile ?? ((lang: string) => (lang === 'python' ? 'program.py' : 'program.txt'));

  return async (request, { signal, onStart }) => {
    signal.throwIfAborted();
    await acquire(signal);
    const dir = await mkdtemp(path.join(options.workDir ?? tmpdir(), 'troupe-eval-'));
    try {
      onStart?.();
      const programPath = path.join(dir, fileFor(request.program.language));
      await writeFile(programPath, request.program.source);
      return await runEvaluator(
        options.command(request, programPath),
        dir,
        request,
        signal,
        options.env,
      );
    } finally {
      release();
      await rm(dir, { recursive: true, force: true });
    }
  };
}

async function runEvaluator(
  argv: string[],
  cwd: string,
  request: EvaluationRequest,
  signal: AbortSignal,
  env: NodeJS.ProcessEnv | undefined,
): Promise<EvaluatorResult> {
  const [cmd, ...args] = argv;
  if (!cmd) throw new TroupeError('INVALID_ARGUMENT', 'evaluator command is empty');
  signal.throwIfAborted();
  const started = Date.now();
  const child = spawn(cmd, args, {
    cwd,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(env ? { env } : {}),
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    if (stdout.length < MAX_STDOUT_BYTES) stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr = (stderr + d).slice(-STDERR_TAIL_CHARS);
  });
  let killedAtDeadline = false;
  const killGroup = (): void => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  const timer = setTimeout(() => {
    killedAtDeadline = true;
    killGroup();
  }, request.timeoutMs);
  const onAbort = (): void => killGroup();
  signal.addEventListener('abort', onAbort, { once: true });
  // An abort that came while the program file was being written fired no event for us.
  if (signal.aborted) killGroup();
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (c) => resolve(c));
    });
    signal.throwIfAborted();
    if (killedAtDeadline) {
      return {
        status: 'timeout',
        score: null,
        signature: [],
        metrics: { reason: `evaluator killed at its deadline of ${request.timeoutMs} ms` },
        stderrTail: stderr,
        evalMs: Date.now() - started,
        evaluatorVersion: 'unknown',
      };
    }
    if (code !== 0) {
      throw new TroupeError('UNAVAILABLE', `evaluator exited with status ${String(code)}`, {
        details: { stderrTail: stderr.slice(-500) },
      });
    }
    return parseEvaluatorOutput(stdout);
  } catch (err) {
    if (err instanceof TroupeError || signal.aborted) throw err;
    throw new TroupeError('UNAVAILABLE', 'evaluator could not run', { cause: err });
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
  }
}
