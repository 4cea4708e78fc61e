import { type z } from 'zod';
import { type RunningServer, runServer, type ServerLogger } from './run-server';
import { type ApplyEnvironment, parseServerArgs, serverConfigProblems } from './server-config';

/** The process a server binary runs in: Node's `process`, passed by the binary's `main.ts`. */
export interface ServerProcess {
  /** `node`, the script, then the arguments. */
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
  on(signal: 'SIGINT' | 'SIGTERM', listener: () => void): unknown;
  exit(code: number): never;
}

/** What {@link serverMain} needs. */
export interface ServerMainOptions<
  S extends z.ZodType,
  L extends ServerLogger,
  R extends RunningServer,
> {
  /** The binary's name: in its usage line and before every line it prints to stderr. */
  name: string;
  process: ServerProcess;
  /** The server's strict config schema. */
  schema: S;
  /** The server's environment mapping. */
  applyEnvironment: ApplyEnvironment;
  /** The server's root logger, made from the valid config. */
  logger(config: z.output<S>): L;
  /** Starts the server. */
  start(config: z.output<S>, logger: L): Promise<R>;
}

/**
 * The whole of a server binary (`<name> [--config file.yaml]`), around {@link runServer}:
 * `--help` prints the usage and exits 0; a bad argument or config prints every problem as
 * `<name>: <problem>` and exits 2 before anything is opened; a failed start prints the stack and
 * exits 1; once started, the first SIGINT/SIGTERM logs `stopping` and stops the server (later
 * ones are ignored), exiting 0, or 1 after logging `stop failed`.
 */
export function serverMain<S extends z.ZodType, L extends ServerLogger, R extends RunningServer>(
  options: ServerMainOptions<S, L, R>,
): void {
  const { name, process: proc } = options;
  const usage = `usage: ${name} [--config file.yaml]`;
  const refuse = (err: unknown): never => {
    for (const line of serverConfigProblems(err) ?? [(err as Error).message]) {
      proc.stderr.write(`${name}: ${line}\n`);
    }
    return proc.exit(2);
  };
  let args: ReturnType<typeof parseServerArgs>;
  try {
    args = parseServerArgs(proc.argv.slice(2), usage);
  } catch (err) {
    return refuse(err);
  }
  if (args.help) {
    proc.stdout.write(`${usage}\n`);
    return proc.exit(0);
  }
  let stage: 'config' | 'start' | 'serving' = 'config';
  let logger: L | undefined;
  const stop = new AbortController();
  runServer({
    config: {
      ...(args.file !== undefined ? { file: args.file } : {}),
      env: proc.env,
      schema: options.schema,
      applyEnvironment: options.applyEnvironment,
    },
    logger: (config) => {
      stage = 'start';
      logger = options.logger(config);
      return logger;
    },
    start: (config, logger) => options.start(config, logger),
    signal: stop.signal,
    onStarted: () => {
      stage = 'serving';
      // Registered once started (a signal before then ends the process the default way); the
      // handlers stay, so a second signal while stopping is ignored.
      proc.on('SIGINT', () => stop.abort('SIGINT'));
      proc.on('SIGTERM', () => stop.abort('SIGTERM'));
    },
    onStopping: (signal, log) => log.info({ signal }, 'stopping'),
  }).then(
    () => proc.exit(0),
    (err: unknown) => {
      if (stage === 'config') return refuse(err);
      if (stage === 'serving' && logger) {
        logger.error({ err }, 'stop failed');
      } else {
        proc.stderr.write(`${name}: ${(err as Error).stack ?? String(err)}\n`);
      }
      return proc.exit(1);
    },
  );
}
