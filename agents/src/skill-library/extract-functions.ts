import { parser } from '@lezer/python';

type Tree = ReturnType<typeof parser.parse>;
type SyntaxNode = Tree['topNode'];

/** A function found in executed code by a real Python parser (@lezer/python). */
export interface ExtractedFunction {
  /** The function's name. */
  name: string;
  /** The whole `def` (decorators included), dedented to column 0, ending with one newline. */
  source: string;
  /** The docstring, cleaned like Python's `inspect.cleandoc`; absent when there is none. */
  docstring?: string;
  /**
   * Bare names it calls (`g(...)`, not `x.g(...)`), decorators included, in order of first
   * appearance: what it may need from other skills.
   */
  calls: string[];
}

/**
 * The top-level `def` / `async def` statements of `code` (with their decorators), in order.
 * Functions nested in a `def` stay part of it; functions inside classes or other blocks
 * (`if`, `try`, ...) are not extracted. Code that does not parse (any error node in the tree)
 * yields `[]`, so nothing is taken from code Python would reject.
 */
export function extractFunctions(code: string): ExtractedFunction[] {
  const text = dedent(code.replace(/\r\n?/g, '\n'));
  const tree = parser.parse(text);
  if (hasError(tree) || !topLevelAtColumnZero(tree, text)) return [];
  const out: ExtractedFunction[] = [];
  for (let n = tree.topNode.firstChild; n; n = n.nextSibling) {
    const def =
      n.name === 'FunctionDefinition'
        ? n
        : n.name === 'DecoratedStatement'
          ? n.getChild('FunctionDefinition')
          : null;
    if (!def) continue;
    const nameNode = def.getChild('VariableName');
    if (!nameNode) continue;
    const name = text.slice(nameNode.from, nameNode.to);
    const docstring = docstringOf(def, text);
    out.push({
      name,
      source: dedent(text.slice(lineStart(text, n.from), n.to)).trimEnd() + '\n',
      ...(docstring !== undefined ? { docstring } : {}),
      calls: callsIn(n, text),
    });
  }
  return out;
}

/**
 * `code` without comments and blank lines, each line without trailing blanks, dedented: two
 * sources that differ only in comments and spacing at line ends normalise to the same text.
 * Code that does not parse is normalised by whitespace only.
 */
export function normalisePython(code: string): string {
  const text = dedent(code.replace(/\r\n?/g, '\n'));
  const tree = parser.parse(text);
  let stripped = text;
  if (!hasError(tree)) {
    const comments: { from: number; to: number }[] = [];
    tree.iterate({
      enter: (n) => {
        if (n.name === 'Comment') comments.push({ from: n.from, to: n.to });
      },
    });
    for (const c of comments.reverse()) {
      stripped = stripped.slice(0, c.from) + stripped.slice(c.to);
    }
  }
  return dedent(
    stripped
      .split('\n')
      .map((l) => l.trimEnd())
      .filter((l) => l !== '')
      .join('\n'),
  );
}

function hasError(tree: Tree): boolean {
  let bad = false;
  tree.iterate({
    enter: (n) => {
      if (n.type.isError) bad = true;
      return !bad;
    },
  });
  return bad;
}

/**
 * Lezer accepts a statement indented less than the block before it but more than column 0,
 * which Python rejects ("unindent does not match any outer indentation level").
 */
function topLevelAtColumnZero(tree: Tree, text: string): boolean {
  for (let n = tree.topNode.firstChild; n; n = n.nextSibling) {
    if (n.name !== 'Comment' && lineStart(text, n.from) !== n.from) return false;
  }
  return true;
}

function lineStart(text: string, pos: number): number {
  return text.lastIndexOf('\n', pos - 1) + 1;
}

/** Removes the indentation common to every non-blank line (like `textwrap.dedent`). */
export function dedent(text: string): string {
  const lines = text.split('\n');
  let common: string | undefined;
  for (const l of lines) {
    if (l.trim() === '') continue;
    const indent = /^[ \t]*/.exec(l)?.[0] ?? '';
    if (common === undefined || !indent.startsWith(common)) {
      let i = 0;
      while (common !== undefined && i < common.length && common[i] === indent[i]) i++;
      common = common === undefined ? indent : common.slice(0, i);
    }
  }
  if (!common) return text;
  const cut = common.length;
  return lines.map((l) => (l.trim() === '' ? '' : l.slice(cut))).join('\n');
}

function docstringOf(def: SyntaxNode, text: string): string | undefined {
  const body = def.getChild('Body');
  let first = body?.firstChild ?? null;
  while (first && first.name === ':') first = first.nextSibling;
  // `def f(): "doc"` on one line: the body holds the statement itself.
  if (!first || first.name !== 'ExpressionStatement') return undefined;
  const str = first.firstChild;
  if (!str || str.name !== 'String' || str.nextSibling) return undefined;
  const value = pythonStringValue(text.slice(str.from, str.to));
  return value === undefined ? undefined : cleandoc(value);
}

/** The value of a Python string literal (no f-strings or bytes); undefined when not one. */
function pythonStringValue(literal: string): string | undefined {
  const m = /^([rRuU]?)('''|"""|'|")([\s\S]*)\2$/.exec(literal);
  if (!m) return undefined;
  const raw = m[1]?.toLowerCase() === 'r';
  const body = m[3] ?? '';
  if (raw) return body;
  const simple: Record<string, string> = {
    n: '\n',
    t: '\t',
    r: '\r',
    '\\': '\\',
    "'": "'",
    '"': '"',
    '\n': '',
    a: '\x07',
    b: '\b',
    f: '\f',
    v: '\v',
    '0': '\0',
  };
  return body.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|[\s\S])/g, (all, esc: string) => {
    if (esc.length > 1) return String.fromCharCode(parseInt(esc.slice(1), 16));
    return simple[esc] ?? all;
  });
}

/** Like Python's `inspect.cleandoc`, except that tabs are kept. */
function cleandoc(doc: string): string {
  const lines = doc.split('\n');
  const first = (lines[0] ?? '').trim();
  const rest = dedent(lines.slice(1).join('\n')).split('\n');
  const all = [first, ...(lines.length > 1 ? rest : [])].map((l) => l.trimEnd());
  while (all.length > 0 && all[0] === '') all.shift();
  while (all.length > 0 && all[all.length - 1] === '') all.pop();
  return all.join('\n');
}

function callsIn(node: SyntaxNode, text: string): string[] {
  const names = new Set<string>();
  const cursor = node.cursor();
  const end = node.to;
  do {
    if (cursor.from >= end) break;
    const callee =
      cursor.name === 'CallExpression' || cursor.name === 'Decorator'
        ? cursor.node.firstChild
        : null;
    // A decorator's first child is `@`; its name follows.
    const target = callee?.name === 'At' ? callee.nextSibling : callee;
    if (target?.name === 'VariableName') {
      const after = target.nextSibling;
      // `@a.b` is an attribute, not a bare name.
      if (!(cursor.name === 'Decorator' && after?.name === '.')) {
        names.add(text.slice(target.from, target.to));
      }
    }
  } while (cursor.next());
  return [...names];
}
