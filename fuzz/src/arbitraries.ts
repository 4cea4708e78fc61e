import fc from 'fast-check';
import { stringify as toYaml } from 'yaml';

/** A document as text, and how it was made (for reports). */
export interface TextCase {
  text: string;
  format: 'yaml' | 'json';
  /** What produced it: `mutate spec.tasks[3].cwd → number`, `alias bomb 9×9`, … */
  how: string;
}

const repeat = (s: string, n: number) => s.repeat(Math.max(0, n));

/** Nesting depths around the limits (32 for specs, 64 for task files) and far beyond. */
const depth = fc.oneof(
  fc.integer({ min: 1, max: 40 }),
  fc.integer({ min: 60, max: 70 }),
  fc.integer({ min: 100, max: 20_000 }),
);

/** Strings users and attackers write. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    '../../etc/passwd',
    '/',
    '/abs/path',
    'relative/path',
    '.',
    '..',
    'a\u0000b',
    '\ud800',
    '\ufeffbom',
    'TROUPE_TOKEN',
    'OPENAI_API_KEY',
    'x'.repeat(300),
    '${HOME}',
    '$(reboot)',
    '*',
    '&',
    '!!binary',
    'yes',
    'NaN',
    '1e309',
    '0x1F',
    '-',
    'a.b',
    'a b',
    'A',
    'troupe-nope',
    'busybox:latest',
  ),
  fc.integer({ min: 1_000, max: 300_000 }).map((n) => 'y'.repeat(n)),
);

/** Values of the wrong type, shape or size for any field. */
export const wrongValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: nastyString, weight: 4 },
  {
    arbitrary: fc.constantFrom(null, true, false, 0, -1, -0, 1.5, 1e308, -1e308, 2 ** 53 + 2),
    weight: 3,
  },
  { arbitrary: fc.integer(), weight: 2 },
  { arbitrary: fc.double(), weight: 1 },
  { arbitrary: fc.array(fc.jsonValue(), { maxLength: 5 }), weight: 1 },
  { arbitrary: fc.dictionary(nastyString, fc.jsonValue(), { maxKeys: 5 }), weight: 1 },
  { arbitrary: fc.anything({ maxDepth: 3 }), weight: 1 },
  {
    arbitrary: fc.integer({ min: 1, max: 3_000 }).map((n) => {
      let v: unknown = 'x';
      for (let i = 0; i < n; i++) v = [v];
      return v;
    }),
    weight: 1,
  },
  {
    arbitrary: fc
      .integer({ min: 1_000, max: 50_000 })
      .map((n) => Array.from({ length: n }, (_, i) => i)),
    weight: 1,
  },
);

type Path = (string | number)[];

/** Every path of a JSON-like value (the root included). */
function pathsOf(value: unknown, prefix: Path = [], out: Path[] = []): Path[] {
  out.push(prefix);
  if (Array.isArray(value)) value.forEach((v, i) => pathsOf(v, [...prefix, i], out));
  else if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) pathsOf(v, [...prefix, k], out);
  }
  return out;
}

/** A deep copy of `value` with `fn` applied at `path` (undefined removes it). */
function updateAt(value: unknown, path: Path, fn: (old: unknown) => unknown): unknown {
  if (path.length === 0) return fn(value);
  const [head, ...rest] = path;
  if (Array.isArray(value)) {
    const copy: unknown[] = [...(value as unknown[])];
    const next = updateAt(copy[head as number], rest, fn);
    if (next === undefined && rest.length === 0) copy.splice(head as number, 1);
    else copy[head as number] = next;
    return copy;
  }
  const copy = { ...(value as Record<string, unknown>) };
  const next = updateAt(copy[head as string], rest, fn);
  if (next === undefined && rest.length === 0) delete copy[head as string];
  else copy[head as string] = next;
  return copy;
}

/** `spec.tasks[3].cwd` */
export function formatPath(root: string, path: Path): string {
  return path.reduce<string>((s, k) => (typeof k === 'number' ? `${s}[${k}]` : `${s}.${k}`), root);
}

/** `value` as block YAML; as JSON (a subset of YAML) when too deep for the YAML writer. */
function yamlOrJson(value: unknown): string {
  try {
    return toYaml(value, { aliasDuplicateObjects: false });
  } catch {
    return JSON.stringify(value);
  }
}

/** A mutation of `seed`: one field replaced, removed, or an unknown one added; as YAML or JSON. */
export function mutatedDocument(seeds: readonly unknown[], root: string): fc.Arbitrary<TextCase> {
  return fc
    .constantFrom(...seeds)
    .chain((seed) => {
      const paths = pathsOf(seed);
      return fc.record({
        seed: fc.constant(seed),
        path: fc.constantFrom(...paths),
        op: fc.oneof(
          { arbitrary: wrongValue.map((v) => ({ kind: 'set' as const, v })), weight: 6 },
          { arbitrary: fc.constant({ kind: 'delete' as const, v: undefined }), weight: 1 },
          {
            arbitrary: fc
              .tuple(nastyString, wrongValue)
              .map(([k, v]) => ({ kind: 'add' as const, v: { k, v } })),
            weight: 1,
          },
        ),
        // A second mutation now and then: errors must name every broken field, or the first.
        twice: fc.option(fc.tuple(fc.constantFrom(...paths), wrongValue), { freq: 5 }),
        format: fc.constantFrom('yaml' as const, 'json' as const),
      });
    })
    .map(({ seed, path, op, twice, format }) => {
      let doc = updateAt(seed, path, (old) => {
        if (op.kind === 'set') return op.v;
        if (op.kind === 'delete') return undefined;
        const { k, v } = op.v;
        if (typeof old === 'object' && old !== null && !Array.isArray(old)) {
          return { ...old, [k]: v };
        }
        return Array.isArray(old) ? [...(old as unknown[]), v] : v;
      });
      if (twice) doc = updateAt(doc, twice[0], () => twice[1]);
      const text = format === 'json' ? JSON.stringify(doc) : yamlOrJson(doc);
      return {
        text: text ?? '',
        format,
        how: `mutate ${formatPath(root, path)} (${op.kind})${twice ? ` and ${formatPath(root, twice[0])}` : ''}`,
      };
    });
}

/** Hand-made hostile YAML: nesting, aliases, tags, sizes and syntax the limits must catch. */
export const hostileYaml: fc.Arbitrary<TextCase> = fc
  .oneof(
    depth.map((n) => ({ text: repeat('[', n) + repeat(']', n), how: `flow nesting ${n}` })),
    depth.map((n) => ({ text: repeat('{a: ', n) + '1' + repeat('}', n), how: `flow maps ${n}` })),
    depth.map((n) => ({
      text: Array.from({ length: n }, (_, i) => `${' '.repeat(i)}a:`).join('\n') + ' 1\n',
      how: `block nesting ${n}`,
    })),
    depth.map((n) => ({ text: `${repeat('- ', n)}x\n`, how: `compact sequences ${n}` })),
    depth.map((n) => ({ text: `${repeat('? ', n)}x\n`, how: `compact keys ${n}` })),
    fc
      .tuple(fc.integer({ min: 2, max: 12 }), fc.integer({ min: 2, max: 12 }))
      .map(([width, levels]) => {
        const lines = [`l0: &l0 [${Array(width).fill('"lol"').join(', ')}]`];
        for (let i = 1; i < levels; i++) {
          lines.push(
            `l${i}: &l${i} [${Array(width)
              .fill(`*l${i - 1}`)
              .join(', ')}]`,
          );
        }
        return { text: lines.join('\n') + '\n', how: `alias bomb ${width}^${levels}` };
      }),
    fc.integer({ min: 1, max: 3_000 }).map((n) => ({
      text: `a: &a {k: v}\nb: [${Array(n).fill('*a').join(', ')}]\n`,
      how: `${n} aliases`,
    })),
    fc.integer({ min: 1, max: 200 }).map((n) => ({
      // Each level merges the previous one twice: the merged maps nest.
      text:
        'a0: &a0 {x: 1}\n' +
        Array.from(
          { length: n },
          (_, i) => `a${i + 1}: &a${i + 1} {<<: [*a${i}, *a${i}], y${i}: *a${i}}`,
        ).join('\n') +
        '\n',
      how: `merge-key chain ${n}`,
    })),
    fc.constantFrom(
      { text: 'kind: *nope\n', how: 'undefined alias' },
      { text: 'a: &x 1\nb: &x 2\nc: *x\n', how: 'redefined anchor' },
      { text: '&a [*a]\n', how: 'self-referencing alias' },
      { text: 'a: &a\n  b: *a\n', how: 'recursive alias' },
      { text: 'kind: !!js/function "function () { return 1 }"\n', how: 'js tag' },
      { text: 'kind: !!binary aGVsbG8=\ntasks: [1]\n', how: 'binary tag' },
      { text: 'kind: !custom x\n', how: 'unknown tag' },
      { text: 'tasks: !!set {a, b}\nkind: shell-tasks\n', how: 'set tag' },
      { text: 'tasks: !!omap [a: 1]\nkind: shell-tasks\n', how: 'omap tag' },
      { text: 'kind: !!timestamp 2001-12-14\n', how: 'timestamp tag' },
      {
        text: 'concurrency: !!float .nan\nkind: shell-tasks\ntasks: [{id: a, command: x}]\n',
        how: 'nan',
      },
      { text: 'concurrency: .inf\nkind: shell-tasks\ntasks: [{id: a, command: x}]\n', how: 'inf' },
      { text: 'concurrency: 0x10\nkind: shell-tasks\ntasks: [{id: a, command: x}]\n', how: 'hex' },
      {
        text: 'concurrency: 1_000\nkind: shell-tasks\ntasks: [{id: a, command: x}]\n',
        how: 'yaml1.1 int',
      },
      { text: '%YAML 1.1\n---\nkind: yes\n', how: 'yaml 1.1 directive' },
      { text: '%TAG ! tag:evil.com,2000:\n---\nkind: !x y\n', how: 'tag directive' },
      { text: 'kind: a\n---\nkind: b\n', how: 'two documents' },
      { text: 'kind: a\nkind: b\n', how: 'duplicate keys' },
      {
        text: '__proto__: {polluted: 1}\nkind: shell-tasks\ntasks: [{id: a, command: x}]\n',
        how: '__proto__ key',
      },
      {
        text: 'kind: shell-tasks\ntasks: [{id: a, command: x, __proto__: {cwd: rel}}]\n',
        how: 'nested __proto__',
      },
      {
        text: 'kind: shell-tasks\nconfig: {env: {__proto__: x}}\ntasks: [{id: a, command: x}]\n',
        how: '__proto__ env key',
      },
      {
        text: 'kind: shell-tasks\nlabels: {constructor: x}\ntasks: [{id: a, command: x}]\n',
        how: 'constructor label',
      },
      { text: '? [a, b]\n: c\n', how: 'sequence key' },
      { text: '? {a: b}\n: c\n', how: 'mapping key' },
      { text: '[a, b]: c\n', how: 'flow sequence key' },
      { text: '"\\ud800": x\n', how: 'lone surrogate key' },
      { text: '\ufeffkind: shell-tasks\n', how: 'BOM' },
      { text: 'kind: "unterminated\n', how: 'unterminated quote' },
      { text: 'kind:\tshell-tasks\n', how: 'tab' },
      { text: '\u0000', how: 'NUL' },
      { text: '- a\nb: c\n', how: 'mixed block' },
      { text: 'kind: |\n  a\n b\n', how: 'bad block scalar' },
      { text: '<<: {kind: shell-tasks, tasks: [{id: a, command: x}]}\n', how: 'top-level merge' },
      { text: 'null', how: 'null document' },
      { text: '42', how: 'number document' },
      { text: '"just a string"', how: 'string document' },
      { text: '[]', how: 'empty list' },
      { text: '{}', how: 'empty map' },
      { text: '# only a comment\n', how: 'comment only' },
      { text: '   \n\t\n', how: 'whitespace only' },
    ),
    fc.integer({ min: 10_000, max: 1_200_000 }).map((n) => ({
      text: `kind: shell-tasks\nname: "${'n'.repeat(n)}"\ntasks: [{id: a, command: x}]\n`,
      how: `huge string ${n}`,
    })),
    fc.integer({ min: 10_000, max: 1_200_000 }).map((n) => ({
      text: `${'k'.repeat(n)}: 1\n`,
      how: `huge key ${n}`,
    })),
    fc.integer({ min: 1_000, max: 40_000 }).map((n) => ({
      text: Array.from({ length: n }, (_, i) => `k${i}: ${i}`).join('\n') + '\n',
      how: `${n} keys`,
    })),
    fc.integer({ min: 1_000, max: 40_000 }).map((n) => ({
      text: `kind: shell-tasks\ntasks:\n${repeat('  - {id: a, command: x}\n', n)}`,
      how: `${n} duplicate tasks`,
    })),
    fc.integer({ min: 1_000, max: 600_000 }).map((n) => ({
      text: `kind: "${repeat('\\"', n)}"\n`,
      how: `${n} escapes`,
    })),
    fc.integer({ min: 1_000, max: 600_000 }).map((n) => ({
      text: `kind: shell-tasks\n${repeat('#', n)}\n`,
      how: `${n}-char comment`,
    })),
    fc.integer({ min: 100, max: 200_000 }).map((n) => ({
      text: `${repeat('[', n)}\n`,
      how: `${n} unclosed brackets`,
    })),
    fc.integer({ min: 100, max: 100_000 }).map((n) => ({
      text: `a: |\n${repeat('  x\n', n)}${repeat('[', 100)}\n`,
      how: `block scalar then brackets ${n}`,
    })),
    fc.string({ unit: 'binary', maxLength: 2_000 }).map((s) => ({ text: s, how: 'random text' })),
    fc.uint8Array({ maxLength: 2_000 }).map((b) => ({
      text: Buffer.from(b).toString('utf8'),
      how: 'random bytes',
    })),
  )
  .map((c) => ({ ...c, format: 'yaml' as const }));

/** Hostile JSON (strict JSON parsing). */
export const hostileJson: fc.Arbitrary<TextCase> = fc
  .oneof(
    fc.jsonValue({ maxDepth: 6 }).map((v) => ({ text: JSON.stringify(v), how: 'random JSON' })),
    depth.map((n) => ({ text: repeat('[', n) + repeat(']', n), how: `array nesting ${n}` })),
    depth.map((n) => ({
      text: repeat('{"a":', n) + '1' + repeat('}', n),
      how: `object nesting ${n}`,
    })),
    fc
      .integer({ min: 100, max: 600_000 })
      .map((n) => ({ text: repeat('[', n), how: `${n} unclosed` })),
    fc.constantFrom(
      {
        text: '{"kind": "shell-tasks", "tasks": [{"id": "a", "command": "x"}], "concurrency": 1e999}',
        how: '1e999',
      },
      { text: '{"kind": "shell-tasks", "kind": "evolve", "tasks": []}', how: 'duplicate key' },
      {
        text: '{"__proto__": {"x": 1}, "kind": "shell-tasks", "tasks": [{"id": "a", "command": "x"}]}',
        how: '__proto__',
      },
      {
        text: '{"kind": "shell-tasks", "tasks": [{"id": "a", "command": "x"}],}',
        how: 'trailing comma',
      },
      { text: "{'kind': 'x'}", how: 'single quotes' },
      { text: '{"kind": "\\ud800"}', how: 'lone surrogate escape' },
      { text: '', how: 'empty' },
      { text: 'NaN', how: 'NaN' },
    ),
  )
  .map((c) => ({ ...c, format: 'json' as const }));
