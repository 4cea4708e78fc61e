import { ModelRegistry } from '../../src/model-registry';
import { TroupeError } from '@troupe/proto';

const valid = {
  baseURL: 'https://api.openai.com/v1',
  apiKeyEnv: 'OPENAI_API_KEY',
  model: 'gpt-4o',
  inputUsdPer1M: 2.5,
  outputUsdPer1M: 10,
};

function rejection(make: () => unknown): TroupeError {
  try {
    make();
  } catch (err) {
    if (err instanceof TroupeError) return err;
    throw err;
  }
  throw new Error('expected INVALID_ARGUMENT');
}

function issues(err: TroupeError): string[] {
  return (err.details!.issues as { field: string; rule: string }[]).map(
    (i) => `${i.field}: ${i.rule}`,
  );
}

describe('ModelRegistry', () => {
  it('validates and defaults a model', () => {
    const registry = new ModelRegistry({ models: { 'gpt-4o': valid } });
    expect(registry.get('gpt-4o')).toEqual({
      ...valid,
      maxTokens: 4_096,
      timeoutMs: 600_000,
      maxTokensParam: 'max_tokens',
    });
    expect(registry.names()).toEqual(['gpt-4o']);
    expect(registry.has('gpt-4o')).toBe(true);
  });

  it('names the field and the rule in every issue, all at once', () => {
    const err = rejection(
      () =>
        new ModelRegistry({
          models: {
            'gpt-4o': { ...valid, inputUsdPer1M: -1, maxConcurrency: 0 },
            local: { baseURL: 'localhost:8000', model: '', inputUsdPer1M: 0 } as never,
          },
        }),
    );
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toContain('models.gpt-4o.inputUsdPer1M: must be ≥ 0');
    expect(issues(err)).toEqual(
      expect.arrayContaining([
        'models.gpt-4o.inputUsdPer1M: must be ≥ 0',
        'models.gpt-4o.maxConcurrency: must be an integer ≥ 1',
        'models.local.baseURL: must be an http(s) URL such as https://api.openai.com/v1',
        'models.local.model: must be a non-empty string',
        'models.local.outputUsdPer1M: is required',
      ]),
    );
  });

  it('reports unknown fields on their own path with a suggestion', () => {
    const err = rejection(() =>
      ModelRegistry.fromObject({ models: { m: { ...valid, inputUsdPer1m: 1 } }, extra: true }),
    );
    expect(issues(err)).toEqual(
      expect.arrayContaining([
        'models.m.inputUsdPer1m: unknown field (did you mean `inputUsdPer1M`?)',
        'extra: unknown field',
      ]),
    );
  });

  it('never echoes a key pasted where a variable name belongs', () => {
    const key = 'sk-live-0123456789abcdef';
    const err = rejection(() =>
      ModelRegistry.fromObject({ models: { m: { ...valid, apiKeyEnv: key, apiKey: key } } }),
    );
    expect(issues(err)).toEqual(
      expect.arrayContaining([
        'models.m.apiKeyEnv: must be the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*), not the key itself',
        expect.stringMatching(/^models\.m\.apiKey: unknown field/),
      ]),
    );
    expect(JSON.stringify(err)).not.toContain(key);
    expect(err.message).not.toContain(key);
  });

  it('rejects credential headers, bad names, and a cap above the context window', () => {
    const err = rejection(() =>
      ModelRegistry.fromObject({
        models: {
          m: { ...valid, headers: { Authorization: 'Bearer x', 'X-Team': 'a' } },
          'bad name': valid,
          small: { ...valid, maxTokens: 9_000, contextTokens: 8_192 },
        },
      }),
    );
    expect(issues(err)).toEqual(
      expect.arrayContaining([
        'models.m.headers.Authorization: must not carry credentials: put the key in the environment variable named by apiKeyEnv',
        expect.stringMatching(/^models\.bad name: model names must match/),
        'models.small.maxTokens: must be ≤ contextTokens (8192)',
      ]),
    );
  });

  it('reports a missing or mistyped models map', () => {
    expect(issues(rejection(() => ModelRegistry.fromObject({})))).toEqual(['models: is required']);
    expect(issues(rejection(() => ModelRegistry.fromObject(null)))).toEqual([
      '(root): must be an object with a `models` map',
    ]);
  });

  it('loads YAML and JSON text', () => {
    const yaml = ModelRegistry.fromYaml(`
models:
  local-qwen:
    baseURL: http://localhost:8000/v1
    model: Qwen/Qwen2.5-Coder-7B-Instruct
    inputUsdPer1M: 0
    outputUsdPer1M: 0
    maxConcurrency: 4
    contextTokens: 32768
`);
    expect(yaml.get('local-qwen')).toMatchObject({ maxConcurrency: 4, maxTokens: 4_096 });
    const json = ModelRegistry.fromJson(JSON.stringify({ models: { 'gpt-4o': valid } }));
    expect(json.get('gpt-4o').model).toBe('gpt-4o');
    expect(JSON.parse(JSON.stringify(json))).toEqual(json.toJSON());
  });

  it('names the line of a YAML syntax error and the field of a YAML value error', () => {
    const syntax = rejection(() => ModelRegistry.fromYaml('models:\n  m: [unclosed\n'));
    expect(syntax.message).toMatch(/\(yaml\)`: is not valid YAML at line \d+, column \d+/);
    const value = rejection(() =>
      ModelRegistry.fromYaml(
        'models:\n  m:\n    baseURL: http://x/v1\n    model: m\n    inputUsdPer1M: lots\n    outputUsdPer1M: 1\n',
      ),
    );
    expect(issues(value)).toEqual(['models.m.inputUsdPer1M: must be a number']);
    expect(rejection(() => ModelRegistry.fromJson('{"models": ')).message).toContain('(json)');
  });

  it('rejects an unknown model name on field `model`, listing the known ones', () => {
    const registry = new ModelRegistry({ models: { a: valid, b: valid } });
    const err = rejection(() => registry.get('c'));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toBe('`model`: must name a model in the registry (a, b) (got "c")');
  });
});
