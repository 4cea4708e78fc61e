import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { ImageManager } from '@troupe/node-agent';
import { ErrorCode, type Logger, TroupeError } from '@troupe/proto';
import type Docker from 'dockerode';
import {
  type EnvironmentStep,
  environmentHash,
  environmentSteps,
  type TaskEnvironment,
} from './task-environment';

/** Repository of environment images: `troupe-env:<hash>`. */
export const ENVIRONMENT_IMAGE_REPO = 'troupe-env';
const OUTPUT_TAIL_CHARS = 2000;
const STEP_TIMEOUT_MS = 15 * 60_000;

/** A logger subset (pino-compatible). */
interface BuilderLogger {
  info(obj: object, msg: string): void;
}

/** Options of {@link EnvironmentBuilder}. */
export interface EnvironmentBuilderOptions {
  /** The engine the sandboxes and graders run on. */
  docker: Docker;
  /** Builds (or finds) the base images of deploy/images. */
  images: ImageManager;
  /** Logger. @default none */
  logger?: BuilderLogger;
  /** The npm client run on this host for `npm` packages. @default npm */
  npmBin?: string;
}

/** An environment image that is present on the engine. */
export interface BuiltEnvironment {
  /** Image to create sandboxes and graders from (`troupe-env:<hash>`). */
  ref: string;
  /** The recipe's content hash. */
  hash: string;
  /** False when the image was already there (a cache hit). */
  built: boolean;
  /** Wall time of this call. */
  ms: number;
}

/** A set-up step that failed: its index, command and the tail of its output. */
export interface EnvironmentStepFailure extends EnvironmentStep {
  exitCode: number;
  outputTail: string;
}

function tail(text: string): string {
  return text.length <= OUTPUT_TAIL_CHARS ? text : `…${text.slice(-OUTPUT_TAIL_CHARS + 1)}`;
}

/**
 * Builds task environments into images: the base image of deploy/images, then each set-up step
 * (see {@link environmentSteps}) in a build container that runs as root with the host's network
 * (the only place the network is used: sandboxes and graders created from the image have none),
 * committed as `troupe-env:<hash>` running as uid 1000 in the task's workdir. The hash covers the
 * base image id and every step, so an unchanged recipe is a cache hit that only inspects the image.
 * npm packages are installed by this host's npm client (`npm install -g --prefix`) and copied into
 * the image's `/usr/local`. A failing step fails the build with `INVALID_ARGUMENT` naming its index
 * and command, with the tail of its output (`details.step`).
 */
export class EnvironmentBuilder {
  private readonly pending = new Map<string, Promise<BuiltEnvironment>>();

  constructor(private readonly options: EnvironmentBuilderOptions) {}

  /**
   * A builder on this host's Docker engine (dockerode loaded on first use). Drivers make one per
   * process and share it, so that concurrent tasks of one recipe share its build.
   */
  static async onLocalDocker(logger: Logger): Promise<EnvironmentBuilder> {
    const { default: DockerClient } = await import('dockerode');
    const docker = new DockerClient();
    return new EnvironmentBuilder({
      docker,
      images: new ImageManager({ docker, logger }),
      logger,
    });
  }

  /**
   * Ensures the image of `env` with the repository at `workdir` exists; builds it if missing.
   * Concurrent calls for one recipe share one build.
   */
  async ensure(
    env: TaskEnvironment,
    workdir: string,
    options: { signal?: AbortSignal; field?: string } = {},
  ): Promise<BuiltEnvironment> {
    const key = JSON.stringify([env, workdir]);
    const shared = this.pending.get(key);
    if (shared) return { ...(await shared), built: false };
    const p = this.doEnsure(env, workdir, options).finally(() => this.pending.delete(key));
    this.pending.set(key, p);
    return p;
  }

  private async doEnsure(
    env: TaskEnvironment,
    workdir: string,
    options: { signal?: AbortSignal; field?: string },
  ): Promise<BuiltEnvironment> {
    const started = Date.now();
    const base = await this.options.images.ensure(env.base, {
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const hash = environmentHash(env, workdir, base.imageId);
    const ref = `${ENVIRONMENT_IMAGE_REPO}:${hash}`;
    if (await this.exists(ref)) return { ref, hash, built: false, ms: Date.now() - started };
    return this.build(env, workdir, base.ref, hash, options.field ?? 'environment', started);
  }

  private async exists(ref: string): Promise<boolean> {
    try {
      await this.options.docker.getImage(ref).inspect();
      return true;
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return false;
      throw new TroupeError(ErrorCode.UNAVAILABLE, `cannot inspect image ${ref}`, { cause: err });
    }
  }

  private async build(
    env: TaskEnvironment,
    workdir: string,
    baseRef: string,
    hash: string,
    field: string,
    started: number,
  ): Promise<BuiltEnvironment> {
    const { docker } = this.options;
    const ref = `${ENVIRONMENT_IMAGE_REPO}:${hash}`;
    this.options.logger?.info({ ref, base: baseRef }, 'building task environment');
    const container = await docker.createContainer({
      Image: baseRef,
      User: 'root',
      Entrypoint: [],
      Cmd: ['sleep', 'infinity'],
      Labels: { 'troupe.environment-build': hash },
      HostConfig: { NetworkMode: 'host', AutoRemove: false },
    });
    try {
      await container.start();
      for (const step of environmentSteps(env, workdir)) {
        const npmStep = env.npm.length > 0 && step.command.startsWith('npm install -g ');
        const r = npmStep
          ? await this.installNpm(container, env.npm)
          : await this.exec(container, step.command);
        if (r.exitCode !== 0) {
          const failure: EnvironmentStepFailure = {
            ...step,
            exitCode: r.exitCode,
            outputTail: tail(r.output),
          };
          throw new TroupeError(
            ErrorCode.INVALID_ARGUMENT,
            `${field}: set-up step ${step.index} (${step.command}) failed with exit ${r.exitCode}: ${tail(r.output).trim().split('\n').slice(-8).join('\n')}`,
            { details: { field, rule: 'set-up steps must succeed', step: failure } },
          );
        }
      }
      await container.commit({
        repo: ENVIRONMENT_IMAGE_REPO,
        tag: hash,
        changes: ['USER 1000:1000', `WORKDIR ${workdir}`, 'CMD ["sleep", "infinity"]'],
      });
    } finally {
      await container.remove({ force: true }).catch(() => undefined);
    }
    const ms = Date.now() - started;
    this.options.logger?.info({ ref, ms }, 'task environment built');
    return { ref, hash, built: true, ms };
  }

  private async exec(
    container: Docker.Container,
    command: string,
  ): Promise<{ exitCode: number; output: string }> {
    const exec = await container.exec({
      Cmd: ['sh', '-c', command],
      AttachStdout: true,
      AttachStderr: true,
      User: 'root',
      Env: ['DEBIAN_FRONTEND=noninteractive'],
    });
    const stream = await exec.start({ hijack: true, stdin: false });
    let output = '';
    const sink = new PassThrough();
    sink.on('data', (b: Buffer) => {
      output += b.toString('utf8');
      if (output.length > 200_000) output = output.slice(-100_000);
    });
    this.options.docker.modem.demuxStream(stream, sink, sink);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        stream.destroy();
        reject(new TroupeError(ErrorCode.TIMEOUT, `set-up step ran over ${STEP_TIMEOUT_MS} ms`));
      }, STEP_TIMEOUT_MS);
      stream.on('end', () => {
        clearTimeout(timer);
        resolve();
      });
      stream.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
    const info = await exec.inspect();
    return { exitCode: info.ExitCode ?? 1, output };
  }

  private async installNpm(
    container: Docker.Container,
    packages: readonly string[],
  ): Promise<{ exitCode: number; output: string }> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'troupe-env-npm-'));
    try {
      const npm = await run(this.options.npmBin ?? 'npm', [
        'install',
        '-g',
        '--prefix',
        dir,
        '--no-audit',
        '--no-fund',
        '--no-update-notifier',
        ...packages,
      ]);
      if (npm.exitCode !== 0) return npm;
      const packed = await run('tar', ['-C', dir, '-c', 'bin', 'lib'], { binary: true });
      if (packed.exitCode !== 0) return { exitCode: packed.exitCode, output: packed.output };
      await container.putArchive(packed.bytes, { path: '/usr/local' });
      return npm;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

function run(
  cmd: string,
  args: string[],
  options: { binary?: boolean } = {},
): Promise<{ exitCode: number; output: string; bytes: Buffer }> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      {
        maxBuffer: 512 * 1024 * 1024,
        timeout: STEP_TIMEOUT_MS,
        encoding: 'buffer',
      },
      (err, stdout, stderr) => {
        const exitCode =
          err === null ? 0 : typeof err.code === 'number' ? err.code : err.killed ? 124 : 1;
        const output = options.binary
          ? stderr.toString('utf8')
          : stdout.toString('utf8') +
            stderr.toString('utf8') +
            (err && !err.code ? err.message : '');
        resolve({ exitCode, output, bytes: stdout });
      },
    );
  });
}
