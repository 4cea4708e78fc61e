import {
  DriverRegistry,
  type JobDriver,
  type JobSpec,
  checkSpecSize,
  maxSpecBytesFor,
  parseJobSpec,
  parseSpecText,
  parseSpecTextAsync,
} from '@troupe/coordinator';
import { closeUntrustedTextWorkers, invalidArgument, type TroupeError } from '@troupe/proto';

const echo: JobDriver = {
  name: 'echo',
  description: 'test driver',
  validate(spec: JobSpec) {
    if (!Array.isArray(spec.tasks)) throw invalidArgument('spec.tasks', 'must be a list');
  },
  plan: () => [],
  runTask: async () => ({}),
  grade: async () => ({ passed: true }),
};

function errorOf(fn: () => unknown): TroupeError {
  try {
    fn();
  } catch (err) {
    return err as TroupeError;
  }
  throw new Error('expected an error');
}

async function rejectionOf(p: Promise<unknown>): Promise<TroupeError> {
  try {
    await p;
  } catch (err) {
    return err as TroupeError;
  }
  throw new Error('expected a rejection');
}

describe('job spec', () => {
  it('fills defaults', () => {
    const spec = parseJobSpec({ kind: 'echo', tasks: [] });
    expect(spec).toMatchObject({
      concurrency: 4,
      priority: 0,
      weight: 1,
      taskTimeoutMs: 600_000,
      retries: { max: 2, backoffMs: 1_000, maxBackoffMs: 60_000 },
      labels: {},
      config: {},
    });
  });

  it.each([
    [{ kind: 'echo', tasks: [], concurrency: 0 }, 'spec.concurrency: must be >= 1'],
    [{ kind: 'echo', tasks: [], retries: { max: 11 } }, 'spec.retries.max: must be <= 10'],
    [{ kind: 'echo', tasks: [], budget: { usd: -1 } }, 'spec.budget.usd: must be >= 0'],
    [{ kind: 'echo', tasks: [], labels: { team: 3 } }, 'spec.labels.team: label values'],
    [{ kind: 'Echo!', tasks: [] }, 'spec.kind: must match'],
    [{ kind: 'echo' }, 'spec.tasks: is required'],
    [{ kind: 'echo', tasks: [], concurency: 2 }, 'concurency'],
    [
      { kind: 'echo', tasks: [], retries: { backoffMs: 500, maxBackoffMs: 100 } },
      'spec.retries.maxBackoffMs: must be >= retries.backoffMs',
    ],
  ])('names the field and the rule: %j', (raw, expected) => {
    const err = errorOf(() => parseJobSpec(raw));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toContain(expected);
  });

  it('reports YAML syntax errors with their line', () => {
    const err = errorOf(() => parseSpecText('kind: echo\ntasks: [1, 2\nconcurrency: 2\n'));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(/^`spec`: is not valid YAML: .* at line \d+, column \d+/);
  });

  it.each([
    ['an undefined alias', 'kind: echo\ntasks: *nowhere\n', /`spec`: is not valid YAML: .*nowhere/],
    [
      'an alias bomb',
      `kind: echo\na: &a [1]\ntasks: [${Array.from({ length: 101 }, () => '*a').join(',')}]\n`,
      /`spec`: must expand at most 100 aliases/,
    ],
    [
      'a deep nesting',
      `kind: echo\ntasks: ${'['.repeat(40)}${']'.repeat(40)}`,
      /`spec`: must nest mappings and lists at most 32 deep/,
    ],
    [
      'a spec text over the limit',
      `kind: echo\ntasks: [${'1,'.repeat(300_000)}]`,
      /at most 524288/,
    ],
  ])('refuses %s with INVALID_ARGUMENT on spec', (_what, text, rule) => {
    const err = errorOf(() => parseSpecText(text));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(rule);
  });

  it('refuses a spec larger than half the server max_payload, naming the limit', () => {
    expect(maxSpecBytesFor(1024 * 1024)).toBe(512 * 1024);
    const big = parseJobSpec({ kind: 'echo', tasks: ['x'.repeat(600 * 1024)] });
    const err = errorOf(() => checkSpecSize(big, maxSpecBytesFor(1024 * 1024)));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(/^`spec`: must be at most 524288 bytes as JSON \(got \d+\)/);
    expect(() => checkSpecSize(big, maxSpecBytesFor(8 * 1024 * 1024))).not.toThrow();
  });

  it('parses JSON with the JSON format, and refuses a scalar document', () => {
    expect(parseSpecText('{"kind":"echo","tasks":[]}', 'json')).toEqual({
      kind: 'echo',
      tasks: [],
    });
    expect(errorOf(() => parseSpecText('{"kind":', 'json')).message).toMatch(/not valid JSON/);
    expect(errorOf(() => parseJobSpec(parseSpecText('42'))).message).toMatch(/must be a mapping/);
  });
});

describe('parseSpecTextAsync', () => {
  afterAll(async () => {
    await closeUntrustedTextWorkers();
  });

  it('parses a large spec off the loop with the limits and errors of parseSpecText', async () => {
    const tasks = Array.from({ length: 1_500 }, (_, i) => `  - {id: t${i}, command: echo ${i}}`);
    const text = ['kind: echo', 'tasks:', ...tasks].join('\n');
    expect(text.length).toBeGreaterThan(32 * 1024);
    expect(await parseSpecTextAsync(text)).toEqual(parseSpecText(text));
    for (const bad of [`${text}\n  - [`, `${text}\nkind: again`, `a:${' ['.repeat(40)}`]) {
      const sync = errorOf(() => parseSpecText(bad));
      const off = await rejectionOf(parseSpecTextAsync(bad));
      expect(off.code).toBe('INVALID_ARGUMENT');
      expect(off.message).toBe(sync.message);
      expect(off.details).toEqual(sync.details);
    }
    const big = await rejectionOf(parseSpecTextAsync(text, 'auto', 40_000));
    expect(big.details).toMatchObject({ field: 'spec' });
    expect(big.message).toMatch(/must be at most 40000 bytes/);
    expect((await rejectionOf(parseSpecTextAsync('  '))).message).toMatch(/non-empty/);
    // Six parses of ~40 KB, in worker threads that start cold: seconds on a loaded 2-core host.
  }, 60_000);
});

describe('driver registry', () => {
  const registry = new DriverRegistry().register(echo);

  it('validates the common fields, then the driver fields', async () => {
    expect((await registry.validate({ kind: 'echo', tasks: [] })).kind).toBe('echo');
    const err = await rejectionOf(registry.validate({ kind: 'echo', tasks: 'x' }));
    expect(err.message).toBe('`spec.tasks`: must be a list');
  });

  it('refuses an unknown kind, listing the known ones', async () => {
    const err = await rejectionOf(registry.validate({ kind: 'nope', tasks: [] }));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toContain('`spec.kind`: unknown job kind (known: echo)');
    expect(err.details).toMatchObject({ field: 'spec.kind', knownKinds: ['echo'] });
  });

  it('refuses two drivers with one name', () => {
    expect(() => new DriverRegistry().register(echo).register(echo)).toThrow(/already/);
  });
});
