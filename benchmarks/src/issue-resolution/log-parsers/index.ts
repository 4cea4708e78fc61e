import { jestLogParser } from './jest-log-parser';
import { type LogParser } from './log-parser';
import { mochaLogParser } from './mocha-log-parser';
import { nodeTestLogParser } from './node-test-log-parser';
import { pytestLogParser } from './pytest-log-parser';
import { unittestLogParser } from './unittest-log-parser';

/** Every test-output parser a task may name (`log_parser`), by name. */
export const LOG_PARSERS: Readonly<Record<string, LogParser>> = Object.fromEntries(
  [pytestLogParser, unittestLogParser, nodeTestLogParser, mochaLogParser, jestLogParser].map(
    (p) => [p.name, p],
  ),
);

/** Names of {@link LOG_PARSERS}. */
export const LOG_PARSER_NAMES = Object.keys(LOG_PARSERS);

export { type LogParser, TestStatus, type TestOutcomes } from './log-parser';
