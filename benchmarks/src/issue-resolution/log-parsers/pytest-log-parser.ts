import { type LogParser, record, type TestOutcomes, TestStatus } from './log-parser';

const LINE = /^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)\s+(\S+)/;

/**
 * pytest with `-rA` (every outcome in the short test summary): `PASSED tests/test_x.py::test_a`,
 * `FAILED tests/test_x.py::test_b - AssertionError`. Names are pytest node ids. XFAIL counts as
 * passed and XPASS as failed (a strict expectation broken), as in SWE-bench. `SKIPPED [1] path:line`
 * lines carry no node id and are not recorded (a listed test that was skipped shows as missing).
 */
export const pytestLogParser: LogParser = {
  name: 'pytest',
  reads: 'pytest -rA (any verbosity)',
  parse(log) {
    const out: TestOutcomes = {};
    for (const raw of log.split('\n')) {
      const m = LINE.exec(raw.trimEnd());
      if (!m) continue;
      const [, word, id] = m as unknown as [string, string, string];
      if (id.startsWith('[')) continue;
      const status =
        word === 'XFAIL'
          ? TestStatus.PASSED
          : word === 'XPASS'
            ? TestStatus.FAILED
            : (word as TestStatus);
      record(out, id, status);
    }
    return out;
  },
};
