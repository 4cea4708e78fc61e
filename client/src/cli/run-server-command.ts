import {
  type ApplyEnvironment,
  type RunningServer,
  runServer,
  serverConfigProblems,
} from '@troupe/proto';
import { type Logger, pino } from 'pino';
import { type z } from 'zod';
import { type CommandContext } from './command-context';
import { CliError, ExitCode } from './exit-codes';
import { ReadyFile } from './ready-file';

/** What {@link runServerCommand} needs. */
export interface ServerCommandOptions<
  S extends z.ZodType<{ logLevel: string }>,
  R extends RunningServer,
> {
  /** `base.app` of the pino root logger (JSON on stdout). */
  app: string;
  /** `--config`: the YAML config file. */
  configFile?: string;
  /** The server's strict config schema. */
  schema: S;
  /** The server's environment mapping. */
  applyEnvironment: ApplyEnvironment;
  /** Applied to the raw config before the environment (e.g. sections that must exist). */
  defaults?: (raw: Record<string, unknown>) => Record<string, unknown>;
  /** `--ready-file`: written once started, removed when stopping. */
  readyFile?: string;
  /** Starts the server. */
  start(config: z.output<S>, logger: Logger): Promise<R>;
  /** The ready file's content for the started server (e.g. the pid and ports). */
  ready(server: R): string;
}

/**
 * `troupe coordinator|node-agent`: {@link runServer} with the config from `--config` and the
 * CLI's environment, a pino JSON logger on stdout, the ready file, and the CLI's interrupt
 * (SIGINT/SIGTERM) as the stop request. A refused config (every problem, each named by its
 * field or variable) becomes one {@link CliError} with the USAGE exit code, before any
 * connection is opened.
 */
export async function runServerCommand<
  S extends z.ZodType<{ logLevel: string }>,
  R extends RunningServer,
>(ctx: CommandContext, options: ServerCommandOptions<S, R>): Promise<number> {
  const ready = new ReadyFile(options.readyFile);
  let configValid = false;
  try {
    await runServer({
      config: {
        ...(options.configFile ? { file: options.configFile } : {}),
        env: ctx.io.env,
        schema: options.schema,
        applyEnvironment: options.applyEnvironment,
        ...(options.defaults ? { defaults: options.defaults } : {}),
      },
      logger: (config) => {
        configValid = true;
        return pino(
          { level: config.logLevel, base: { app: options.app } },
          pino.destination({ fd: 1, sync: true }),
        );
      },
      start: (config, logger) => options.start(config, logger),
      onStarted: (server) => ready.mark(options.ready(server)),
      signal: ctx.signal,
      onStopping: () => ready.clear(),
    });
  } catch (err) {
    if (configValid || serverConfigProblems(err) === undefined) throw err;
    throw new CliError((err as Error).message, ExitCode.USAGE, { cause: err });
  }
  return ExitCode.OK;
}
