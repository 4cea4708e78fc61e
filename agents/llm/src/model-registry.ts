import { type FieldIssue, invalidArgument, NamePattern, TroupeError } from '@troupe/proto';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';
import { type ModelConfig, ModelConfigSchema, type ModelOptions } from './model-config';

/** Registry names: what agents and job specs refer to, e.g. `gpt-4o`, `local-qwen`, `qwen2.5:7b`. */
export const MODEL_NAME = NamePattern.MODEL_NAME;

const ModelRegistrySchema = z.strictObject(
  {
    models: z.record(
      z
        .string()
        .regex(
          MODEL_NAME,
          'model names must match [A-Za-z0-9][A-Za-z0-9._:/-]{0,127} (letters, digits, . _ : / -)',
        ),
      ModelConfigSchema,
      {
        error: (issue) =>
          issue.input === undefined ? 'is required' : 'must be a map of model name → model',
      },
    ),
  },
  { error: 'must be an object with a `models` map' },
);

/** A model registry as a caller writes it: `{models: {<name>: ModelOptions}}`. */
export interface ModelRegistryOptions {
  /** Models by registry name. */
  models: Record<string, ModelOptions>;
}

/** A {@link ModelRegistryOptions} once validated and defaulted. */
export interface ModelRegistryConfig {
  /** Models by registry name. */
  models: Record<string, ModelConfig>;
}

/**
 * Named models → where to reach them, what they cost, their limits. Built from an object or
 * YAML/JSON text and validated by a strict schema; every problem is reported at once, each naming
 * its field (`models.gpt-4o.inputUsdPer1M: must be ≥ 0`). Holds no secrets (API keys are read
 * from the environment by the client at call time), so serialising it is always safe.
 *
 * @example
 * ```ts
 * const registry = ModelRegistry.fromYaml(`
 * models:
 *   gpt-4o:
 *     baseURL: https://api.openai.com/v1
 *     apiKeyEnv: OPENAI_API_KEY
 *     model: gpt-4o
 *     inputUsdPer1M: 2.5
 *     outputUsdPer1M: 10
 * `);
 * ```
 */
export class ModelRegistry {
  private readonly models: ReadonlyMap<string, ModelConfig>;

  /** Validates `options`; throws `INVALID_ARGUMENT` listing every issue with its field path. */
  constructor(options: ModelRegistryOptions) {
    const result = ModelRegistrySchema.safeParse(options);
    if (!result.success) throw registryError(result.error);
    this.models = new Map(Object.entries(result.data.models));
  }

  /** A registry from an untyped value (parsed config, job spec fragment). */
  static fromObject(value: unknown): ModelRegistry {
    return new ModelRegistry(value as ModelRegistryOptions);
  }

  /** A registry from YAML text (JSON is YAML too). Syntax errors name the line and column. */
  static fromYaml(text: string): ModelRegistry {
    let value: unknown;
    try {
      // prettyErrors off: its source excerpt could quote a secret pasted into the file.
      value = parseYaml(text, { prettyErrors: false });
    } catch (err) {
      if (err instanceof YAMLParseError) {
        // Position from the offset: linePos is only filled in with prettyErrors.
        const offset = Math.min(err.pos[0], text.length);
        const before = text.slice(0, offset);
        const line = before.split('\n').length;
        const col = offset - before.lastIndexOf('\n');
        const at = ` at line ${line}, column ${col}`;
        throw invalidArgument('(yaml)', `is not valid YAML${at} (${err.code})`);
      }
      throw err;
    }
    return ModelRegistry.fromObject(value);
  }

  /** A registry from JSON text. */
  static fromJson(text: string): ModelRegistry {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      // JSON.parse messages quote at most a few characters around the error position.
      const detail = err instanceof Error ? err.message : String(err);
      throw invalidArgument('(json)', `is not valid JSON (${detail})`);
    }
    return ModelRegistry.fromObject(value);
  }

  /**
   * The model named `name`; throws `INVALID_ARGUMENT` on field `model` listing the known names.
   */
  get(name: string): ModelConfig {
    const model = this.models.get(name);
    if (model === undefined) {
      const known = [...this.models.keys()].join(', ');
      throw invalidArgument(
        'model',
        `must name a model in the registry (${known === '' ? 'the registry is empty' : known})`,
        name,
      );
    }
    return model;
  }

  /** Whether `name` is registered. */
  has(name: string): boolean {
    return this.models.has(name);
  }

  /** Registered names, in definition order. */
  names(): string[] {
    return [...this.models.keys()];
  }

  /** The validated config (no secrets): what `JSON.stringify(registry)` prints. */
  toJSON(): ModelRegistryConfig {
    return { models: Object.fromEntries(this.models) };
  }
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out === '' ? '(root)' : out;
}

const KNOWN_FIELDS: readonly string[] = Object.keys(ModelConfigSchema.shape);

function unknownFieldRule(key: string, path: readonly PropertyKey[]): string {
  // Only model entries have a list of fields worth suggesting from.
  if (path.length === 2 && path[0] === 'models') {
    const match = KNOWN_FIELDS.find((field) => field.toLowerCase() === key.toLowerCase());
    if (match !== undefined) return `unknown field (did you mean \`${match}\`?)`;
    return `unknown field (known: ${KNOWN_FIELDS.join(', ')})`;
  }
  return 'unknown field';
}

/**
 * One `INVALID_ARGUMENT` for all issues, paths written with dots (`models.gpt-4o.maxTokens`,
 * which `fromZodError` would quote as `models["gpt-4o"]`); an unknown key is reported on its own
 * path; received values are never echoed (a misplaced secret must not reach an error message).
 */
function registryError(error: z.core.$ZodError): TroupeError {
  const issues: FieldIssue[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        issues.push({
          field: formatPath([...issue.path, key]),
          rule: unknownFieldRule(key, issue.path),
        });
      }
    } else if (issue.code === 'invalid_key') {
      issues.push({
        field: formatPath(issue.path),
        rule: issue.issues[0]?.message ?? 'is not a valid model name',
      });
    } else {
      issues.push({ field: formatPath(issue.path), rule: issue.message });
    }
  }
  const message = `invalid model registry: ${issues.map((i) => `${i.field}: ${i.rule}`).join('; ')}`;
  return new TroupeError('INVALID_ARGUMENT', message, { details: { issues } });
}
