import { type ClassifyLine, parseIndentedBlock } from './indented-log';
import { type LogParser, type TestOutcomes, TestStatus } from './log-parser';

const SLOW = / \(\d+ms\)$/;

const classify: ClassifyLine = (text) => {
  let m = /^[✔✓] (.*)$/.exec(text);
  if (m) return { status: TestStatus.PASSED, title: (m[1] ?? '').replace(SLOW, '') };
  m = /^\d+\) (.*)$/.exec(text);
  if (m) return { status: TestStatus.FAILED, title: m[1] ?? '' };
  m = /^- (.*)$/.exec(text);
  if (m) return { status: TestStatus.SKIPPED, title: m[1] ?? '' };
  return undefined;
};

/**
 * mocha's spec reporter (`mocha --reporter spec`, the default): `✔ title`, `1) title` (failed),
 * `- title` (pending), suites as the less indented lines above. Reads up to the `N passing` line
 * (the failure details after it repeat the titles).
 */
export const mochaLogParser: LogParser = {
  name: 'mocha',
  reads: 'mocha --reporter spec',
  parse(log) {
    const out: TestOutcomes = {};
    const lines = log.split('\n');
    // The tree ends at the `N passing` line; the failure details after it repeat the titles. A run
    // cut short (a crash) has no such line: what it printed is read as it is.
    const end = lines.findIndex((l) => /^\s+\d+ passing\b/.test(l));
    parseIndentedBlock(end < 0 ? lines : lines.slice(0, end), classify, 2, out);
    return out;
  },
};
