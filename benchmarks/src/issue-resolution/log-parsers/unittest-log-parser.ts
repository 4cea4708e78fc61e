import { type LogParser, record, type TestOutcomes, TestStatus } from './log-parser';

const RESULT = /^(.*?) \.\.\. (ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$/;
const HEADER = /^(\w+ \([\w.]+\))$/;

/**
 * Python's unittest with `-v`: `test_ok (tests.test_x.CalcTest.test_ok) ... ok`. The name is
 * the part before ` ... ` (a test with a docstring prints its first line between: the header
 * line above it names the test).
 */
export const unittestLogParser: LogParser = {
  name: 'unittest',
  reads: 'python -m unittest -v (or runtests with verbosity 2)',
  parse(log) {
    const out: TestOutcomes = {};
    let header: string | undefined;
    for (const raw of log.split('\n')) {
      const line = raw.trimEnd();
      const m = RESULT.exec(line);
      if (m) {
        const [, before, word] = m as unknown as [string, string, string];
        const name = HEADER.test(before) ? before : (header ?? before);
        header = undefined;
        const status =
          word === 'ok' || word === 'expected failure'
            ? TestStatus.PASSED
            : word === 'FAIL' || word === 'unexpected success'
              ? TestStatus.FAILED
              : word === 'ERROR'
                ? TestStatus.ERROR
                : TestStatus.SKIPPED;
        record(out, name, status);
        continue;
      }
      header = HEADER.test(line) ? line : undefined;
    }
    return out;
  },
};
