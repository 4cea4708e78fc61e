import {
  formatParamValue,
  parseTunableParams,
  rewriteTunableParams,
} from '../../src/tunable-params';

const SOURCE = [
  '"""Parameters carry troupe:param markers, e.g. `X = 1  # troupe:param float[0,2]`."""',
  'import sys',
  'GAP = 0.25  # troupe:param float[0,0.4]',
  'COUNT = 5  # troupe:param int[1,15]',
  'C: float = 1.0  # troupe:param float[0.01,100] log',
  '    INNER = -0.5   #troupe:param float[-1,1]',
  'PLAIN = 3  # not a parameter',
  '',
].join('\n');

describe('parseTunableParams', () => {
  it('finds every marked assignment with type, value, range and flags', () => {
    const params = parseTunableParams(SOURCE);
    expect(params).toEqual([
      { name: 'GAP', type: 'float', value: 0.25, min: 0, max: 0.4, log: false, line: 2 },
      { name: 'COUNT', type: 'int', value: 5, min: 1, max: 15, log: false, line: 3 },
      { name: 'C', type: 'float', value: 1, min: 0.01, max: 100, log: true, line: 4 },
      { name: 'INNER', type: 'float', value: -0.5, min: -1, max: 1, log: false, line: 5 },
    ]);
  });

  it('accepts JavaScript-style declarations and // comments', () => {
    const params = parseTunableParams('const rate = 1e-3; // troupe:param float[1e-5,1e-1] log\n');
    expect(params).toEqual([
      { name: 'rate', type: 'float', value: 0.001, min: 1e-5, max: 0.1, log: true, line: 0 },
    ]);
  });

  it('returns nothing for a program without markers', () => {
    expect(parseTunableParams('x = 1\nprint(x)\n')).toEqual([]);
  });

  it('ignores mentions of the marker outside an assignment comment', () => {
    const doc = '# Mark parameters with troupe:param float[0,1]\ns = "troupe:param"\n';
    expect(parseTunableParams(doc)).toEqual([]);
  });

  it.each([
    ['a misspelt type', 'A = 1  # troupe:param flaot[0,2]', 'line 1'],
    ['a missing range', 'A = 1  # troupe:param float', 'line 1'],
    ['a value outside the range', 'A = 3  # troupe:param float[0,2]', 'must lie in [0,2]'],
    ['MIN not below MAX', 'A = 1  # troupe:param float[2,2]', 'MIN < MAX'],
    ['a fractional int', 'A = 1.5  # troupe:param int[0,2]', 'integer'],
    ['a log range through zero', 'A = 1  # troupe:param float[0,2] log', 'MIN > 0'],
    ['an unknown flag', 'A = 1  # troupe:param float[0,2] cubic', 'unknown flag'],
    ['an unknown type', 'A = 1  # troupe:param double[0,2]', 'line 1'],
    ['an expression as value', 'A = 1 + 1  # troupe:param float[0,3]', 'line 1'],
    [
      'a name marked twice',
      'A = 1  # troupe:param float[0,2]\nA = 1  # troupe:param float[0,2]',
      'only once',
    ],
  ])('rejects %s', (_what, source, message) => {
    let err: unknown;
    try {
      parseTunableParams(source);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(String((err as Error).message)).toContain(message);
  });
});

describe('rewriteTunableParams', () => {
  it('replaces only the literals, keeping comments, spacing and other lines', () => {
    const out = rewriteTunableParams(SOURCE, { GAP: 0.125, COUNT: 7, INNER: 0 });
    const lines = out.split('\n');
    expect(lines[2]).toBe('GAP = 0.125  # troupe:param float[0,0.4]');
    expect(lines[3]).toBe('COUNT = 7  # troupe:param int[1,15]');
    expect(lines[5]).toBe('    INNER = 0.0   #troupe:param float[-1,1]');
    expect(lines.filter((_, i) => ![2, 3, 5].includes(i))).toEqual(
      SOURCE.split('\n').filter((_, i) => ![2, 3, 5].includes(i)),
    );
    expect(parseTunableParams(out).map((p) => p.value)).toEqual([0.125, 7, 1, 0]);
  });

  it('round-trips: rewriting with the current values gives the same text', () => {
    const values = Object.fromEntries(parseTunableParams(SOURCE).map((p) => [p.name, p.value]));
    expect(rewriteTunableParams(SOURCE, values)).toBe(SOURCE);
  });

  it('keeps CRLF line endings', () => {
    const crlf = 'A = 1.0  # troupe:param float[0,2]\r\nprint(A)\r\n';
    expect(rewriteTunableParams(crlf, { A: 1.5 })).toBe(
      'A = 1.5  # troupe:param float[0,2]\r\nprint(A)\r\n',
    );
  });

  it('refuses unknown names, out-of-range and fractional int values', () => {
    expect(() => rewriteTunableParams(SOURCE, { NOPE: 1 })).toThrow('values.NOPE');
    expect(() => rewriteTunableParams(SOURCE, { GAP: 0.5 })).toThrow('must lie in [0,0.4]');
    expect(() => rewriteTunableParams(SOURCE, { COUNT: 2.5 })).toThrow('integer');
    expect(() => rewriteTunableParams(SOURCE, { GAP: Number.NaN })).toThrow('values.GAP');
  });
});

describe('formatParamValue', () => {
  it('writes floats that every language reads as floats, and plain integers', () => {
    expect(formatParamValue('float', 2)).toBe('2.0');
    expect(formatParamValue('float', -0)).toBe('0.0');
    expect(formatParamValue('float', 0.1 + 0.2)).toBe('0.3');
    expect(formatParamValue('float', 1e-7)).toBe('1e-7');
    expect(formatParamValue('int', 4.0000001)).toBe('4');
  });
});
