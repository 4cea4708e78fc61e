import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  ErrorCode,
  fromAbortSignal,
  invalidArgument,
  type Logger,
  noopLogger,
  raceSignal,
  throwIfAborted,
  TroupeError,
} from '@troupe/proto';
import type Docker from 'dockerode';
import { dockerError, dockerStatus } from './internal/docker-errors';

/** Where the image recipes live in a source checkout (`deploy/images/build.sh`). */
export const DEFAULT_BUILD_SCRIPT = path.resolve(
  __dirname,
  '..',
  '..',
  'deploy',
  'images',
  'build.sh',
);

/** Options of {@link ImageManager}. */
export interface ImageManagerOptions {
  /** A dockerode client. */
  docker: Docker;
  /** The recipe build script. @default `deploy/images/build.sh` of this checkout */
  buildScript?: string;
  /** Build a missing image (needs root for rootfs recipes, and the Debian mirror). @default true */
  allowBuild?: boolean;
  /** Logger. @default a logger that drops everything */
  logger?: Logger;
}

/** Options of {@link ImageManager.ensure}. */
export interface EnsureImageOptions {
  /** Aborts the wait (and kills a build this call started). */
  signal?: AbortSignal;
  /** Receives the build's progress lines (`[images] python: ...`). */
  onProgress?: (line: string) => void;
}

/** An image that is present on the engine. */
export interface EnsuredImage {
  /** The reference to create sandboxes from (`troupe-<name>:<hash>`, or `:latest`). */
  ref: string;
  /** Image id. */
  imageId: string;
  /** Whether this call built it. */
  built: boolean;
}

/**
 * Makes Troupe's offline images (`deploy/images/<name>`) available: `ensure(name)` asks the build
 * script for the content-hashed tag of the current recipe, and builds it when the engine lacks it
 * (or fails, naming the command to run, when building is disabled). Without the build script (an
 * installation without recipes) it accepts `troupe-<name>:latest` if present. Concurrent calls for
 * one name share one build.
 */
export class ImageManager {
  private readonly docker: Docker;
  private readonly buildScript: string;
  private readonly allowBuild: boolean;
  private readonly log: Logger;
  private readonly pending = new Map<string, Promise<EnsuredImage>>();

  constructor(options: ImageManagerOptions) {
    this.docker = options.docker;
    this.buildScript = options.buildScript ?? DEFAULT_BUILD_SCRIPT;
    this.allowBuild = options.allowBuild ?? true;
    this.log = (options.logger ?? noopLogger).child({ component: 'image-manager' });
  }

  /**
   * Ensures image `name` (e.g. `busybox`, `python`) is present.
   * @throws TroupeError `INVALID_ARGUMENT` for a bad name, `NOT_FOUND` when the image is missing
   *   and cannot be built, `UNAVAILABLE` when the build fails
   */
  async ensure(name: string, options: EnsureImageOptions = {}): Promise<EnsuredImage> {
    if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(name)) {
      throw invalidArgument('name', 'must match [a-z0-9][a-z0-9-]{0,62}', name);
    }
    throwIfAborted(options.signal);
    let p = this.pending.get(name);
    if (p === undefined) {
      const controller = new AbortController();
      p = this.doEnsure(name, controller.signal, options.onProgress).finally(() =>
        this.pending.delete(name),
      );
      this.pending.set(name, p);
      // Only the caller that started the build may cancel it.
      const callerSignal = options.signal;
      if (callerSignal) {
        const onAbort = (): void => controller.abort(callerSignal.reason);
        callerSignal.addEventListener('abort', onAbort, { once: true });
        void p
          .finally(() => callerSignal.removeEventListener('abort', onAbort))
          .catch(() => undefined);
      }
    }
    return raceSignal(p, options.signal);
  }

  private async present(ref: string): Promise<string | undefined> {
    try {
      const info = await this.docker.getImage(ref).inspect();
      return info.Id;
    } catch (err) {
      if (dockerStatus(err) === 404) return undefined;
      throw dockerError(`inspect image ${ref}`, err);
    }
  }

  private async doEnsure(
    name: string,
    signal: AbortSignal,
    onProgress?: (line: string) => void,
  ): Promise<EnsuredImage> {
    const hint = `deploy/images/build.sh ${name}`;
    if (!existsSync(this.buildScript)) {
      const ref = `troupe-${name}:latest`;
      const id = await this.present(ref);
      if (id !== undefined) return { ref, imageId: id, built: false };
      throw new TroupeError(
        ErrorCode.NOT_FOUND,
        `image ${ref} is missing and no recipes are installed here (${this.buildScript}); build it ` +
          `where the Troupe sources are with ${hint}, or load it with docker load`,
        { details: { image: name } },
      );
    }
    const printed = await this.run(['--print-tag', name], signal);
    const ref = printed.stdout.trim().split('\n').pop() ?? '';
    if (!/^troupe-[a-z0-9-]+:[0-9a-f]{12}$/.test(ref)) {
      throw new TroupeError(
        ErrorCode.NOT_FOUND,
        `unknown image ${JSON.stringify(name)}: ${printed.stderr.trim() || 'no recipe'}`,
        { details: { image: name } },
      );
    }
    const existing = await this.present(ref);
    if (existing !== undefined) return { ref, imageId: existing, built: false };
    if (!this.allowBuild) {
      throw new TroupeError(
        ErrorCode.NOT_FOUND,
        `image ${ref} (recipe deploy/images/${name}) is not built and building is disabled: run ${hint}`,
        { details: { image: name, ref } },
      );
    }
    this.log.info({ image: name, ref }, 'building image');
    const started = Date.now();
    const build = await this.run([name], signal, onProgress);
    if (build.code !== 0) {
      throw new TroupeError(
        ErrorCode.UNAVAILABLE,
        `building image ${name} failed (exit ${build.code}); rerun ${hint} to see why: ` +
          build.stderr.trim().split('\n').slice(-5).join(' | '),
        { details: { image: name, ref } },
      );
    }
    const id = await this.present(ref);
    if (id === undefined) {
      throw new TroupeError(ErrorCode.INTERNAL, `${hint} succeeded but ${ref} is missing`);
    }
    this.log.info({ image: name, ref, ms: Date.now() - started }, 'image built');
    return { ref, imageId: id, built: true };
  }

  private run(
    args: string[],
    signal: AbortSignal,
    onProgress?: (line: string) => void,
  ): Promise<{ code: number; stdout: string; stderr: string }> {
    throwIfAborted(signal);
    return new Promise((resolve, reject) => {
      const child = spawn('bash', [this.buildScript, ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
        // Its own process group, so an abort stops debootstrap and docker build too.
        detached: true,
      });
      let stdout = '';
      let stderr = '';
      let partial = '';
      child.stdout.on('data', (b: Buffer) => {
        const text = b.toString('utf8');
        stdout += text;
        if (stdout.length > 1_000_000) stdout = stdout.slice(-500_000);
        if (onProgress) {
          const lines = (partial + text).split('\n');
          partial = lines.pop() ?? '';
          for (const line of lines) onProgress(line);
        }
      });
      child.stderr.on('data', (b: Buffer) => {
        stderr += b.toString('utf8');
        if (stderr.length > 200_000) stderr = stderr.slice(-100_000);
      });
      const onAbort = (): void => {
        if (child.pid !== undefined) {
          try {
            process.kill(-child.pid, 'SIGTERM');
          } catch {
            // already gone
          }
        }
        reject(fromAbortSignal(signal));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      child.once('error', (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(
          new TroupeError(ErrorCode.UNAVAILABLE, `cannot run ${this.buildScript}: ${err.message}`, {
            cause: err,
          }),
        );
      });
      child.once('close', (code) => {
        signal.removeEventListener('abort', onAbort);
        if (onProgress && partial !== '') onProgress(partial);
        resolve({ code: code ?? 1, stdout, stderr });
      });
    });
  }
}
