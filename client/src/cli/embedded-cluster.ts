import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import * as path from 'node:path';
import { registerBuiltinDrivers } from '@troupe/benchmarks';
import { Coordinator, DEFAULT_GRPC_PORT, DriverRegistry } from '@troupe/coordinator';
import { NodeAgent } from '@troupe/node-agent';
import { pino, type Logger as PinoLogger } from 'pino';
import { type DevState } from './dev-state';
import { ModelHosting } from './model-hosting';
import { CliError, ExitCode } from './exit-codes';

/** Options of {@link EmbeddedCluster.start}. */
export interface EmbeddedClusterOptions {
  /** Where JetStream data, the token, the log and `dev.json` live. */
  dataDir: string;
  /** Cluster name. @default 'dev' */
  cluster?: string;
  /** Port of the job API; 0 picks a free one. @default 50051 */
  grpcPort?: number;
  /** Interface of the job API. @default 127.0.0.1 */
  grpcHost?: string;
  /** Port of nats-server; 0 picks a free one. @default 0 */
  natsPort?: number;
  /** The nats-server binary. @default 'nats-server' (from PATH) */
  natsBinary?: string;
  /** Sandbox slots of the node agent. @default the node agent's (2 per core) */
  sandboxSlots?: number;
  /** Use the unsafe process sandbox backend instead of Docker (development only). */
  processBackend?: boolean;
  /** Write `dev.json` so other `troupe` commands find this cluster. @default true */
  advertise?: boolean;
  /** Log level of the cluster's log file (`<dataDir>/troupe.log`). @default 'info' */
  logLevel?: string;
  /** Receives the node agent's image-build progress lines (`[images] <name>: ...`). */
  onImageBuildProgress?: (line: string) => void;
  /**
   * A models file (the model registry, YAML or JSON): with it the cluster hosts agent sessions
   * and the drivers can use those models (LLM operators, model agents). @default no models
   */
  modelsFile?: string;
  /** Skills pushed to the skill store with the models (see {@link ModelHosting}). */
  skillsDir?: string;
  /** Where model API keys are read from. @default process.env is NOT read: no keys */
  env?: Readonly<Record<string, string | undefined>>;
}

/** A free TCP port on 127.0.0.1 (listen on 0, read it, close). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * The embedded single-machine cluster of `troupe dev` and `troupe run`, in this process: a
 * `nats-server` child process with JetStream in `<dataDir>/jetstream`, a coordinator (with the
 * built-in drivers and the job API) and a node agent. `stop` takes them down in reverse order.
 */
export class EmbeddedCluster {
  private stopping?: Promise<void>;

  private constructor(
    readonly options: EmbeddedClusterOptions,
    readonly natsUrl: string,
    private readonly nats: ChildProcess,
    readonly coordinator: Coordinator,
    readonly agent: NodeAgent,
    /** `host:port` of the job API. */
    readonly address: string,
    /** The bearer token of the job API. */
    readonly token: string,
    readonly tokenFile: string,
    private readonly log: PinoLogger,
    /** Models and the agent host, when the cluster was given a models file. */
    readonly models?: ModelHosting,
  ) {}

  /** Starts nats-server, the coordinator and the node agent. */
  static async start(options: EmbeddedClusterOptions): Promise<EmbeddedCluster> {
    const dataDir = options.dataDir;
    mkdirSync(dataDir, { recursive: true });
    const log = pino(
      { level: options.logLevel ?? 'info', base: { app: 'troupe-dev' } },
      pino.destination({ dest: path.join(dataDir, 'troupe.log'), sync: false, mkdir: true }),
    );
    const tokenFile = path.join(dataDir, 'token');
    if (!existsSync(tokenFile)) {
      writeFileSync(tokenFile, `${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
    }
    const token = readFileSync(tokenFile, 'utf8').trim();
    const natsPort = options.natsPort || (await freePort());
    const nats = await startNats(options.natsBinary ?? 'nats-server', dataDir, natsPort, log);
    const natsUrl = `nats://127.0.0.1:${natsPort}`;
    const cluster = options.cluster ?? 'dev';
    let coordinator: Coordinator | undefined;
    let models: ModelHosting | undefined;
    try {
      models = options.modelsFile
        ? ModelHosting.load({
            modelsFile: options.modelsFile,
            ...(options.skillsDir ? { skillsDir: options.skillsDir } : {}),
            cluster,
            nats: { servers: natsUrl },
            hostId: 'local-agents',
            env: options.env ?? {},
            logger: log.child({ component: 'agents' }),
          })
        : undefined;
      coordinator = await Coordinator.start(
        {
          cluster,
          nats: { servers: natsUrl },
          metrics: { port: null },
          shutdownGraceMs: 5_000,
          grpc: {
            host: options.grpcHost ?? '127.0.0.1',
            port: options.grpcPort ?? DEFAULT_GRPC_PORT,
            tokenFile,
          },
        },
        {
          logger: log.child({ component: 'coordinator' }),
          drivers: registerBuiltinDrivers(new DriverRegistry(), models?.driverOptions() ?? {}),
        },
      );
      await models?.startAgentHost();
      const agent = await NodeAgent.start(
        {
          cluster,
          hostId: 'local',
          nats: { servers: natsUrl },
          shutdownGraceMs: 5_000,
          ...(options.sandboxSlots ? { slots: { sandbox: options.sandboxSlots } } : {}),
          ...(options.processBackend ? { backend: 'process', allowProcessBackend: true } : {}),
        },
        {
          logger: log.child({ component: 'node-agent' }),
          ...(options.onImageBuildProgress
            ? { onImageBuildProgress: options.onImageBuildProgress }
            : {}),
        },
      );
      const address = `${options.grpcHost ?? '127.0.0.1'}:${coordinator.grpcPort}`;
      const c = new EmbeddedCluster(
        options,
        natsUrl,
        nats,
        coordinator,
        agent,
        address,
        token,
        tokenFile,
        log,
        models,
      );
      if (options.advertise ?? true) {
        const state: DevState = { address, tokenFile, cluster, natsUrl, pid: process.pid };
        writeFileSync(path.join(dataDir, 'dev.json'), `${JSON.stringify(state, null, 2)}\n`);
      }
      return c;
    } catch (err) {
      await models?.stop().catch(() => undefined);
      await coordinator?.stop().catch(() => undefined);
      await stopNats(nats);
      throw new CliError(
        `the embedded cluster did not start: ${(err as Error).message.split('\n')[0]} (log: ${path.join(dataDir, 'troupe.log')})`,
        ExitCode.UNAVAILABLE,
        { cause: err },
      );
    }
  }

  /** Stops the node agent, the coordinator and nats-server (idempotent). */
  async stop(): Promise<void> {
    this.stopping ??= (async () => {
      if (this.options.advertise ?? true) {
        rmSync(path.join(this.options.dataDir, 'dev.json'), { force: true });
      }
      await this.agent.stop().catch((err: unknown) => this.log.warn({ err }, 'node agent stop'));
      await this.models?.stop().catch((err: unknown) => this.log.warn({ err }, 'agent host stop'));
      await this.coordinator
        .stop()
        .catch((err: unknown) => this.log.warn({ err }, 'coordinator stop'));
      await stopNats(this.nats);
      this.log.flush();
    })();
    return this.stopping;
  }
}

async function startNats(
  binary: string,
  dataDir: string,
  port: number,
  log: PinoLogger,
): Promise<ChildProcess> {
  const args = [
    '-js',
    '-sd',
    path.join(dataDir, 'jetstream'),
    '-a',
    '127.0.0.1',
    '-p',
    String(port),
  ];
  const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  return new Promise<ChildProcess>((resolve, reject) => {
    const timer = setTimeout(() => fail(`nats-server was not ready within 15 s`), 15_000);
    const fail = (why: string) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      const tail = output.trim().split('\n').slice(-3).join(' | ');
      reject(new CliError(`${why}${tail ? `: ${tail}` : ''}`, ExitCode.UNAVAILABLE));
    };
    child.once('error', (err: NodeJS.ErrnoException) =>
      fail(
        err.code === 'ENOENT'
          ? `nats-server not found on PATH (install it: apt-get install nats-server)`
          : `nats-server failed to start: ${err.message}`,
      ),
    );
    child.once('exit', (code) => fail(`nats-server exited with status ${code ?? 'unknown'}`));
    child.stderr?.on('data', (d: Buffer) => {
      output += d.toString();
      if (output.length > 20_000) output = output.slice(-10_000);
      if (/Server is ready/.test(output)) {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        child.stderr?.removeAllListeners('data');
        child.stderr?.on('data', (x: Buffer) => log.debug({ nats: x.toString().trim() }, 'nats'));
        resolve(child);
      }
    });
  });
}

async function stopNats(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
