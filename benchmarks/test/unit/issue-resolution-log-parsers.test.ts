import { readFileSync } from 'node:fs';
import path from 'node:path';
import { LOG_PARSERS } from '../../src/issue-resolution/log-parsers';

const logOf = (name: string): string =>
  readFileSync(path.join(__dirname, 'fixtures', 'test-logs', name), 'utf8');
const parse = (parser: string, log: string) => LOG_PARSERS[parser]!.parse(log);

describe('test-output parsers on real captured outputs', () => {
  it('pytest -rA: node ids with PASSED, FAILED and ERROR', () => {
    expect(parse('pytest', logOf('pytest-rA.log'))).toEqual({
      'tests/test_calc.py::test_add': 'PASSED',
      'tests/test_calc.py::test_param[1]': 'PASSED',
      'tests/test_calc.py::TestThing::test_method': 'PASSED',
      'tests/test_calc.py::test_fixture_error': 'ERROR',
      'tests/test_calc.py::test_sub_broken': 'FAILED',
      'tests/test_calc.py::test_param[2]': 'FAILED',
    });
  });

  it('unittest -v: a docstring line between the name and the result keeps the name', () => {
    expect(parse('unittest', logOf('unittest-v.log'))).toEqual({
      'test_doc (tests.test_unit.CalcTest.test_doc)': 'PASSED',
      'test_error (tests.test_unit.CalcTest.test_error)': 'ERROR',
      'test_fail (tests.test_unit.CalcTest.test_fail)': 'FAILED',
      'test_ok (tests.test_unit.CalcTest.test_ok)': 'PASSED',
      'test_skip (tests.test_unit.CalcTest.test_skip)': 'SKIPPED',
    });
  });

  const nodeExpected = {
    'adds numbers': 'PASSED',
    'subtracts numbers': 'FAILED',
    'skipped one': 'SKIPPED',
    'parser > parses a value': 'PASSED',
    'parser > quoted > keeps quotes': 'FAILED',
    'parser > quoted > drops spaces': 'PASSED',
  };

  it('node --test TAP: nested subtests named through their suites, suites not counted', () => {
    expect(parse('node-test', logOf('node-test-tap.log'))).toEqual(nodeExpected);
  });

  it('node --test spec: the same tree, and the failing-tests summary is not read twice', () => {
    expect(parse('node-test', logOf('node-test-spec.log'))).toEqual(nodeExpected);
  });

  const mochaJestExpected = {
    'calc > adds numbers': 'PASSED',
    'calc > subtracts numbers': 'FAILED',
    'calc > skipped one': 'SKIPPED',
    'calc > when parsing > parses a value': 'PASSED',
    'calc > when parsing > keeps quotes': 'FAILED',
    'other > works': 'PASSED',
  };

  it('mocha spec: passing, numbered failures and pending tests under their suites', () => {
    expect(parse('mocha', logOf('mocha-spec.log'))).toEqual(mochaJestExpected);
  });

  it('jest --verbose: the tree after the FAIL line, durations stripped', () => {
    expect(parse('jest', logOf('jest-verbose.log'))).toEqual(mochaJestExpected);
  });

  it('a test reported twice keeps its worst outcome', () => {
    const log = 'PASSED t.py::a\nFAILED t.py::a - boom\nPASSED t.py::a\n';
    expect(parse('pytest', log)).toEqual({ 't.py::a': 'FAILED' });
  });

  it('an output with no recognisable test lines yields no outcomes', () => {
    for (const name of Object.keys(LOG_PARSERS)) {
      expect(parse(name, 'bash: mocha: command not found\n')).toEqual({});
    }
  });
});
