import {
  EvaluatorResultSchema,
  parseEvaluatorOutput,
  parseEvaluatorResult,
  parseLenientJson,
} from '../../src/evaluator-result';

const ok = {
  status: 'ok',
  score: 210.5,
  signature: [211, 210],
  metrics: { instances: 2 },
  stderrTail: '',
  evalMs: 420,
  evaluatorVersion: 'binpacking-online/1',
};

describe('EvaluatorResultSchema', () => {
  it('accepts the contract object unchanged', () => {
    expect(EvaluatorResultSchema.parse(ok)).toEqual(ok);
  });

  it.each([
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['-Infinity', Number.NEGATIVE_INFINITY],
    ['null', null],
  ])('turns ok with a %s score into invalid with a reason', (what, score) => {
    const r = EvaluatorResultSchema.parse({ ...ok, score });
    expect(r.status).toBe('invalid');
    expect(r.score).toBeNull();
    expect(String(r.metrics.invalidReason)).toContain(what === 'null' ? 'without a score' : what);
  });

  it('turns a non-finite signature entry into invalid', () => {
    const r = EvaluatorResultSchema.parse({ ...ok, signature: [1, Number.NaN] });
    expect(r.status).toBe('invalid');
    expect(r.signature).toEqual([1, 0]);
  });

  it('drops the score of a result that is not ok', () => {
    expect(EvaluatorResultSchema.parse({ ...ok, status: 'error', score: 3 }).score).toBeNull();
  });

  it.each([
    ['an unknown status', { ...ok, status: 'passed' }],
    ['a missing field', { ...ok, evaluatorVersion: undefined }],
    ['an extra field', { ...ok, extra: 1 }],
    ['a string score', { ...ok, score: '210' }],
    ['a negative evalMs', { ...ok, evalMs: -1 }],
  ])('refuses %s', (_what, value) => {
    expect(EvaluatorResultSchema.safeParse(value).success).toBe(false);
  });
});

describe('parseEvaluatorOutput', () => {
  it("reads the last line, accepting Python's NaN and Infinity tokens", () => {
    const line = JSON.stringify({ ...ok, score: 0 }).replace('"score":0', '"score":NaN');
    const r = parseEvaluatorOutput(`some log line\n${line}\n\n`);
    expect(r.status).toBe('invalid');
    expect(parseLenientJson('{"a": [Infinity, -Infinity, "NaN inside a string"]}')).toEqual({
      a: [Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 'NaN inside a string'],
    });
  });

  it('reports a missing or malformed result as a retryable infrastructure failure', () => {
    for (const text of ['', 'not json', JSON.stringify({ ...ok, status: 'nope' })]) {
      let err: unknown;
      try {
        parseEvaluatorOutput(text);
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
    }
  });

  it('validates objects from the wire the same way', () => {
    expect(parseEvaluatorResult(ok)).toEqual(ok);
    expect(() => parseEvaluatorResult({})).toThrow('malformed evaluator result');
  });
});
