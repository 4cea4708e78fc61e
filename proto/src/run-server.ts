import { type z } from 'zod';
import { loadServerConfig, type LoadServerConfigOptions } from './server-config';
import { type Logger } from './logger';

/** The part of a pino-compatible logger {@link runServer} and its callers use. */
export type ServerLogger = Pick<Logger, 'info' | 'error'>;

/** A started server, as {@link runServer} stops it. */
export interface RunningServer {
  /** Stops taking work, lets running work finish for the server's grace, drains, closes. */
  stop(): Promise<void>;
}

/** What {@link runServer} needs. */
export interface RunServerOptions<
  S extends z.ZodType,
  L extends ServerLogger,
  R extends RunningServer,
> {
  /** Where the config comes from (see {@link loadServerConfig}). */
  config: LoadServerConfigOptions<S>;
  /** The server's root logger, made from the valid config. */
  logger(config: z.output<S>): L;
  /** Starts the server (connections are opened here, never before the config is valid). */
  start(config: z.output<S>, logger: L): Promise<R>;
  /**
   * Aborted when the server should stop (SIGINT/SIGTERM), its reason saying why; once
   * {@link start} has returned, the server is stopped as soon as it is aborted.
   */
  signal: AbortSignal;
  /** Called with the started server when {@link start} has returned, before waiting. */
  onStarted?(server: R): void;
  /** Called with the abort reason just before {@link RunningServer.stop}. */
  onStopping?(reason: unknown, logger: L): void;
}

/**
 * The life of a server process (`troupe coordinator|node-agent`, the `troupe-coordinator` and
 * `troupe-node-agent` binaries): loads and validates the config — every problem in one
 * `INVALID_ARGUMENT` (see {@link loadServerConfig}) before anything is opened —, makes the logger,
 * starts the server, waits for the stop request (SIGINT/SIGTERM) and stops it.
 *
 * @throws what {@link loadServerConfig}, `start` or `stop` throws
 */
export async function runServer<
  S extends z.ZodType,
  L extends ServerLogger,
  R extends RunningServer,
>(options: RunServerOptions<S, L, R>): Promise<void> {
  const config = loadServerConfig(options.config);
  const logger = options.logger(config);
  // An uncaught error still ends the process (its state is unknown), but the log says so, with
  // whether a throw or an unhandled rejection ended it: the process's last words otherwise go
  // to stderr only.
  const lastWords = (err: Error, origin: string): void =>
    logger.error({ err, origin }, 'exiting on an uncaught error');
  process.on('uncaughtExceptionMonitor', lastWords);
  try {
    await serve(options, config, logger);
  } finally {
    process.off('uncaughtExceptionMonitor', lastWords);
  }
}

async function serve<S extends z.ZodType, L extends ServerLogger, R extends RunningServer>(
  options: RunServerOptions<S, L, R>,
  config: z.output<S>,
  logger: L,
): Promise<void> {
  const server = await options.start(config, logger);
  options.onStarted?.(server);
  const { signal } = options;
  if (!signal.aborted) {
    await new Promise<void>((resolve) =>
      signal.addEventListener('abort', () => resolve(), { once: true }),
    );
  }
  options.onStopping?.(signal.reason, logger);
  await server.stop();
}
