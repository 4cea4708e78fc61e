import { invalidArgument } from '@troupe/proto';

/** The text that marks a tunable parameter in a comment. */
export const TUNABLE_PARAM_MARKER = 'troupe:param';

/** Value type of a tunable parameter. */
export const TunableParamType = {
  /** Any number in the range. */
  FLOAT: 'float',
  /** An integer in the range. */
  INT: 'int',
} as const;

/** One of the {@link TunableParamType} values. */
export type TunableParamType = (typeof TunableParamType)[keyof typeof TunableParamType];

/** A tunable parameter found in a program by {@link parseTunableParams}. */
export interface TunableParam {
  /** The assigned name. */
  name: string;
  /** Value type. */
  type: TunableParamType;
  /** Current value (the literal in the source). */
  value: number;
  /** Lower bound, inclusive. */
  min: number;
  /** Upper bound, inclusive. */
  max: number;
  /** Perturb and reseed on a log scale (`min` > 0). */
  log: boolean;
  /** 0-based line number in the source. */
  line: number;
}

const NUMBER = String.raw`[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?`;
// NAME [: TYPE] = VALUE [;]  (# | //) troupe:param TYPE[MIN,MAX] [FLAGS]
// An optional `const`/`let`/`var` keeps the convention usable for JavaScript-like languages.
const MARKED_LINE = new RegExp(
  String.raw`^(?<head>[ \t]*(?:(?:const|let|var)[ \t]+)?(?<name>[A-Za-z_][A-Za-z0-9_]*)` +
    String.raw`[ \t]*(?::[ \t]*[A-Za-z_][\w.]*[ \t]*)?=[ \t]*)(?<value>${NUMBER})` +
    String.raw`(?<tail>[ \t]*;?[ \t]*(?:#|\/\/)[ \t]*troupe:param[ \t]+(?<type>float|int)[ \t]*` +
    String.raw`\[[ \t]*(?<min>${NUMBER})[ \t]*,[ \t]*(?<max>${NUMBER})[ \t]*\]` +
    String.raw`(?<flags>(?:[ \t]+[a-z]+)*)[ \t]*)$`,
);
// An assignment whose trailing comment starts with the marker: such a line must parse fully.
// Other mentions of the marker (documentation, strings) are not parameters.
const MARKER_CANDIDATE =
  /^[ \t]*(?:(?:const|let|var)[ \t]+)?[A-Za-z_][A-Za-z0-9_]*[ \t]*(?::[^=\n]*)?=[^\n]*?(?:#|\/\/)[ \t]*troupe:param\b/;
const FLAGS: ReadonlySet<string> = new Set(['log']);
const RULE =
  'a marked line must read `NAME = NUMBER  # troupe:param float|int[MIN,MAX]` (optional flag: log)';

interface MarkedLine {
  param: TunableParam;
  head: string;
  tail: string;
}

function splitLines(source: string): string[] {
  return source.split('\n');
}

function parseLine(text: string, index: number): MarkedLine | undefined {
  if (!text.includes(TUNABLE_PARAM_MARKER) || !MARKER_CANDIDATE.test(text)) return undefined;
  const field = `line ${index + 1}`;
  const m = MARKED_LINE.exec(text.replace(/\r$/, ''));
  const g = m?.groups;
  if (!g) throw invalidArgument(field, RULE, text.trim());
  const type = g.type as TunableParamType;
  const value = Number(g.value);
  const min = Number(g.min);
  const max = Number(g.max);
  const flags = (g.flags ?? '').split(/[ \t]+/).filter((f) => f !== '');
  for (const flag of flags) {
    if (!FLAGS.has(flag)) throw invalidArgument(field, `unknown flag (known: log)`, flag);
  }
  const log = flags.includes('log');
  if (!(min < max))
    throw invalidArgument(field, 'the range must have MIN < MAX', `[${min},${max}]`);
  if (type === 'int' && ![value, min, max].every(Number.isInteger)) {
    throw invalidArgument(field, 'an int parameter needs integer value and bounds', text.trim());
  }
  if (log && !(min > 0)) throw invalidArgument(field, 'a log-scale range needs MIN > 0', min);
  if (value < min || value > max) {
    throw invalidArgument(field, `the value must lie in [${min},${max}]`, value);
  }
  return {
    param: { name: g.name as string, type, value, min, max, log, line: index },
    head: g.head as string,
    tail: (g.tail as string) + (text.endsWith('\r') ? '\r' : ''),
  };
}

function parseMarked(source: string): Map<string, MarkedLine> {
  const out = new Map<string, MarkedLine>();
  splitLines(source).forEach((text, index) => {
    const marked = parseLine(text, index);
    if (!marked) return;
    if (out.has(marked.param.name)) {
      throw invalidArgument(`line ${index + 1}`, 'a parameter name may be marked only once', {
        name: marked.param.name,
      });
    }
    out.set(marked.param.name, marked);
  });
  return out;
}

/**
 * The tunable parameters of a program, in source order. A parameter is one assignment of a
 * numeric literal followed by a marker comment on the same line:
 *
 * ```python
 * GAP_PENALTY = 0.0  # troupe:param float[0,1]
 * NEIGHBORS = 5  # troupe:param int[1,15]
 * C = 1.0  # troupe:param float[0.01,100] log
 * ```
 *
 * An assignment whose trailing comment starts with `troupe:param` but does not follow the
 * grammar is an error (a typo never silently drops a parameter), as are a value outside its
 * range, a non-integer `int`, a log range that is not positive, and a name marked twice. Other
 * mentions of the marker (documentation, strings) are ignored.
 * @throws TroupeError `INVALID_ARGUMENT` naming the line and the rule broken
 */
export function parseTunableParams(source: string): TunableParam[] {
  return [...parseMarked(source).values()].map((m) => m.param);
}

/**
 * The literal written for a parameter value: integers for `int`; for `float`, up to 12
 * significant digits, always with a `.` or an exponent so that the language reads a float.
 */
export function formatParamValue(type: TunableParamType, value: number): string {
  if (type === 'int') return String(Math.round(value));
  const rounded = Number(value.toPrecision(12));
  const text = Object.is(rounded, -0) ? '0' : String(rounded);
  return /[.eE]/.test(text) || !Number.isFinite(rounded) ? text : `${text}.0`;
}

/**
 * The program with the given parameters' literals replaced; every other character, the marker
 * comments included, stays as it was. Values must lie in their ranges (and be integers for
 * `int`); names not given keep their values.
 * @throws TroupeError `INVALID_ARGUMENT` for an unknown name or a value out of range
 */
export function rewriteTunableParams(source: string, values: Record<string, number>): string {
  const marked = parseMarked(source);
  const lines = splitLines(source);
  for (const [name, value] of Object.entries(values)) {
    const m = marked.get(name);
    if (!m) throw invalidArgument(`values.${name}`, 'is not a marked parameter of the program');
    const { type, min, max } = m.param;
    if (!Number.isFinite(value) || value < min || value > max) {
      throw invalidArgument(`values.${name}`, `must lie in [${min},${max}]`, value);
    }
    if (type === 'int' && !Number.isInteger(value)) {
      throw invalidArgument(`values.${name}`, 'must be an integer', value);
    }
    lines[m.param.line] = m.head + formatParamValue(type, value) + m.tail;
  }
  return lines.join('\n');
}
