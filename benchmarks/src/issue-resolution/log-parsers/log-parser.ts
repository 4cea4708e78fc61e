/** The outcome of one test, as SWE-bench's harness names them. */
export const TestStatus = {
  PASSED: 'PASSED',
  FAILED: 'FAILED',
  SKIPPED: 'SKIPPED',
  ERROR: 'ERROR',
} as const;
/** One of {@link TestStatus}. */
export type TestStatus = (typeof TestStatus)[keyof typeof TestStatus];

/** Test name → outcome, as parsed from a test run's output. */
export type TestOutcomes = Record<string, TestStatus>;

/**
 * Reads per-test outcomes from the output of one test framework. Names of nested tests join the
 * enclosing suites' titles and the test's own with ` > ` (`parser > quoted > keeps quotes`).
 */
export interface LogParser {
  /** The name a task names it by (`log_parser`). */
  name: string;
  /** The command line whose output it reads. */
  reads: string;
  /** Parses the whole output (stdout and stderr merged). */
  parse(log: string): TestOutcomes;
}

const RANK: Record<TestStatus, number> = { PASSED: 0, SKIPPED: 1, FAILED: 2, ERROR: 3 };

/**
 * Records `status` for `name`: a test reported twice (a retry, a parametrised repeat) keeps its
 * worst outcome, so a failure is never hidden by a later pass.
 */
export function record(out: TestOutcomes, name: string, status: TestStatus): void {
  const prev = out[name];
  if (prev === undefined || RANK[status] > RANK[prev]) out[name] = status;
}

/** Joins suite titles and a test title into a test name. */
export function joinTitles(titles: readonly string[]): string {
  return titles.join(' > ');
}

/** Leading spaces of a line. */
export function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}
