import { type ClassifyLine, parseIndentedBlock } from './indented-log';
import { type LogParser, type TestOutcomes, TestStatus } from './log-parser';

const DURATION = / \(\d+(\.\d+)? m?s\)$/;

const classify: ClassifyLine = (text) => {
  let m = /^✓ (.*)$/.exec(text);
  if (m) return { status: TestStatus.PASSED, title: (m[1] ?? '').replace(DURATION, '') };
  m = /^✕ (.*)$/.exec(text);
  if (m) return { status: TestStatus.FAILED, title: (m[1] ?? '').replace(DURATION, '') };
  m = /^○ (?:skipped )?(.*)$/.exec(text);
  if (m) return { status: TestStatus.SKIPPED, title: m[1] ?? '' };
  m = /^✎ (?:todo )?(.*)$/.exec(text);
  if (m) return { status: TestStatus.SKIPPED, title: m[1] ?? '' };
  return undefined;
};

/**
 * jest with `--verbose`: after each `PASS file` / `FAIL file` line, the tree of `describe` titles
 * and `✓` / `✕` / `○ skipped` / `✎ todo` tests, up to the first blank line or failure detail.
 */
export const jestLogParser: LogParser = {
  name: 'jest',
  reads: 'jest --verbose',
  parse(log) {
    const out: TestOutcomes = {};
    const lines = log.split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (!/^(PASS|FAIL) \S/.test(lines[i] ?? '')) continue;
      const block: string[] = [];
      for (i++; i < lines.length; i++) {
        const line = lines[i] ?? '';
        if (line.trim() === '' || line.trimStart().startsWith('● ')) break;
        block.push(line);
      }
      parseIndentedBlock(block, classify, 2, out);
    }
    return out;
  },
};
