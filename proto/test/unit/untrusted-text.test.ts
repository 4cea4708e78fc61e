import { parseUntrustedText, type TroupeError } from '@troupe/proto';

function errorOf(fn: () => unknown): TroupeError {
  try {
    fn();
  } catch (err) {
    return err as TroupeError;
  }
  throw new Error('expected an error');
}

describe('parseUntrustedText', () => {
  it('parses YAML and JSON within the limits', () => {
    const text = [
      'kind: shell-tasks',
      'base: &base {image: troupe-busybox}',
      'tasks:',
      '  - id: a',
      '    command: |',
      "      echo 'it''s [ { unbalanced",
      '            deeper and deeper',
      '    config: *base',
      '  - {id: b, command: "echo ]]]"}  # a comment [[[',
    ].join('\n');
    expect(parseUntrustedText(text, { field: 'spec', maxDepth: 4 })).toEqual({
      kind: 'shell-tasks',
      base: { image: 'troupe-busybox' },
      tasks: [
        {
          id: 'a',
          command: "echo 'it''s [ { unbalanced\n      deeper and deeper\n",
          config: { image: 'troupe-busybox' },
        },
        { id: 'b', command: 'echo ]]]' },
      ],
    });
    expect(parseUntrustedText('{"a":[[1]]}', { field: 'spec', format: 'json' })).toEqual({
      a: [[1]],
    });
  });

  it.each([
    ['an undefined alias', 'a: *nowhere\n', /`spec`: is not valid YAML: .*alias.*nowhere/],
    [
      'too many aliases',
      `a: &a [1]\nb: [${Array.from({ length: 101 }, () => '*a').join(', ')}]\n`,
      /`spec`: must expand at most 100 aliases/,
    ],
    ['a deep flow nesting', `a: ${'['.repeat(65)}${']'.repeat(65)}`, /at most 64 deep/],
    ['a deep flow nesting hidden by quotes', `a: ${"[ ']', ".repeat(70)}`, /at most 64 deep/],
    [
      'a deep block nesting',
      Array.from({ length: 70 }, (_, i) => `${' '.repeat(i)}k:`).join('\n'),
      /at most 64 deep/,
    ],
    ['compact nested lists', `a:\n  ${'- '.repeat(70)}x\n`, /at most 64 deep/],
    ['a document too large', `a: ${'x'.repeat(5000)}`, /must be at most 4096 bytes/],
    ['a syntax error', 'a: [1, 2\nb: 3\n', /is not valid YAML: .*line \d+, column \d+/],
  ])('refuses %s with INVALID_ARGUMENT naming the field and the rule', (_what, text, rule) => {
    const err = errorOf(() => parseUntrustedText(text, { field: 'spec', maxBytes: 4096 }));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(rule);
  });

  it('refuses deep JSON and aliases that nest deeper than the text', () => {
    const json = `{"a":${'['.repeat(100)}${']'.repeat(100)}}`;
    expect(errorOf(() => parseUntrustedText(json, { field: 'f', format: 'json' })).message).toMatch(
      /at most 64 deep/,
    );
    const nested = ['a: &a [[[[1]]]]', 'b: &b [[[[*a]]]]', 'c: [[[[*b]]]]'].join('\n');
    expect(errorOf(() => parseUntrustedText(nested, { field: 'f', maxDepth: 10 })).message).toMatch(
      /at most 10 deep/,
    );
  });

  it('refuses a 4 MiB hostile document quickly', () => {
    const n = 2 * 1024 * 1024 - 10;
    const text = `a: ${'['.repeat(n)}${']'.repeat(n)}`.slice(0, 4 * 1024 * 1024);
    const started = performance.now();
    const err = errorOf(() => parseUntrustedText(text, { field: 'spec' }));
    expect(err.message).toMatch(/at most 64 deep/);
    // The parser would take seconds; the scan stops at the 65th level.
    expect(performance.now() - started).toBeLessThan(200);
  });
});

describe('parseUntrustedText duplicate keys', () => {
  it('refuses a repeated key, naming it and its line', () => {
    const err = errorOf(() => parseUntrustedText('a: 1\nb:\n  c: 2\n  c: 3\n', { field: 'spec' }));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toBe('`spec`: is not valid YAML: Map keys must be unique ("c" at line 4)');
    expect(() => parseUntrustedText('{a: 1, a: 2}', { field: 'spec' })).toThrow(/"a" at line 1/);
    // Keys equal as YAML values are duplicates even when written differently.
    expect(() => parseUntrustedText('1: a\n0x1: b\n', { field: 'spec' })).toThrow(/unique/);
  });

  it('checks a mapping of 30,000 keys in linear time', () => {
    // yaml's own uniqueKeys check compared every key with all earlier ones: 35 s for this. The
    // check is timed as a ratio (twice the keys: about twice the time when linear, four times
    // when quadratic), the best of two runs each, so a loaded machine does not decide it.
    const mapping = (n: number) => Array.from({ length: n }, (_, i) => `k${i}: ${i}`).join('\n');
    const options = { field: 'spec', maxEntries: 30_000 };
    const bestMs = (text: string, keys: number) => {
      let best = Infinity;
      for (let run = 0; run < 2; run++) {
        const t0 = performance.now();
        expect(Object.keys(parseUntrustedText(text, options) as object)).toHaveLength(keys);
        best = Math.min(best, performance.now() - t0);
      }
      return best;
    };
    const half = bestMs(mapping(15_000), 15_000);
    const text = mapping(30_000);
    expect(bestMs(text, 30_000) / half).toBeLessThan(3);
    const dup = `${text}\nk17: again\n`;
    expect(() => parseUntrustedText(dup, options)).toThrow(/"k17" at line 30001/);
  });
});

describe('parseUntrustedText entries', () => {
  it('refuses a list or mapping with more entries than maxEntries, naming where', () => {
    // A desktop task whose gold actions were 33,484 numbers took 0.3-0.4 s for zod to refuse.
    const gold = Array.from({ length: 2_001 }, (_, i) => i).join(', ');
    const text = `- id: a\n  gold: [${gold}]\n`;
    const err = errorOf(() => parseUntrustedText(text, { field: 'spec.tasks' }));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.details).toEqual({
      field: 'spec.tasks',
      rule: 'must hold at most 2000 entries in one list or mapping ([0].gold has 2001)',
    });
    const keys = Array.from({ length: 11 }, (_, i) => `k${i}: 1`).join(', ');
    expect(() => parseUntrustedText(`a: {b: {${keys}}}`, { field: 'f', maxEntries: 10 })).toThrow(
      '`f`: must hold at most 10 entries in one list or mapping (.a.b has 11)',
    );
    expect(parseUntrustedText(`[${gold.replace(/, 2000$/, '')}]`, { field: 'f' })).toHaveLength(
      2_000,
    );
  });
});
