import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import {
  type ApplyEnvironment,
  EnvironmentOverrides,
  loadServerConfig,
  parseServerArgs,
  serverConfigProblems,
  TroupeError,
} from '@troupe/proto';

const Schema = z
  .object({
    cluster: z.string().default('default'),
    logLevel: z.enum(['info', 'debug']).default('info'),
    nats: z
      .object({
        servers: z.union([z.string(), z.array(z.string())]).default('nats://127.0.0.1:4222'),
        user: z.string().optional(),
        pass: z.string().optional(),
        token: z.string().optional(),
      })
      .strict()
      .prefault({}),
    port: z.int().min(0).default(1),
  })
  .strict();

const applyEnvironment: ApplyEnvironment = (raw, env) => {
  const o = new EnvironmentOverrides(raw, env).applyCommon();
  o.set('TEST_PORT', (v) => {
    const port = o.int('TEST_PORT', v);
    if (port !== undefined) o.config['port'] = port;
  });
  return o.result();
};

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'server-config-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const write = (name: string, text: string): string => {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
};

/** The problems of the error `fn` throws (fails the test when it does not throw one). */
function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(TroupeError);
    expect((err as TroupeError).code).toBe('INVALID_ARGUMENT');
    const problems = serverConfigProblems(err);
    expect(problems).toBeDefined();
    return problems ?? [];
  }
  throw new Error('expected an error');
}

describe('loadServerConfig', () => {
  it('reads the file, applies the environment over it and fills defaults', () => {
    const file = write('ok.yaml', 'cluster: from-file\nnats: {servers: nats://a:4222}\nport: 7\n');
    const config = loadServerConfig({
      file,
      env: { TROUPE_CLUSTER: 'from-env', TROUPE_NATS_TOKEN: 't' },
      schema: Schema,
      applyEnvironment,
    });
    expect(config).toEqual({
      cluster: 'from-env',
      logLevel: 'info',
      nats: { servers: 'nats://a:4222', token: 't' },
      port: 7,
    });
  });

  it('without a file uses the environment and defaults; an empty file is an empty mapping', () => {
    expect(loadServerConfig({ env: {}, schema: Schema, applyEnvironment }).cluster).toBe('default');
    const file = write('empty.yaml', '# nothing yet\n');
    expect(loadServerConfig({ file, env: {}, schema: Schema, applyEnvironment }).port).toBe(1);
  });

  it('a missing file is one problem naming the file', () => {
    const file = path.join(dir, 'absent.yaml');
    expect(
      problemsOf(() => loadServerConfig({ file, env: {}, schema: Schema, applyEnvironment })),
    ).toEqual([expect.stringMatching(new RegExp(`^cannot read config ${file}: ENOENT`))]);
  });

  it('bad YAML is one problem naming the file and the YAML error, without the code frame', () => {
    const file = write('bad.yaml', 'cluster: [unclosed\nport: 1\n');
    const problems = problemsOf(() =>
      loadServerConfig({ file, env: {}, schema: Schema, applyEnvironment }),
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(new RegExp(`^cannot read config ${file}: .*line \\d+`));
    expect(problems[0]).not.toContain('\n');
  });

  it('a file that is not a mapping is refused', () => {
    const file = write('list.yaml', '- a\n- b\n');
    expect(
      problemsOf(() => loadServerConfig({ file, env: {}, schema: Schema, applyEnvironment })),
    ).toEqual([`config ${file}: must be a YAML mapping`]);
  });

  it('names each unknown field with its full path, and collects every problem at once', () => {
    const file = write(
      'unknown.yaml',
      'clusterr: x\nnats: {servers: nats://a:4222, passwd: p, usr: u}\nport: -1\n',
    );
    const problems = problemsOf(() =>
      loadServerConfig({ file, env: { TEST_PORT: 'eight' }, schema: Schema, applyEnvironment }),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        "TEST_PORT: must be a non-negative integer (got 'eight')",
        'config.clusterr: unknown field',
        'config.nats.passwd: unknown field',
        'config.nats.usr: unknown field',
        expect.stringMatching(/^config\.port: /),
      ]),
    );
    expect(problems).toHaveLength(5);
  });

  it('applies defaults() before the environment', () => {
    const config = loadServerConfig({
      env: { TEST_PORT: '9' },
      schema: Schema,
      applyEnvironment,
      defaults: (raw) => ({ ...raw, cluster: 'defaulted', port: 3 }),
    });
    expect(config).toMatchObject({ cluster: 'defaulted', port: 9 });
  });
});

describe('parseServerArgs', () => {
  const usage = 'usage: srv [--config file.yaml]';
  it('reads --config and --help', () => {
    expect(parseServerArgs([], usage)).toEqual({});
    expect(parseServerArgs(['--config', 'a.yaml'], usage)).toEqual({ file: 'a.yaml' });
    expect(parseServerArgs(['--config', 'a.yaml', '-h'], usage)).toEqual({ help: true });
  });
  it('names an unknown argument or a --config without a file, with the usage', () => {
    expect(problemsOf(() => parseServerArgs(['--confg', 'a'], usage))).toEqual([
      `unknown argument '--confg' (${usage})`,
    ]);
    expect(problemsOf(() => parseServerArgs(['--config'], usage))).toEqual([
      `--config needs a file (${usage})`,
    ]);
  });
});

describe('EnvironmentOverrides', () => {
  it('maps the common variables and leaves the raw config untouched', () => {
    const raw = { nats: { servers: 'nats://file:4222', user: 'u' }, cluster: 'c' };
    const { config, issues } = new EnvironmentOverrides(raw, {
      TROUPE_CLUSTER: 'env',
      TROUPE_NATS_URL: 'nats://a:1, nats://b:2',
      TROUPE_NATS_PASS: 'p',
      TROUPE_LOG_LEVEL: 'debug',
      TROUPE_NATS_TOKEN: '',
    })
      .applyCommon()
      .result();
    expect(issues).toEqual([]);
    expect(config).toEqual({
      cluster: 'env',
      logLevel: 'debug',
      nats: { servers: ['nats://a:1', 'nats://b:2'], user: 'u', pass: 'p' },
    });
    expect(raw).toEqual({ nats: { servers: 'nats://file:4222', user: 'u' }, cluster: 'c' });
  });

  it('reads the NATS password from TROUPE_NATS_PASS_FILE, naming the variable when it cannot', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'troupe-pass-'));
    const file = path.join(dir, 'nats-password');
    writeFileSync(file, 'trs3cret\n');
    const read = (env: Record<string, string>) =>
      new EnvironmentOverrides({}, env).applyCommon().result();
    expect(read({ TROUPE_NATS_PASS_FILE: file, TROUPE_NATS_USER: 'node-agent.n1' })).toEqual({
      config: { nats: { user: 'node-agent.n1', pass: 'trs3cret' } },
      issues: [],
    });
    expect(read({ TROUPE_NATS_PASS_FILE: path.join(dir, 'missing') }).issues).toEqual([
      `TROUPE_NATS_PASS_FILE: cannot read ${path.join(dir, 'missing')} (ENOENT)`,
    ]);
    writeFileSync(file, '\n');
    expect(read({ TROUPE_NATS_PASS_FILE: file }).issues).toEqual([
      `TROUPE_NATS_PASS_FILE: ${file} is empty`,
    ]);
    expect(read({ TROUPE_NATS_PASS_FILE: file, TROUPE_NATS_PASS: 'p' }).issues).toEqual([
      'TROUPE_NATS_PASS_FILE: set it or TROUPE_NATS_PASS, not both',
    ]);
  });

  it('collects syntax problems named by the variable', () => {
    const o = new EnvironmentOverrides({}, {});
    expect(o.int('A', ' 12 ')).toBe(12);
    expect(o.int('A', '-1')).toBeUndefined();
    expect(o.bool('B', 'Yes')).toBe(true);
    expect(o.bool('B', 'maybe')).toBeUndefined();
    expect(o.pairs('C', 'a=1, b = 2,,c')).toEqual({ a: '1', b: '2' });
    expect(o.result().issues).toEqual([
      "A: must be a non-negative integer (got '-1')",
      "B: must be 1, true, yes, 0, false or no (got 'maybe')",
      "C: 'c' is not key=value (expected k=v,k=v)",
    ]);
  });
});
