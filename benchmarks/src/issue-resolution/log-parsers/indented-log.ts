import { indentOf, joinTitles, record, type TestOutcomes, type TestStatus } from './log-parser';

/** A test line of an indented reporter: its status and title, or undefined for a suite line. */
export type ClassifyLine = (text: string) => { status: TestStatus; title: string } | undefined;

/**
 * Reads the outcome tree of reporters that indent suites and tests by two spaces per level (mocha's
 * spec reporter, jest's verbose one): a line that `classify` does not recognise as a test is the
 * title of a suite holding the more indented lines below it. `baseIndent` is the indent of the
 * outermost level.
 */
export function parseIndentedBlock(
  lines: readonly string[],
  classify: ClassifyLine,
  baseIndent: number,
  out: TestOutcomes,
): void {
  const suites: string[] = [];
  for (const raw of lines) {
    const line = raw.trimEnd();
    if (line.trim() === '') continue;
    const level = Math.max(0, Math.floor((indentOf(line) - baseIndent) / 2));
    const test = classify(line.trim());
    suites.length = Math.min(suites.length, level);
    if (test) {
      record(out, joinTitles([...suites.slice(0, level), test.title]), test.status);
    } else {
      suites[level] = line.trim();
    }
  }
}
