import { TroupeError } from '@troupe/proto';
import { z } from 'zod';

/** How an evaluation ended, as the evaluator reports it. */
export const EvaluatorStatus = {
  /** The program ran and its raw output was valid; `score` is a finite number. */
  OK: 'ok',
  /** The program ran but its output broke the task's rules (or the score was NaN/Inf). */
  INVALID: 'invalid',
  /** The program failed (non-zero exit, exception, missing output). */
  ERROR: 'error',
  /** The program did not finish before its deadline and was killed. */
  TIMEOUT: 'timeout',
} as const;

/** One of the {@link EvaluatorStatus} values. */
export type EvaluatorStatus = (typeof EvaluatorStatus)[keyof typeof EvaluatorStatus];

const anyNumber = z.custom<number>((v) => typeof v === 'number', 'must be a number');
const JsonValue: z.ZodType<unknown> = z.lazy(() =>
  z.union([
    z.string(),
    anyNumber,
    z.boolean(),
    z.null(),
    z.array(JsonValue),
    z.record(z.string(), JsonValue),
  ]),
);

const RawEvaluatorResultSchema = z
  .object({
    status: z.enum(['ok', 'invalid', 'error', 'timeout']),
    score: anyNumber.nullable(),
    signature: z.array(anyNumber),
    metrics: z.record(z.string(), JsonValue),
    stderrTail: z.string(),
    evalMs: z.number().nonnegative(),
    evaluatorVersion: z.string().min(1),
  })
  .strict();

/**
 * Schema of the one JSON object an evaluator prints:
 * `{status: ok|invalid|error|timeout, score|null, signature[], metrics{}, stderrTail, evalMs,
 * evaluatorVersion}`. Unknown fields are refused. Parsing also normalises: a result that says
 * `ok` with a null, NaN or infinite score, or a non-finite signature entry, becomes `invalid`
 * (with `metrics.invalidReason`); any status but `ok` carries a null score.
 */
export const EvaluatorResultSchema = RawEvaluatorResultSchema.transform((raw) => {
  const result = { ...raw, metrics: { ...raw.metrics } };
  if (result.status !== EvaluatorStatus.OK) return { ...result, score: null };
  let reason: string | undefined;
  if (result.score === null) reason = 'status ok without a score';
  else if (!Number.isFinite(result.score)) reason = `score is ${String(result.score)}`;
  else if (!result.signature.every(Number.isFinite)) reason = 'signature holds NaN or Inf';
  if (reason === undefined) return result;
  result.metrics.invalidReason = reason;
  return {
    ...result,
    status: EvaluatorStatus.INVALID,
    score: null,
    signature: result.signature.map((v) => (Number.isFinite(v) ? v : 0)),
  };
});

/** A validated, normalised evaluator result. */
export type EvaluatorResult = z.output<typeof EvaluatorResultSchema>;

const NON_FINITE: Record<string, number> = {
  NaN: Number.NaN,
  Infinity: Number.POSITIVE_INFINITY,
  '-Infinity': Number.NEGATIVE_INFINITY,
};
const SENTINEL = '\u0000troupe-nonfinite:';

/**
 * JSON.parse that also accepts the bare `NaN`, `Infinity` and `-Infinity` tokens Python's
 * `json.dumps` writes by default, turning them into the numbers they name.
 */
export function parseLenientJson(text: string): unknown {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const ch = text[i] as string;
    if (ch === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    const token = ['-Infinity', 'Infinity', 'NaN'].find((t) => text.startsWith(t, i));
    if (token) {
      out += JSON.stringify(SENTINEL + token);
      i += token.length;
      continue;
    }
    out += ch;
    i++;
  }
  return JSON.parse(out, (_key, value: unknown) =>
    typeof value === 'string' && value.startsWith(SENTINEL)
      ? NON_FINITE[value.slice(SENTINEL.length)]
      : value,
  );
}

/**
 * Parses what an evaluator printed: its last non-empty line must be the result object. A missing
 * or malformed object means the evaluator itself failed — an infrastructure failure, reported as
 * a retryable `UNAVAILABLE` error (the search retries it once), never as a program outcome.
 * @throws TroupeError `UNAVAILABLE` naming what was wrong
 */
export function parseEvaluatorOutput(stdout: string): EvaluatorResult {
  const lines = stdout.split('\n').filter((l) => l.trim() !== '');
  const last = lines[lines.length - 1];
  if (last === undefined) {
    throw new TroupeError('UNAVAILABLE', 'evaluator printed no result line');
  }
  let value: unknown;
  try {
    value = parseLenientJson(last);
  } catch (err) {
    throw new TroupeError('UNAVAILABLE', 'evaluator result line is not JSON', { cause: err });
  }
  return parseEvaluatorResult(value);
}

/**
 * Validates an evaluator result object (for example one that came over the wire).
 * @throws TroupeError `UNAVAILABLE` listing the broken fields (an evaluator fault, retried once)
 */
export function parseEvaluatorResult(value: unknown): EvaluatorResult {
  const parsed = EvaluatorResultSchema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    throw new TroupeError('UNAVAILABLE', `malformed evaluator result: ${issues}`, {
      details: { issues },
    });
  }
  return parsed.data;
}

/** Whether a result counts as a buggy program (invalid, error or timeout): a Debug candidate. */
export function isBuggyResult(result: EvaluatorResult): boolean {
  return result.status !== EvaluatorStatus.OK;
}
