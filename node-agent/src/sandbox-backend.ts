import type { SandboxLabels } from './labels';
import type { Sandbox, SandboxSnapshot } from './sandbox';
import type { SandboxSpec, SandboxSpecOptions } from './sandbox-spec';

/** Options of {@link SandboxBackend.create}. */
export interface CreateSandboxOptions {
  /** Wait until the sandbox is ready, not just started. @default true */
  waitReady?: boolean;
  /** Warm pool that owns the sandbox (sets the `troupe.pool` label). @default none */
  poolId?: string;
  /** Aborts creation; whatever was created is removed. */
  signal?: AbortSignal;
}

/** Options of {@link SandboxBackend.fork}. */
export interface ForkSandboxOptions {
  /** Owner labels of the fork. @default the snapshot's source labels */
  labels?: Partial<SandboxLabels>;
  /** Wait until the fork is ready. @default true */
  waitReady?: boolean;
  /** Aborts creation. */
  signal?: AbortSignal;
}

/** Where sandboxes come from: Docker in production, child processes for development. */
export interface SandboxBackend {
  /** Backend kind. */
  readonly kind: 'docker' | 'process';
  /**
   * Creates (and by default waits for) a sandbox.
   * @throws TroupeError `INVALID_ARGUMENT` for a bad spec, `UNAVAILABLE` when the engine fails
   */
  create(spec: SandboxSpecOptions | SandboxSpec, options?: CreateSandboxOptions): Promise<Sandbox>;
  /** A new sandbox whose workspace (and root, if it was writable) starts as the snapshot's. */
  fork(snapshot: SandboxSnapshot, options?: ForkSandboxOptions): Promise<Sandbox>;
  /** Deletes a snapshot. Idempotent. */
  removeSnapshot(snapshot: SandboxSnapshot, options?: { signal?: AbortSignal }): Promise<void>;
  /** Destroys every sandbox this backend instance created and still tracks. */
  close(options?: { signal?: AbortSignal }): Promise<void>;
}
