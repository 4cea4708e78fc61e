import { type UntypedActorRef } from '@troupe/actors';
import {
  type EvaluationRequest,
  type EvaluatorResult,
  parseEvaluatorOutput,
  renderEvaluatorCommand,
  type SearchTaskSpec,
} from '@troupe/evolve';
import { type ExecReply, ExecReplySchema, isSandboxLost } from '@troupe/node-agent';
import { errorCode, invalidArgument, TroupeError } from '@troupe/proto';
import { runSealedEvaluation } from './run-sealed-evaluation';
import { phaseFiles } from './suite-bundle';

/** Where an evaluation's files go inside its sandbox (emptied before every evaluation). */
export const EVAL_DIR = '/workspace/eval';
const STDERR_TAIL_CHARS = 2_000;
/** Failure codes after which evaluating again cannot help (a missing image, a refused spec). */
const FATAL_CODES: ReadonlySet<string> = new Set([
  'INVALID_ARGUMENT',
  'NOT_FOUND',
  'PERMISSION_DENIED',
  'UNAUTHENTICATED',
  'BUDGET_EXHAUSTED',
]);
// Removes what the previous evaluation left (a program may write files) and recreates the dir.
const CLEAN_SCRIPT = `rm -rf ${EVAL_DIR} /tmp/* /tmp/.[!.]* 2>/dev/null; mkdir -p ${EVAL_DIR}`;

/** What an evaluation ships besides the program: the suite and its files. */
export interface SandboxEvaluationSetup {
  /** The suite: evaluator command, phases. */
  suite: SearchTaskSpec;
  /** Suite-relative path → base64 (see `SuiteBundle.files`); only the phase's are shipped. */
  files: Readonly<Record<string, string>>;
}

/**
 * How a failed sandbox evaluation should be handled: `evaluator` (the evaluator itself failed —
 * exit status, no result line — and the sandbox is fine), `fatal` (retrying cannot help: stop the
 * search) or `lost` (the sandbox failed: replace it before evaluating there again).
 */
export function classifySandboxFailure(err: unknown): 'evaluator' | 'fatal' | 'lost' {
  if (err instanceof TroupeError && err.details?.['evaluator'] === true) return 'evaluator';
  return FATAL_CODES.has(errorCode(err)) ? 'fatal' : 'lost';
}

/**
 * The infrastructure failure (`UNAVAILABLE`, retryable) an evaluation reports for `err`, a
 * failure of the sandbox or of the evaluator (see {@link classifySandboxFailure}).
 */
export function sandboxFailure(err: unknown): TroupeError {
  if (err instanceof TroupeError && err.details?.['evaluator'] === true) return err;
  return new TroupeError('UNAVAILABLE', `evaluator sandbox failed: ${(err as Error).message}`, {
    cause: err,
    retryable: true,
    details: { sandboxLost: isSandboxLost(err), code: errorCode(err) },
  });
}

/** File name a program is written to: `program.py` for python, else `program.txt`. */
export function programFileOf(language: string): string {
  if (language === 'python') return 'program.py';
  if (language === 'javascript' || language === 'node') return 'program.js';
  return 'program.txt';
}

/**
 * Runs one evaluation in a ready sandbox (stateless: the one place of this logic, used by the
 * task's evaluator pool and by island actors in their leased sandboxes): empties
 * {@link EVAL_DIR} and `/tmp`, puts the program and only the request's phase files there, runs
 * the evaluator command with the request's deadline as a hard kill, and parses its JSON line.
 *
 * A kill at the deadline is a `timeout` result and an out-of-memory kill an `error` result
 * (program outcomes). A non-zero exit or a missing or malformed line throws `UNAVAILABLE` with
 * `details.evaluator: true`; a failed sandbox call throws what the call threw (see
 * {@link classifySandboxFailure}).
 *
 * A sealed suite (`evaluator.sealed`) runs the program alone in `sandbox` and grades it in
 * `grader`, which alone receives the answers (see `runSealedEvaluation`).
 */
export async function runSandboxEvaluation(
  sandbox: UntypedActorRef,
  request: EvaluationRequest,
  setup: SandboxEvaluationSetup,
  signal: AbortSignal,
  grader?: UntypedActorRef,
): Promise<EvaluatorResult> {
  if (setup.suite.evaluator.sealed) {
    if (!grader) {
      throw invalidArgument('suite.evaluator.sealed', 'a sealed suite needs a grader sandbox');
    }
    const file = programFileOf(request.program.language);
    return await runSealedEvaluation(sandbox, grader, request, setup, file, signal);
  }
  await sandbox.ask(
    'exec',
    { cmd: ['/bin/sh', '-c', CLEAN_SCRIPT], timeoutMs: 30_000 },
    { timeoutMs: 60_000, signal },
  );
  const programFile = programFileOf(request.program.language);
  const files: Record<string, string | { base64: string }> = {
    [programFile]: request.program.source,
  };
  for (const [rel, base64] of Object.entries(phaseFiles(setup.suite, setup.files, request.phase))) {
    files[`suite/${rel}`] = { base64 };
  }
  await sandbox.ask('putFiles', { destDir: EVAL_DIR, files }, { timeoutMs: 60_000, signal });
  const cmd = renderEvaluatorCommand(setup.suite, {
    suite: `${EVAL_DIR}/suite`,
    program: `${EVAL_DIR}/${programFile}`,
    phase: request.phase,
    timeoutMs: request.timeoutMs,
  });
  const reply = ExecReplySchema.parse(
    await sandbox.ask(
      'exec',
      { cmd, cwd: EVAL_DIR, timeoutMs: request.timeoutMs },
      { timeoutMs: request.timeoutMs + 30_000, signal },
    ),
  );
  return resultOf(reply, request);
}

function resultOf(reply: ExecReply, request: EvaluationRequest): EvaluatorResult {
  const stderrTail = reply.stderr.slice(-STDERR_TAIL_CHARS);
  if (reply.timedOut) {
    return {
      status: 'timeout',
      score: null,
      signature: [],
      metrics: { reason: `evaluator killed at its deadline of ${request.timeoutMs} ms` },
      stderrTail,
      evalMs: Math.round(reply.durationMs),
      evaluatorVersion: 'unknown',
    };
  }
  if (reply.oomKilled && reply.exitCode !== 0) {
    // The evaluator and the program share the sandbox's memory: the program exhausted it.
    return {
      status: 'error',
      score: null,
      signature: [],
      metrics: { reason: 'out of memory (sandbox limit reached)' },
      stderrTail,
      evalMs: Math.round(reply.durationMs),
      evaluatorVersion: 'unknown',
    };
  }
  if (reply.exitCode !== 0) {
    // The message carries the stderr tail: it becomes the node's `error` in the journal, where
    // the suite's author sees why the grader failed (a traceback) without any log.
    throw new TroupeError(
      'UNAVAILABLE',
      withStderr(`evaluator exited with status ${reply.exitCode}`, stderrTail),
      {
        retryable: true,
        details: { evaluator: true, stderrTail: stderrTail.slice(-500) },
      },
    );
  }
  try {
    return parseEvaluatorOutput(reply.stdout);
  } catch (err) {
    throw new TroupeError('UNAVAILABLE', withStderr((err as Error).message, stderrTail), {
      cause: err,
      retryable: true,
      details: { evaluator: true, stderrTail: stderrTail.slice(-500) },
    });
  }
}

/** Characters of the evaluator's stderr an evaluator failure's message carries. */
const ERROR_STDERR_CHARS = 500;

/** `message`, followed by the last lines of the evaluator's stderr when it wrote any. */
export function withStderr(message: string, stderr: string): string {
  const tail = stderr.trim().slice(-ERROR_STDERR_CHARS);
  return tail ? `${message}; evaluator stderr: ${tail}` : message;
}
