import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { type z } from 'zod';
import { CliError, ExitCode } from './exit-codes';

/** Maps environment variables onto a raw config (the coordinator's or node agent's `applyEnvironment`). */
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
 * Reads a server config (file, then environment overrides), validates it against the server's
 * schema and returns it. Every problem (unreadable file, bad variable, each schema issue named
 * by its field path) is collected into one {@link CliError} with the USAGE exit code, before
 * any connection is opened.
 */
export function loadServerConfig<S extends z.ZodType>(
  options: LoadServerConfigOptions<S>,
): z.output<S> {
  let raw: Record<string, unknown> = {};
  if (options.file !== undefined) {
    let parsed: unknown;
    try {
      parsed = parseYaml(readFileSync(options.file, 'utf8'));
    } catch (err) {
      throw new CliError(
        `cannot read config ${options.file}: ${(err as Error).message.split('\n')[0]}`,
        ExitCode.USAGE,
        { cause: err },
      );
    }
    if (parsed !== null && parsed !== undefined) {
      if (typeof parsed !== 'object' || Array.isArray(parsed)) {
        throw new CliError(`config ${options.file}: must be a YAML mapping`, ExitCode.USAGE);
      }
      raw = parsed as Record<string, unknown>;
    }
  }
  if (options.defaults) raw = options.defaults(raw);
  const { config, issues } = options.applyEnvironment(raw, options.env);
  const result = options.schema.safeParse(config);
  const problems = [...issues];
  if (!result.success) {
    for (const i of result.error.issues) {
      problems.push(`${['config', ...i.path.map(String)].join('.')}: ${i.message}`);
    }
  }
  if (problems.length > 0 || !result.success) {
    throw new CliError(`invalid configuration: ${problems.join('; ')}`, ExitCode.USAGE);
  }
  return result.data;
}
