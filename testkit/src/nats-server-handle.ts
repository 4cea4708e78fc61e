import type { TestkitLogger } from './logger';

/** Options for {@link startNatsServer}. */
export interface NatsServerOptions {
  /**
   * The server binary: a name searched on PATH (then in the sbin directories), or a path.
   * @default 'nats-server'
   */
  binary?: string;
  /** Enable JetStream (`-js`) with a store directory (`-sd`). @default true */
  jetstream?: boolean;
  /**
   * JetStream store directory to use. A directory supplied here is never removed by the
   * testkit, so a second server can be started on the same store.
   * @default a fresh temp directory, removed by `stop()`
   */
  storeDir?: string;
  /** Client port to listen on (127.0.0.1). @default a random free port */
  port?: number;
  /** HTTP monitoring port (127.0.0.1), used for the readiness probe. @default a random free port */
  monitorPort?: number;
  /** Require this user name (with `password`); written to a generated config file. @default no auth */
  user?: string;
  /** Password for `user`. @default no auth */
  password?: string;
  /** Require this token instead of user/password. @default no auth */
  token?: string;
  /** Extra command-line arguments, appended after the testkit's own. @default [] */
  args?: string[];
  /** Deadline for the server to become ready, per start attempt. @default 10000 */
  startTimeoutMs?: number;
  /** How long `stop()` waits after SIGTERM before sending SIGKILL. @default 5000 */
  stopTimeoutMs?: number;
  /** Aborts startup; the half-started server is killed and its temp files removed. */
  signal?: AbortSignal;
  /** Receives lifecycle events (spawn, ready, retries). @default no logging */
  logger?: TestkitLogger;
}

/** Connection settings for the NATS client, shaped like its `ConnectionOptions`. */
export interface NatsConnectOptions {
  /** The server URL. */
  servers: string;
  /** User name, when the server was started with `user`. */
  user?: string;
  /** Password, when the server was started with `password`. */
  pass?: string;
  /** Token, when the server was started with `token`. */
  token?: string;
}

/** A running `nats-server` child process started by {@link startNatsServer}. */
export interface NatsServerHandle {
  /** Client URL, `nats://127.0.0.1:PORT`. */
  readonly url: string;
  /** Client port; stays the same across `restart()`. */
  readonly port: number;
  /** Monitoring base URL, `http://127.0.0.1:MONITOR_PORT`. */
  readonly monitorUrl: string;
  /** JetStream store directory, or undefined when JetStream is disabled. */
  readonly storeDir: string | undefined;
  /** PID of the current server process; changes on `restart()`. */
  readonly pid: number;
  /** True while the server process is alive. */
  readonly running: boolean;
  /** Options to spread into the NATS client's `connect()`, including credentials. */
  readonly connectOptions: NatsConnectOptions;
  /** The tail of the server's stdout/stderr since the last (re)start. */
  output(): string;
  /**
   * Stops the server: SIGTERM, wait up to `stopTimeoutMs`, then SIGKILL. Removes the temp
   * directory (and the store, unless the caller supplied `storeDir`). Safe to call twice, and
   * after `kill()`.
   */
  stop(options?: { signal?: AbortSignal }): Promise<void>;
  /** Crashes the server with SIGKILL and waits for it to exit; leaves every file in place. */
  kill(): Promise<void>;
  /**
   * Stops the server if it is running (without removing files) and starts it again on the same
   * port, monitoring port and store directory. Rejects after `stop()`.
   */
  restart(options?: { signal?: AbortSignal }): Promise<void>;
}
