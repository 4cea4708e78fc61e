import { isMap, isScalar, parseDocument, visit } from 'yaml';
import { invalidArgument } from './errors';

/** Default limits of {@link parseUntrustedText}. */
export const UntrustedTextLimits = {
  /** Largest document, in UTF-8 bytes. */
  MAX_BYTES: 4 * 1024 * 1024,
  /** Deepest nesting of mappings and sequences. */
  MAX_DEPTH: 64,
  /** Most alias expansions (`*name`) of a YAML document. */
  MAX_ALIASES: 100,
  /**
   * Most entries of one list or mapping. Checked on the parsed value, before any schema sees it:
   * a schema reports every wrong element, so checking a 30,000-element list of wrong elements
   * held the event loop for half a second. A job holds at most 2,000 tasks.
   */
  MAX_ENTRIES: 2_000,
} as const;

/** Options of {@link parseUntrustedText}. */
export interface ParseUntrustedTextOptions {
  /** The field errors name (`spec`, `task.yaml`, `spec.tasks (suite/tasks.yaml)`). */
  field: string;
  /** `yaml` (a superset of JSON) or strict `json`. @default 'yaml' */
  format?: 'yaml' | 'json';
  /** Largest document in UTF-8 bytes. @default 4194304 */
  maxBytes?: number;
  /** Deepest nesting of mappings and sequences. @default 64 */
  maxDepth?: number;
  /** Most alias expansions (YAML). @default 100 */
  maxAliases?: number;
  /** Most entries of one list or mapping. @default 2000 */
  maxEntries?: number;
}

/**
 * Parses a YAML or JSON document that came from a user (job specs, task files) with bounded cost:
 * its size and nesting depth are checked by a linear scan before the parser sees it (a deeply
 * nested document costs the YAML parser time quadratic in its depth, and overflows its stack), and
 * again on the parsed value (aliases can nest what the text does not); alias expansions are
 * capped. Every failure — syntax, limits, undefined or excessive aliases — is `INVALID_ARGUMENT`
 * on `field` naming the rule.
 */
export function parseUntrustedText(text: string, options: ParseUntrustedTextOptions): unknown {
  const { field } = options;
  const format = options.format ?? 'yaml';
  const maxBytes = options.maxBytes ?? UntrustedTextLimits.MAX_BYTES;
  const maxDepth = options.maxDepth ?? UntrustedTextLimits.MAX_DEPTH;
  const maxAliases = options.maxAliases ?? UntrustedTextLimits.MAX_ALIASES;
  const maxEntries = options.maxEntries ?? UntrustedTextLimits.MAX_ENTRIES;
  // Length in UTF-16 units is at most the UTF-8 length: only count bytes when it may matter.
  if (text.length > maxBytes || Buffer.byteLength(text, 'utf8') > maxBytes) {
    throw invalidArgument(
      field,
      `must be at most ${maxBytes} bytes (got ${Buffer.byteLength(text, 'utf8')})`,
    );
  }
  const depthRule = `must nest mappings and lists at most ${maxDepth} deep`;
  if (scanDepth(text, format, maxDepth) > maxDepth) throw invalidArgument(field, depthRule);
  let value: unknown;
  if (format === 'json') {
    try {
      value = JSON.parse(text) as unknown;
    } catch (err) {
      throw invalidArgument(field, `is not valid JSON: ${(err as Error).message}`);
    }
  } else {
    // yaml's own `uniqueKeys` compares each key with every earlier one of its mapping: quadratic
    // (30,000 keys took 35 s). Duplicates are found after parsing, in linear time.
    const doc = parseDocument(text, { uniqueKeys: false });
    const first = doc.errors[0];
    if (first) {
      // The first line of a yaml error names the problem and its line and column.
      const line = (first.message.split('\n')[0] ?? first.message).replace(/:$/, '');
      throw invalidArgument(field, `is not valid YAML: ${line}`);
    }
    const duplicate = firstDuplicateKey(doc);
    if (duplicate !== undefined) {
      throw invalidArgument(
        field,
        `is not valid YAML: Map keys must be unique (${JSON.stringify(String(duplicate.key)).slice(0, 80)} at line ${lineOf(text, duplicate.offset)})`,
      );
    }
    try {
      value = doc.toJS({ maxAliasCount: maxAliases }) as unknown;
    } catch (err) {
      // Undefined aliases and alias bombs are the document's fault, not ours.
      const message = (err as Error).message;
      const rule = message.includes('Excessive alias count')
        ? `must expand at most ${maxAliases} aliases`
        : `is not valid YAML: ${message.split('\n')[0] ?? message}`;
      throw invalidArgument(field, rule);
    }
  }
  const shape = valueShape(value, maxDepth, maxEntries);
  if (shape.depth > maxDepth) throw invalidArgument(field, depthRule);
  if (shape.crowded) {
    throw invalidArgument(
      field,
      `must hold at most ${maxEntries} entries in one list or mapping (${shape.crowded.path} has ${shape.crowded.entries})`,
    );
  }
  return value;
}

/** A scalar key that repeats in its mapping, with its offset in the text. */
function firstDuplicateKey(
  doc: ReturnType<typeof parseDocument>,
): { key: unknown; offset: number } | undefined {
  let found: { key: unknown; offset: number } | undefined;
  // The depth was checked before parsing, so the recursive visit stays shallow.
  visit(doc, {
    Map(_, map) {
      if (!isMap(map)) return undefined;
      const seen = new Set<unknown>();
      for (const pair of map.items) {
        // Like yaml's own check: scalar keys by value (collection keys are never equal).
        if (!isScalar(pair.key)) continue;
        if (seen.has(pair.key.value)) {
          found = { key: pair.key.value, offset: pair.key.range?.[0] ?? 0 };
          return visit.BREAK;
        }
        seen.add(pair.key.value);
      }
      return undefined;
    },
  });
  return found;
}

/** 1-based line number of `offset` in `text`. */
function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

/**
 * An upper estimate of a document's nesting depth, in one pass without recursion: flow
 * collections (`[`, `{` outside quotes and comments) plus, for YAML, the stack of distinct
 * indentations and compact `- ` / `? ` entries of block collections. Stops counting once past
 * `stopAbove`.
 */
function scanDepth(text: string, format: 'yaml' | 'json', stopAbove: number): number {
  let flow = 0;
  let max = 0;
  const indents: number[] = [];
  let quote: '"' | "'" | undefined;
  /** Indentation of the line that opened a block scalar (`|`, `>`) whose lines are being skipped. */
  let blockScalarOf: number | undefined;
  let lineIndent = 0;
  let lineStart = true;
  let i = 0;
  const n = text.length;
  while (i < n) {
    if (lineStart) {
      lineStart = false;
      if (format === 'yaml' && flow === 0 && quote === undefined) {
        let col = 0;
        while (i + col < n && text[i + col] === ' ') col++;
        const c = text[i + col];
        const blank = c === undefined || c === '\n' || c === '\r';
        if (blockScalarOf !== undefined && (blank || col > blockScalarOf)) {
          // A line of a block scalar is text: quotes, brackets and indentation mean nothing.
          const eol = text.indexOf('\n', i);
          i = eol < 0 ? n : eol + 1;
          lineStart = true;
          continue;
        }
        blockScalarOf = undefined;
        lineIndent = col;
        if (!blank && c !== '#') {
          while (indents.length > 0 && indents[indents.length - 1]! >= col) indents.pop();
          indents.push(col);
          // Compact nested entries on one line (`- - - x`) are one level each.
          let j = i + col;
          let compact = 0;
          while ((text[j] === '-' || text[j] === '?') && text[j + 1] === ' ') {
            compact++;
            j += 2;
            while (text[j] === ' ') j++;
          }
          max = Math.max(max, indents.length + compact);
          if (max > stopAbove) return max;
        }
      }
    }
    const c = text[i]!;
    if (quote !== undefined) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) {
        if (quote === "'" && text[i + 1] === "'") i++;
        else quote = undefined;
      } else if (c === '\n') lineStart = true;
      i++;
      continue;
    }
    switch (c) {
      case '"':
      case "'":
        // In YAML a quote only opens a string at the start of a scalar, not inside a word.
        if (format === 'json' || i === 0 || /[\s[{,:-]/.test(text[i - 1]!)) quote = c;
        break;
      case '#':
        if (format === 'yaml' && (i === 0 || /\s/.test(text[i - 1]!))) {
          while (i < n && text[i] !== '\n') i++;
          continue;
        }
        break;
      case '|':
      case '>':
        if (
          format === 'yaml' &&
          flow === 0 &&
          /^[|>][-+0-9]*[ \t]*(#.*)?\r?(\n|$)/.test(
            text.slice(i, text.indexOf('\n', i) < 0 ? n : text.indexOf('\n', i) + 1),
          )
        ) {
          blockScalarOf = lineIndent;
        }
        break;
      case '[':
      case '{':
        flow++;
        max = Math.max(max, indents.length + flow);
        if (max > stopAbove) return max;
        break;
      case ']':
      case '}':
        if (flow > 0) flow--;
        break;
      case '\n':
        lineStart = true;
        break;
    }
    i++;
  }
  return max;
}

/**
 * Nesting depth of a parsed value (stops counting once past `stopAbove`), and the first list or
 * mapping with more than `maxEntries` entries, with its path. Iterative.
 */
function valueShape(
  value: unknown,
  stopAbove: number,
  maxEntries: number,
): { depth: number; crowded?: { path: string; entries: number } } {
  let max = 0;
  const stack: { v: unknown; d: number; path: string }[] = [{ v: value, d: 0, path: '(root)' }];
  // Aliases share nodes: a node is walked again only when reached deeper than before, so an
  // alias bomb costs at most `stopAbove` walks per node.
  const deepest = new Map<object, number>();
  while (stack.length > 0) {
    const { v, d, path } = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    const depth = d + 1;
    if (depth > max) max = depth;
    if (max > stopAbove) return { depth: max };
    if ((deepest.get(v) ?? 0) >= depth) continue;
    deepest.set(v, depth);
    const keys = Array.isArray(v) ? undefined : Object.keys(v);
    const size = keys ? keys.length : (v as unknown[]).length;
    if (size > maxEntries) return { depth: max, crowded: { path, entries: size } };
    const at = (key: string) => (path === '(root)' ? key : `${path}${key}`);
    for (let i = 0; i < size; i++) {
      const key = keys?.[i];
      const child: unknown =
        key === undefined ? (v as unknown[])[i] : (v as Record<string, unknown>)[key];
      if (typeof child === 'object' && child !== null) {
        stack.push({
          v: child,
          d: depth,
          path: at(key === undefined ? `[${i}]` : `.${key.slice(0, 64)}`),
        });
      }
    }
  }
  return { depth: max };
}
