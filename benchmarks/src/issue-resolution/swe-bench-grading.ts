import { type LoadedIssueTask } from './issue-task-spec';
import { LOG_PARSERS, TestStatus } from './log-parsers';

/** One row of the per-test table of a SWE-bench grading. */
export interface TestTableRow {
  test: string;
  /** The list that names it. */
  list: 'FAIL_TO_PASS' | 'PASS_TO_PASS';
  /** Its outcome in the run; `MISSING` when the output does not report it. */
  status: TestStatus | 'MISSING';
}

/** What a SWE-bench grading found. */
export interface TestTableVerdict {
  /** Every FAIL_TO_PASS and every PASS_TO_PASS test passed. */
  resolved: boolean;
  rows: TestTableRow[];
  /** Per list: how many passed of how many. */
  failToPass: { passed: number; total: number };
  passToPass: { passed: number; total: number };
}

const START = '>>>>> Start Test Output';
const END = '>>>>> End Test Output';

/** The test command's part of the grader's output (the markers of the generated grader). */
export function testOutputOf(log: string): string {
  const start = log.indexOf(START);
  if (start < 0) return log;
  const end = log.indexOf(END, start);
  return log.slice(start + START.length, end < 0 ? undefined : end);
}

/**
 * Grades a test run as SWE-bench does: resolved only when every FAIL_TO_PASS test and every
 * PASS_TO_PASS test passed (a test the output does not report counts as not passing).
 */
export function gradeTestOutcomes(
  tests: NonNullable<LoadedIssueTask['tests']>,
  log: string,
): TestTableVerdict {
  const parser = LOG_PARSERS[tests.logParser];
  if (!parser) throw new Error(`unknown log parser ${tests.logParser}`);
  const outcomes = parser.parse(testOutputOf(log));
  const rowsOf = (list: TestTableRow['list'], names: readonly string[]): TestTableRow[] =>
    names.map((test) => ({ test, list, status: outcomes[test] ?? 'MISSING' }));
  const f2p = rowsOf('FAIL_TO_PASS', tests.failToPass);
  const p2p = rowsOf('PASS_TO_PASS', tests.passToPass);
  const passed = (rows: TestTableRow[]) =>
    rows.filter((r) => r.status === TestStatus.PASSED).length;
  return {
    resolved: passed(f2p) === f2p.length && passed(p2p) === p2p.length,
    rows: [...f2p, ...p2p],
    failToPass: { passed: passed(f2p), total: f2p.length },
    passToPass: { passed: passed(p2p), total: p2p.length },
  };
}
