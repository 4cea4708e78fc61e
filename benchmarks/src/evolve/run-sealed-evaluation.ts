import { type UntypedActorRef } from '@troupe/actors';
import {
  type EvaluationRequest,
  type EvaluatorResult,
  parseEvaluatorOutput,
  renderEvaluatorCommand,
  type SearchTaskSpec,
} from '@troupe/evolve';
import { type ExecReply, ExecReplySchema } from '@troupe/node-agent';
import { invalidArgument, TroupeError } from '@troupe/proto';

/** Where a sealed evaluation's files go in each of its two sandboxes (emptied every time). */
export const SEALED_DIR = '/workspace/sealed';
const STDERR_TAIL_CHARS = 2_000;
const CLEAN_SCRIPT = `rm -rf ${SEALED_DIR} /tmp/* /tmp/.[!.]* 2>/dev/null; mkdir -p ${SEALED_DIR}/data`;
// Exit statuses of the copy-out script below.
const OUTPUT_MISSING = 3;
const OUTPUT_TOO_LARGE = 4;

/**
 * Id of the grader sandbox paired with candidate sandbox `candidateId` (sealed grading: the
 * candidate's sandbox never holds an answer; this one alone does).
 */
export function graderSandboxId(candidateId: string): string {
  return `${candidateId}-g`;
}

/** What a sealed evaluation ships: the suite and its files (see `SuiteBundle.files`). */
export interface SealedEvaluationSetup {
  suite: SearchTaskSpec;
  files: Readonly<Record<string, string>>;
}

/**
 * The files of `phase` that reach the candidate: those under the phase's `candidate` folder,
 * keyed by their path inside it (they become the candidate's working directory).
 */
export function candidateFiles(
  spec: SearchTaskSpec,
  files: Readonly<Record<string, string>>,
  phase: 'validation' | 'test',
): Record<string, string> {
  const folder = spec.phases[phase].candidate;
  if (folder === undefined) return {};
  const base = folder.replace(/\/+$/, '');
  const out: Record<string, string> = {};
  for (const [rel, content] of Object.entries(files)) {
    if (rel.startsWith(`${base}/`)) out[rel.slice(base.length + 1)] = content;
  }
  return out;
}

/**
 * Everything an evaluation of `phase` needs: the phase's grader `files` and, for a sealed suite,
 * its candidate folder (suite-relative keys, as in `SuiteBundle.files`).
 */
export function phaseShipment(
  spec: SearchTaskSpec,
  files: Readonly<Record<string, string>>,
  phase: 'validation' | 'test',
): Record<string, string> {
  const out = graderFiles(spec, files, phase);
  const folder = spec.phases[phase].candidate;
  if (folder === undefined) return out;
  const base = folder.replace(/\/+$/, '');
  for (const [rel, content] of Object.entries(files)) {
    if (rel.startsWith(`${base}/`)) out[rel] = content;
  }
  return out;
}

/** The grader's files of `phase` (its `files` list; a folder takes everything under it). */
function graderFiles(
  spec: SearchTaskSpec,
  files: Readonly<Record<string, string>>,
  phase: 'validation' | 'test',
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [rel, content] of Object.entries(files)) {
    const listed = spec.phases[phase].files.some((w) => {
      const base = w.replace(/\/+$/, '');
      return rel === base || rel.startsWith(`${base}/`);
    });
    if (listed) out[rel] = content;
  }
  return out;
}

function outcome(
  status: 'timeout' | 'error' | 'invalid',
  reason: string,
  stderrTail: string,
  evalMs: number,
): EvaluatorResult {
  return {
    status,
    score: null,
    signature: [],
    metrics: { reason },
    stderrTail,
    evalMs: Math.round(evalMs),
    evaluatorVersion: 'sealed',
  };
}

async function exec(
  sandbox: UntypedActorRef,
  cmd: string[],
  cwd: string,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<ExecReply> {
  return ExecReplySchema.parse(
    await sandbox.ask('exec', { cmd, cwd, timeoutMs }, { timeoutMs: timeoutMs + 30_000, signal }),
  );
}

/**
 * Runs one sealed evaluation (`evaluator.sealed`): the candidate runs in `candidate` with only
 * the phase's candidate folder (features, training data) as its working directory; its output
 * file, at most `maxOutputBytes`, is copied out through the exec reply and graded by the
 * evaluator command in `grader`, the only sandbox that receives the phase's `files` (the
 * answers). Program outcomes: a kill at the deadline is `timeout`; a non-zero exit or an
 * out-of-memory kill is `error`; a missing or oversized output is `invalid`; otherwise the
 * grader's JSON line is the result, with the candidate's stderr tail. A grader that exits
 * non-zero or prints no result line throws `UNAVAILABLE` with `details.evaluator: true`; a failed
 * sandbox call throws what the call threw.
 */
export async function runSealedEvaluation(
  candidate: UntypedActorRef,
  grader: UntypedActorRef,
  request: EvaluationRequest,
  setup: SealedEvaluationSetup,
  programFile: string,
  signal: AbortSignal,
): Promise<EvaluatorResult> {
  const sealed = setup.suite.evaluator.sealed;
  if (!sealed) throw invalidArgument('suite.evaluator.sealed', 'is not set for this suite');
  const started = Date.now();
  const clean = ['/bin/sh', '-c', CLEAN_SCRIPT];
  await candidate.ask('exec', { cmd: clean, timeoutMs: 30_000 }, { timeoutMs: 60_000, signal });
  const data: Record<string, string | { base64: string }> = {
    [programFile]: request.program.source,
  };
  for (const [rel, base64] of Object.entries(
    candidateFiles(setup.suite, setup.files, request.phase),
  )) {
    data[`data/${rel}`] = { base64 };
  }
  await candidate.ask(
    'putFiles',
    { destDir: SEALED_DIR, files: data },
    { timeoutMs: 60_000, signal },
  );
  // The program's share of the deadline: the grading gets a margin (a tenth, at most 10 s).
  const runMs = Math.max(1_000, request.timeoutMs - Math.min(10_000, request.timeoutMs / 10));
  const cmd = sealed.command.map((arg) =>
    arg
      .replace(/\{program\}/g, `${SEALED_DIR}/${programFile}`)
      .replace(/\{timeoutS\}/g, String(runMs / 1000)),
  );
  const run = await exec(candidate, cmd, `${SEALED_DIR}/data`, runMs, signal);
  const tail = run.stderr.slice(-STDERR_TAIL_CHARS);
  if (run.timedOut) {
    return outcome(
      'timeout',
      `program killed at its deadline of ${runMs} ms`,
      tail,
      run.durationMs,
    );
  }
  if (run.exitCode !== 0) {
    const reason = run.oomKilled
      ? 'out of memory (sandbox limit reached)'
      : `program exited with status ${run.exitCode}`;
    return outcome('error', reason, tail, run.durationMs);
  }
  // Copy the output out: a regular file (not a link), bounded, base64 on stdout.
  const out = sealed.output;
  const copy = await exec(
    candidate,
    [
      '/bin/sh',
      '-c',
      `[ -f "${out}" ] && [ ! -L "${out}" ] || exit ${OUTPUT_MISSING}; ` +
        `[ "$(stat -c %s "${out}")" -le ${sealed.maxOutputBytes} ] || exit ${OUTPUT_TOO_LARGE}; ` +
        `base64 -w0 "${out}"`,
    ],
    `${SEALED_DIR}/data`,
    30_000,
    signal,
  );
  if (copy.exitCode === OUTPUT_MISSING) {
    return outcome('invalid', `${out} was not written`, tail, run.durationMs);
  }
  if (copy.exitCode === OUTPUT_TOO_LARGE) {
    return outcome(
      'invalid',
      `${out} is larger than ${sealed.maxOutputBytes} bytes`,
      tail,
      run.durationMs,
    );
  }
  if (copy.exitCode !== 0 || copy.stdoutDroppedBytes > 0) {
    throw new TroupeError('UNAVAILABLE', `could not copy ${out} out of the candidate sandbox`, {
      retryable: true,
      details: { exitCode: copy.exitCode, stderrTail: copy.stderr.slice(-500) },
    });
  }
  // Grade in the grader sandbox: the answers and the grader never meet the candidate.
  await grader.ask('exec', { cmd: clean, timeoutMs: 30_000 }, { timeoutMs: 60_000, signal });
  const graderData: Record<string, string | { base64: string }> = {
    [`submission/${out}`]: { base64: copy.stdout.trim() },
  };
  for (const [rel, base64] of Object.entries(
    graderFiles(setup.suite, setup.files, request.phase),
  )) {
    graderData[`suite/${rel}`] = { base64 };
  }
  await grader.ask(
    'putFiles',
    { destDir: SEALED_DIR, files: graderData },
    { timeoutMs: 60_000, signal },
  );
  const gradeMs = Math.max(5_000, request.timeoutMs - runMs);
  const gradeCmd = renderEvaluatorCommand(setup.suite, {
    suite: `${SEALED_DIR}/suite`,
    program: `${SEALED_DIR}/submission/${out}`,
    submission: `${SEALED_DIR}/submission/${out}`,
    phase: request.phase,
    timeoutMs: gradeMs,
  });
  const graded = await exec(grader, gradeCmd, SEALED_DIR, gradeMs, signal);
  const graderTail = graded.stderr.slice(-500);
  if (graded.timedOut || graded.exitCode !== 0) {
    throw new TroupeError(
      'UNAVAILABLE',
      graded.timedOut
        ? `grader killed at its deadline of ${gradeMs} ms`
        : `grader exited with status ${graded.exitCode}`,
      { retryable: true, details: { evaluator: true, stderrTail: graderTail } },
    );
  }
  let result: EvaluatorResult;
  try {
    result = parseEvaluatorOutput(graded.stdout);
  } catch (err) {
    throw new TroupeError('UNAVAILABLE', (err as Error).message, {
      cause: err,
      retryable: true,
      details: { evaluator: true, stderrTail: graderTail },
    });
  }
  return {
    ...result,
    stderrTail: tail,
    evalMs: Math.round(Math.max(result.evalMs, Date.now() - started)),
  };
}
