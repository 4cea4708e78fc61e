import {
  indentOf,
  joinTitles,
  type LogParser,
  record,
  type TestOutcomes,
  TestStatus,
} from './log-parser';

const TAP_SUBTEST = /^# Subtest: (.*)$/;
const TAP_RESULT = /^(ok|not ok) \d+ - (.*?)(?: # (SKIP|TODO)\b.*)?$/;
const SPEC_LINE = /^(✔|✖|﹣|▶) (.*?)(?: \([\d.]+m?s\))?(?: # (.*))?$/;
const DURATION = / \([\d.]+m?s\)(?: # .*)?$/;

function unescapeTap(title: string): string {
  return title.replace(/\\#/g, '#').replace(/\\\\/g, '\\');
}

/** node --test's TAP reporter (the default when not on a terminal in Node 18). */
function parseTap(log: string): TestOutcomes {
  const out: TestOutcomes = {};
  const stack: string[] = [];
  const hasChildren: boolean[] = [];
  for (const raw of log.split('\n')) {
    const line = raw.trimEnd();
    const level = Math.floor(indentOf(line) / 4);
    const text = line.trim();
    const sub = TAP_SUBTEST.exec(text);
    if (sub) {
      stack.length = level;
      stack[level] = unescapeTap(sub[1] ?? '');
      if (level > 0) hasChildren[level - 1] = true;
      hasChildren.length = level;
      hasChildren[level] = false;
      continue;
    }
    const res = TAP_RESULT.exec(text);
    if (!res) continue;
    // A suite's (or a test file's) own result line: its tests were recorded one by one.
    if (hasChildren[level] === true) {
      hasChildren[level] = false;
      continue;
    }
    const [, word, title, directive] = res as unknown as [string, string, string, string?];
    const status =
      directive !== undefined
        ? TestStatus.SKIPPED
        : word === 'ok'
          ? TestStatus.PASSED
          : TestStatus.FAILED;
    record(out, joinTitles([...stack.slice(0, level), unescapeTap(title)]), status);
  }
  return out;
}

/** node --test's spec reporter (the default on a terminal; `--test-reporter=spec`). */
function parseSpec(log: string): TestOutcomes {
  const out: TestOutcomes = {};
  const suites: string[] = [];
  for (const raw of log.split('\n')) {
    const line = raw.trimEnd();
    // The summary repeats the failing tests without their suites.
    if (line.startsWith('✖ failing tests:')) break;
    const m = SPEC_LINE.exec(line.trim());
    if (!m) continue;
    const level = Math.floor(indentOf(line) / 2);
    const [, mark, title, directive] = m as unknown as [string, string, string, string?];
    if (mark === '▶') {
      if (DURATION.test(line)) continue; // a suite's closing line
      suites.length = level;
      suites[level] = title;
      continue;
    }
    // A suite that failed closes with ✖ at its own level.
    if (suites[level] === title && suites.length > level) {
      suites.length = level;
      continue;
    }
    suites.length = Math.min(suites.length, level);
    const status =
      mark === '﹣' || (directive !== undefined && /^(SKIP|TODO)\b/i.test(directive))
        ? TestStatus.SKIPPED
        : mark === '✔'
          ? TestStatus.PASSED
          : TestStatus.FAILED;
    record(out, joinTitles([...suites.slice(0, level), title]), status);
  }
  return out;
}

/**
 * Node's built-in test runner (`node --test`), TAP or spec reporter (recognised by the output).
 * Suites are not tests: only their tests are recorded, named with the suites' titles.
 */
export const nodeTestLogParser: LogParser = {
  name: 'node-test',
  reads: 'node --test (TAP reporter, or --test-reporter=spec)',
  parse(log) {
    return /^TAP version \d+/m.test(log) || /^\s*(not )?ok \d+ - /m.test(log)
      ? parseTap(log)
      : parseSpec(log);
  },
};
