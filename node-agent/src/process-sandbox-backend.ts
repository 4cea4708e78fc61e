import { mkdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  ErrorCode,
  type Logger,
  noopLogger,
  parseWith,
  throwIfAborted,
  TroupeError,
} from '@troupe/proto';
import { z } from 'zod';
import { randomId } from './internal/ids';
import { ProcessSandbox } from './internal/process-sandbox';
import type { Sandbox, SandboxSnapshot } from './sandbox';
import type { CreateSandboxOptions, ForkSandboxOptions, SandboxBackend } from './sandbox-backend';
import { parseSandboxSpec, type SandboxSpec, type SandboxSpecOptions } from './sandbox-spec';

/** Validated settings of a {@link ProcessSandboxBackend}. */
export const ProcessSandboxBackendConfigSchema = z
  .object({
    /** Must be `true`: the process backend isolates nothing. */
    allowUnsafeProcessBackend: z.literal(true, {
      error:
        'must be true: the process backend runs commands as plain host processes with no isolation (development only)',
    }),
    /** Where sandbox directories are created. @default `<os tmpdir>/troupe-process-sandboxes` */
    rootDir: z.string().min(1).default(path.join(os.tmpdir(), 'troupe-process-sandboxes')),
    /** Foreground exec timeout when the caller gives none. @default 60000 */
    defaultExecTimeoutMs: z.int().min(1).default(60_000),
    /** Output kept per stream (head + tail). @default 1048576 */
    maxOutputBytes: z
      .int()
      .min(0)
      .default(1024 * 1024),
  })
  .strict();

/** Validated settings of a {@link ProcessSandboxBackend}. */
export type ProcessSandboxBackendConfig = z.output<typeof ProcessSandboxBackendConfigSchema>;

/** Options of {@link ProcessSandboxBackend}. */
export interface ProcessSandboxBackendOptions {
  /** Must be `true` to acknowledge that nothing is isolated. */
  allowUnsafeProcessBackend: boolean;
  /** Where sandbox directories are created. @default `<os tmpdir>/troupe-process-sandboxes` */
  rootDir?: string;
  /** Foreground exec timeout when the caller gives none. @default 60000 */
  defaultExecTimeoutMs?: number;
  /** Output kept per stream (head + tail). @default 1048576 */
  maxOutputBytes?: number;
  /** Logger (creation is logged at `warn`). @default a logger that drops everything */
  logger?: Logger;
}

/**
 * Development-only sandboxes without Docker: a temp directory per sandbox (the workspace, extra
 * volumes and `/tmp` are subdirectories) and commands as child processes in their own process
 * group, killed as a group (plus the task marker scan) on timeout. **No isolation:** no network,
 * memory, pids or filesystem limits, commands run as the node agent's user and see the host. The
 * image is ignored. Refused unless `allowUnsafeProcessBackend: true`; every creation logs a
 * warning. Absolute paths inside commands do not map (use relative paths or `$HOME`, which is the
 * workspace).
 */
export class ProcessSandboxBackend implements SandboxBackend {
  readonly kind = 'process' as const;
  /** Validated settings. */
  readonly config: ProcessSandboxBackendConfig;
  private readonly log: Logger;
  private readonly live = new Set<ProcessSandbox>();

  /** @throws TroupeError `PERMISSION_DENIED` unless `allowUnsafeProcessBackend` is `true` */
  constructor(options: ProcessSandboxBackendOptions) {
    const { logger, ...rest } = options;
    if (rest.allowUnsafeProcessBackend !== true) {
      throw new TroupeError(
        ErrorCode.PERMISSION_DENIED,
        '`allowUnsafeProcessBackend`: must be true to use the process sandbox backend, which runs ' +
          'commands as plain host processes with no isolation (development only; use Docker)',
        { details: { field: 'allowUnsafeProcessBackend' } },
      );
    }
    this.config = parseWith(ProcessSandboxBackendConfigSchema, rest, { prefix: 'options' });
    this.log = (logger ?? noopLogger).child({ component: 'process-sandbox-backend' });
  }

  async create(
    specOptions: SandboxSpecOptions | SandboxSpec,
    options: CreateSandboxOptions = {},
  ): Promise<Sandbox> {
    return this.createFrom(parseSandboxSpec(specOptions), options);
  }

  private async createFrom(
    spec: SandboxSpec,
    options: CreateSandboxOptions,
    seed?: string,
  ): Promise<Sandbox> {
    throwIfAborted(options.signal);
    const id = randomId('sbx').slice(0, 16);
    const root = path.join(this.config.rootDir, id);
    await mkdir(root, { recursive: true, mode: 0o700 });
    this.log.warn(
      { sandbox: id, actor: spec.labels.actor, jobId: spec.labels.job, dir: root },
      'UNSAFE process sandbox created: no isolation (no network, memory, pids or filesystem limits); development only',
    );
    const sandbox = new ProcessSandbox(
      {
        logger: this.log.child({ sandbox: id }),
        defaultExecTimeoutMs: this.config.defaultExecTimeoutMs,
        maxOutputBytes: this.config.maxOutputBytes,
        snapshotDir: path.join(this.config.rootDir, 'snapshots'),
        onDestroyed: (s) => this.live.delete(s),
      },
      id,
      spec,
      root,
    );
    this.live.add(sandbox);
    try {
      await sandbox.start(seed);
      if (options.waitReady ?? true) await sandbox.ready({ signal: options.signal });
    } catch (err) {
      await sandbox.destroy().catch(() => undefined);
      throw err;
    }
    return sandbox;
  }

  async fork(snapshot: SandboxSnapshot, options: ForkSandboxOptions = {}): Promise<Sandbox> {
    if (snapshot.backend !== 'process') {
      throw new TroupeError(
        ErrorCode.INVALID_ARGUMENT,
        '`snapshot`: was taken by the Docker backend, not the process backend',
      );
    }
    const { policyExceptions: _p, ...rest } = snapshot.spec;
    const spec = parseSandboxSpec({
      ...rest,
      files: {},
      labels: { ...snapshot.spec.labels, ...options.labels },
    });
    return this.createFrom(
      spec,
      { waitReady: options.waitReady, signal: options.signal },
      snapshot.imageId,
    );
  }

  async removeSnapshot(snapshot: SandboxSnapshot): Promise<void> {
    const dir = path.resolve(snapshot.imageId);
    const snapshots = path.resolve(this.config.rootDir, 'snapshots');
    if (!dir.startsWith(`${snapshots}${path.sep}`)) {
      throw new TroupeError(
        ErrorCode.INVALID_ARGUMENT,
        '`snapshot`: not a snapshot of this backend',
      );
    }
    await rm(dir, { recursive: true, force: true });
  }

  async close(options: { signal?: AbortSignal } = {}): Promise<void> {
    await Promise.allSettled([...this.live].map((s) => s.destroy(options)));
  }
}
