import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { type z } from 'zod';
import { ErrorCode, TroupeError } from './errors';

/** Maps environment variables onto a raw config (a server's `applyEnvironment`). */
export type ApplyEnvironment = (
  raw: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>>,
) => { config: Record<string, unknown>; issues: string[] };

/** What {@link loadServerConfig} needs. */
export interface LoadServerConfigOptions<S extends z.ZodType> {
  /** A YAML (or JSON) file with the config; none means only the environment and defaults. */
  file?: string;
  /** The process environment (overrides the file). */
  env: Readonly<Record<string, string | undefined>>;
  /** The server's strict config schema. */
  schema: S;
  /** The server's environment mapping. */
  applyEnvironment: ApplyEnvironment;
  /** Applied to the raw config before the environment (e.g. sections that must exist). */
  defaults?: (raw: Record<string, unknown>) => Record<string, unknown>;
}

/**
 * Reads a server config (the YAML file, then environment overrides), validates it against the
 * server's schema and returns it. Every problem — unreadable file, bad YAML, a file that is not
 * a mapping, a bad variable, each schema issue named by its field path (an unknown field as
 * `config.nats.bogus: unknown field`) — is collected into one `INVALID_ARGUMENT` whose
 * `details.problems` lists them one per line, before anything is opened.
 *
 * @throws {@link TroupeError} `INVALID_ARGUMENT` with `details: {problems: string[]}`
 */
export function loadServerConfig<S extends z.ZodType>(
  options: LoadServerConfigOptions<S>,
): z.output<S> {
  let raw = options.file === undefined ? {} : readConfigFile(options.file);
  if (options.defaults) raw = options.defaults(raw);
  const { config, issues } = options.applyEnvironment(raw, options.env);
  const result = options.schema.safeParse(config);
  const problems = [...issues];
  if (!result.success) problems.push(...result.error.issues.flatMap(describeIssue));
  if (problems.length > 0 || !result.success) {
    throw configError(`invalid configuration: ${problems.join('; ')}`, problems);
  }
  return result.data;
}

/** The problems of a {@link loadServerConfig} error, one per line; undefined for other errors. */
export function serverConfigProblems(err: unknown): string[] | undefined {
  if (!(err instanceof TroupeError) || err.code !== ErrorCode.INVALID_ARGUMENT) return undefined;
  const problems = err.details?.['problems'];
  return Array.isArray(problems) && problems.every((p) => typeof p === 'string')
    ? problems
    : undefined;
}

function readConfigFile(file: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    // The first line of a YAML error names the problem and its line; the rest is a code frame.
    const problem = `cannot read config ${file}: ${(err as Error).message.split('\n')[0]}`;
    throw configError(problem, [problem], err);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    const problem = `config ${file}: must be a YAML mapping`;
    throw configError(problem, [problem]);
  }
  return parsed as Record<string, unknown>;
}

function describeIssue(issue: z.core.$ZodIssue): string[] {
  const path = ['config', ...issue.path.map(String)];
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => `${[...path, key].join('.')}: unknown field`);
  }
  return [`${path.join('.')}: ${issue.message}`];
}

function configError(message: string, problems: string[], cause?: unknown): TroupeError {
  return new TroupeError(ErrorCode.INVALID_ARGUMENT, message, {
    details: { problems },
    ...(cause !== undefined ? { cause } : {}),
  });
}

/**
 * The arguments of a server binary, `[--config file.yaml] [--help]`: `{file}` (absent without
 * `--config`), or `{help: true}`.
 *
 * @throws {@link TroupeError} `INVALID_ARGUMENT` naming an unknown argument or a `--config`
 *   without its file, with the usage (`details.problems` as for {@link loadServerConfig})
 */
export function parseServerArgs(
  args: readonly string[],
  usage: string,
): { file?: string; help?: true } {
  let file: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--help' || a === '-h') return { help: true };
    if (a === '--config') {
      file = args[++i];
      if (!file) {
        const problem = `--config needs a file (${usage})`;
        throw configError(problem, [problem]);
      }
    } else {
      const problem = `unknown argument '${a}' (${usage})`;
      throw configError(problem, [problem]);
    }
  }
  return file === undefined ? {} : { file };
}
