import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { getFreePort } from '../get-free-port';
import { noopLogger, type TestkitLogger } from '../logger';
import { MissingBinaryError } from '../missing-binary-error';
import type {
  NatsConnectOptions,
  NatsServerHandle,
  NatsServerOptions,
} from '../nats-server-handle';
import { makeTempDir, type TempDir } from '../temp-dir';
import { abortReason, delay, throwIfAborted, withDeadline } from './abort';
import { hasExited, killOnProcessExit, waitForExit } from './child-exit';
import { findBinary } from './find-binary';
import { OutputTail } from './output-tail';

const HOST = '127.0.0.1';
const MAX_START_ATTEMPTS = 3;
const PROBE_INTERVAL_MS = 25;
const PROBE_TIMEOUT_MS = 1000;
const KILL_WAIT_MS = 5000;

interface NatsServerConfig {
  binaryPath: string;
  jetstream: boolean;
  pinnedPort: number | undefined;
  pinnedMonitorPort: number | undefined;
  callerStoreDir: string | undefined;
  args: string[];
  startTimeoutMs: number;
  stopTimeoutMs: number;
  logger: TestkitLogger;
  auth: { user: string; password: string } | { token: string } | undefined;
}

/** Raised by one start attempt; `addressInUse` lets the launcher retry with other ports. */
class StartAttemptError extends Error {
  constructor(
    message: string,
    readonly addressInUse: boolean,
  ) {
    super(message);
    this.name = 'StartAttemptError';
  }
}

/** Validates and defaults the caller's options; errors name the offending fields. */
function toConfig(options: NatsServerOptions): NatsServerConfig {
  const binary = options.binary ?? 'nats-server';
  const binaryPath = findBinary(binary);
  if (binaryPath === undefined) {
    throw new MissingBinaryError(
      binary,
      'apt-get install -y nats-server',
      binary.includes('/')
        ? `nats-server binary not found or not executable at "${binary}"`
        : `nats-server binary "${binary}" not found on PATH`,
    );
  }
  const { user, password, token } = options;
  if (token !== undefined && (user !== undefined || password !== undefined)) {
    throw new Error('NatsServerOptions: `token` cannot be combined with `user`/`password`');
  }
  if ((user === undefined) !== (password === undefined)) {
    throw new Error('NatsServerOptions: `user` and `password` must be given together');
  }
  for (const [field, value] of [
    ['port', options.port],
    ['monitorPort', options.monitorPort],
  ] as const) {
    if (value !== undefined && !(Number.isInteger(value) && value > 0 && value < 65536)) {
      throw new Error(
        `NatsServerOptions: \`${field}\` must be an integer in 1..65535, got ${value}`,
      );
    }
  }
  return {
    binaryPath,
    jetstream: options.jetstream ?? true,
    pinnedPort: options.port,
    pinnedMonitorPort: options.monitorPort,
    callerStoreDir: options.storeDir === undefined ? undefined : path.resolve(options.storeDir),
    args: options.args ?? [],
    startTimeoutMs: options.startTimeoutMs ?? 10_000,
    stopTimeoutMs: options.stopTimeoutMs ?? 5_000,
    logger: options.logger ?? noopLogger,
    auth:
      token !== undefined
        ? { token }
        : user !== undefined && password !== undefined
          ? { user, password }
          : undefined,
  };
}

/** Starts a server per {@link NatsServerOptions}; see `startNatsServer`. */
export async function launchNatsServer(options: NatsServerOptions): Promise<NatsServerProcess> {
  const config = toConfig(options);
  throwIfAborted(options.signal);
  const workDir = await makeTempDir('troupe-nats-');
  try {
    const storeDir = config.jetstream
      ? (config.callerStoreDir ?? path.join(workDir.path, 'store'))
      : undefined;
    if (storeDir !== undefined) await mkdir(storeDir, { recursive: true });
    let configFile: string | undefined;
    if (config.auth !== undefined) {
      configFile = path.join(workDir.path, 'nats-server.conf');
      await writeFile(configFile, renderConfig(config.auth), { mode: 0o600 });
    }
    const server = new NatsServerProcess(config, workDir, storeDir, configFile);
    await server.startWithRetries(options.signal);
    return server;
  } catch (err) {
    await workDir.cleanup();
    throw err;
  }
}

function renderConfig(auth: NonNullable<NatsServerConfig['auth']>): string {
  // JSON string literals are valid quoted strings in the NATS config format.
  const lines =
    'token' in auth
      ? [`  token: ${JSON.stringify(auth.token)}`]
      : [`  user: ${JSON.stringify(auth.user)}`, `  password: ${JSON.stringify(auth.password)}`];
  return `authorization {\n${lines.join('\n')}\n}\n`;
}

/** The handle behind `startNatsServer`: one server identity that may span several processes. */
export class NatsServerProcess implements NatsServerHandle {
  private child: ChildProcess | undefined;
  private readonly tail = new OutputTail();
  private portValue = 0;
  private monitorPortValue = 0;
  private stopped = false;

  constructor(
    private readonly config: NatsServerConfig,
    private readonly workDir: TempDir,
    readonly storeDir: string | undefined,
    private readonly configFile: string | undefined,
  ) {}

  get port(): number {
    return this.portValue;
  }

  get url(): string {
    return `nats://${HOST}:${this.portValue}`;
  }

  get monitorUrl(): string {
    return `http://${HOST}:${this.monitorPortValue}`;
  }

  get pid(): number {
    return this.child?.pid ?? -1;
  }

  get running(): boolean {
    return this.child !== undefined && !hasExited(this.child);
  }

  get connectOptions(): NatsConnectOptions {
    const auth = this.config.auth;
    if (auth === undefined) return { servers: this.url };
    if ('token' in auth) return { servers: this.url, token: auth.token };
    return { servers: this.url, user: auth.user, pass: auth.password };
  }

  output(): string {
    return this.tail.toString();
  }

  /** First start: picks random ports (unless pinned) and retries when one is already taken. */
  async startWithRetries(signal: AbortSignal | undefined): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      this.portValue = this.config.pinnedPort ?? (await getFreePort(HOST));
      this.monitorPortValue = this.config.pinnedMonitorPort ?? (await getFreePort(HOST));
      try {
        await this.startOnce(signal);
        return;
      } catch (err) {
        const randomPorts =
          this.config.pinnedPort === undefined || this.config.pinnedMonitorPort === undefined;
        if (
          err instanceof StartAttemptError &&
          err.addressInUse &&
          randomPorts &&
          attempt < MAX_START_ATTEMPTS
        ) {
          this.config.logger.warn(
            { port: this.portValue, monitorPort: this.monitorPortValue, attempt },
            'nats-server port taken, retrying with new ports',
          );
          continue;
        }
        throw err;
      }
    }
  }

  async stop(options: { signal?: AbortSignal } = {}): Promise<void> {
    this.stopped = true;
    try {
      await this.terminate(options.signal);
    } finally {
      await this.workDir.cleanup();
    }
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (child === undefined || hasExited(child)) return;
    child.kill('SIGKILL');
    if (!(await waitForExit(child, KILL_WAIT_MS))) {
      throw new Error(
        `nats-server pid ${child.pid} did not exit within ${KILL_WAIT_MS} ms of SIGKILL`,
      );
    }
  }

  async restart(options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.stopped) throw new Error('nats-server handle was stopped; start a new server instead');
    await this.terminate(options.signal);
    // Same ports and store: clients reconnect to the URL they already know.
    await this.startOnce(options.signal);
  }

  /** SIGTERM, then SIGKILL after `stopTimeoutMs`; leaves files in place. */
  private async terminate(signal: AbortSignal | undefined): Promise<void> {
    const child = this.child;
    if (child === undefined || hasExited(child)) return;
    throwIfAborted(signal);
    child.kill('SIGTERM');
    if (await waitForExit(child, this.config.stopTimeoutMs)) return;
    this.config.logger.warn(
      { pid: child.pid, stopTimeoutMs: this.config.stopTimeoutMs },
      'nats-server ignored SIGTERM, sending SIGKILL',
    );
    await this.kill();
  }

  private buildArgs(): string[] {
    const args: string[] = [];
    // Flags given on the command line override the config file, so auth comes from the file and
    // everything else from flags.
    if (this.configFile !== undefined) args.push('-c', this.configFile);
    args.push('-a', HOST, '-p', String(this.portValue), '-m', String(this.monitorPortValue));
    if (this.storeDir !== undefined) args.push('-js', '-sd', this.storeDir);
    args.push(...this.config.args);
    return args;
  }

  private async startOnce(signal: AbortSignal | undefined): Promise<void> {
    throwIfAborted(signal);
    const args = this.buildArgs();
    this.tail.clear();
    const child = spawn(this.config.binaryPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let spawnError: Error | undefined;
    child.once('error', (err) => {
      spawnError = err;
    });
    child.stdout?.on('data', (chunk: Buffer) => this.tail.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => this.tail.push(chunk));
    if (child.pid !== undefined) killOnProcessExit(child);
    this.config.logger.debug(
      { pid: child.pid, binary: this.config.binaryPath, args },
      'nats-server spawned',
    );

    const startedAt = Date.now();
    const deadline = withDeadline(this.config.startTimeoutMs, signal);
    try {
      for (;;) {
        if (spawnError !== undefined) {
          throw new Error(`could not spawn ${this.config.binaryPath}: ${spawnError.message}`, {
            cause: spawnError,
          });
        }
        if (hasExited(child)) {
          // Let the pipes drain so the tail contains the fatal log line.
          await streamsClosed(child);
          const out = this.tail.toString();
          throw new StartAttemptError(
            `nats-server exited during startup (${exitDescription(child)}) with ${args.join(' ')}` +
              `\n--- nats-server output (tail) ---\n${out}`,
            /address already in use/i.test(out),
          );
        }
        if (await this.isReady(deadline)) break;
        await delay(PROBE_INTERVAL_MS, deadline);
      }
    } catch (err) {
      await this.kill().catch(() => undefined);
      if (deadline.aborted && !(err instanceof StartAttemptError)) {
        if (signal?.aborted) throw abortReason(signal);
        throw new Error(
          `nats-server did not become ready within ${this.config.startTimeoutMs} ms ` +
            `(port ${this.portValue}, monitor ${this.monitorPortValue})` +
            `\n--- nats-server output (tail) ---\n${this.tail.toString()}`,
          { cause: err },
        );
      }
      throw err;
    }
    this.config.logger.info(
      { pid: child.pid, url: this.url, startMs: Date.now() - startedAt },
      'nats-server ready',
    );
  }

  /**
   * Ready means: the monitor endpoint on our port belongs to *this* server (a stray server could
   * own the monitor port), JetStream reports healthy, and the client port accepts connections
   * (the monitor starts listening before the client port does).
   */
  private async isReady(deadline: AbortSignal): Promise<boolean> {
    try {
      const probe = AbortSignal.any([deadline, AbortSignal.timeout(PROBE_TIMEOUT_MS)]);
      const varzRes = await fetch(`${this.monitorUrl}/varz`, { signal: probe });
      if (!varzRes.ok) return false;
      const varz = (await varzRes.json()) as { server_id?: unknown; port?: unknown };
      if (varz.port !== this.portValue) return false;
      const ownId = /\bID:\s+(N[A-Z0-9]{55})\b/.exec(this.tail.toString())?.[1];
      if (ownId !== undefined && varz.server_id !== ownId) return false;
      if (this.storeDir !== undefined) {
        const health = await fetch(`${this.monitorUrl}/healthz?js-enabled-only=true`, {
          signal: probe,
        });
        await health.arrayBuffer();
        if (!health.ok) return false;
      }
      return await canConnect(this.portValue, probe);
    } catch {
      return false;
    }
  }
}

function canConnect(port: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: HOST, port, signal });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function exitDescription(child: ChildProcess): string {
  return child.signalCode !== null ? `signal ${child.signalCode}` : `exit code ${child.exitCode}`;
}

function streamsClosed(child: ChildProcess): Promise<void> {
  const streams = [child.stdout, child.stderr].filter((s) => s !== null && !s.closed);
  return Promise.race([
    Promise.all(streams.map((s) => new Promise((resolve) => s!.once('close', resolve)))).then(
      () => undefined,
    ),
    delay(500),
  ]);
}
