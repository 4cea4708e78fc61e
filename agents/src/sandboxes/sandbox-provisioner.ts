import type { RefFactory } from '@troupe/actors';
import { SANDBOX_ACTOR_KIND } from '../agent/actor-sandbox-port';
import type { TemplateSandbox } from './sandbox-template';

/**
 * Creates and destroys the sandboxes a template declares. Injected like the sandbox port, so
 * that `@troupe/agents` never imports the node agent: {@link ActorSandboxProvisioner} talks to the
 * node agent's `sandbox` actor over NATS.
 */
export interface SandboxProvisioner {
  /**
   * Creates sandbox `id` from `spec` with the node agent's security defaults (idempotent for the
   * same id, spec and job: a repeat after a crash finds the one created before).
   */
  create(
    id: string,
    spec: TemplateSandbox,
    options: { jobId?: string; signal?: AbortSignal },
  ): Promise<void>;
  /** Destroys sandbox `id` (nothing happens for one never created or already destroyed). */
  destroy(id: string, options: { signal?: AbortSignal }): Promise<void>;
}

/** Options of {@link ActorSandboxProvisioner}. */
export interface ActorSandboxProvisionerOptions {
  /** Where refs come from (a turn's `ctx.refs`). */
  refs: RefFactory;
  /** Deadline of a `create` (it may have to build a missing Troupe image). @default 600000 */
  createTimeoutMs?: number;
  /** Deadline of a `destroy`. @default 30000 */
  destroyTimeoutMs?: number;
}

/**
 * A {@link SandboxProvisioner} over the node agent's `sandbox` actor: `create` with the image and
 * limits only (network, user, root file system and capabilities stay the policy's defaults, and
 * the node agent sets the `troupe.cluster/host/actor/job` labels), `destroy`.
 */
export class ActorSandboxProvisioner implements SandboxProvisioner {
  constructor(private readonly options: ActorSandboxProvisionerOptions) {}

  async create(
    id: string,
    spec: TemplateSandbox,
    options: { jobId?: string; signal?: AbortSignal },
  ): Promise<void> {
    const { description: _toldToTheModel, ...limits } = spec;
    await this.options.refs.refOf({ kind: SANDBOX_ACTOR_KIND, id }).ask(
      'create',
      { spec: limits, ...(options.jobId !== undefined ? { jobId: options.jobId } : {}) },
      {
        timeoutMs: this.options.createTimeoutMs ?? 600_000,
        ...(options.signal ? { signal: options.signal } : {}),
      },
    );
  }

  async destroy(id: string, options: { signal?: AbortSignal }): Promise<void> {
    await this.options.refs.refOf({ kind: SANDBOX_ACTOR_KIND, id }).ask(
      'destroy',
      {},
      {
        timeoutMs: this.options.destroyTimeoutMs ?? 30_000,
        ...(options.signal ? { signal: options.signal } : {}),
      },
    );
  }
}
