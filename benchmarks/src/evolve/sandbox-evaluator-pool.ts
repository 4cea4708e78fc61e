import { type Logger, type RefFactory, type UntypedActorRef } from '@troupe/actors';
import {
  type Evaluate,
  type EvaluateOptions,
  type EvaluationRequest,
  type EvaluatorResult,
  type SearchTaskSpec,
} from '@troupe/agents';
import { SANDBOX_KIND } from '@troupe/node-agent';
import { type ErrorCode, TroupeError } from '@troupe/proto';
import {
  classifySandboxFailure,
  runSandboxEvaluation,
  sandboxFailure,
} from './run-sandbox-evaluation';

/** Times one evaluator slot may replace a lost sandbox before its evaluations fail for good. */
export const MAX_SANDBOX_REPLACEMENTS = 3;

/**
 * Id of the sandbox of evaluator slot `slot` of an attempt's execution (`resourceId`), after
 * `replacement` lost sandboxes (a destroyed or lost sandbox id is never reused).
 */
export function evaluatorSandboxId(resourceId: string, slot: number, replacement = 0): string {
  return `ev-${resourceId}-s${slot}${replacement > 0 ? `-r${replacement}` : ''}`;
}

/** Every sandbox id an execution with `slots` evaluator slots may have created. */
export function evaluatorSandboxIds(resourceId: string, slots: number): string[] {
  const ids: string[] = [];
  for (let s = 0; s < slots; s++) {
    for (let r = 0; r <= MAX_SANDBOX_REPLACEMENTS; r++)
      ids.push(evaluatorSandboxId(resourceId, s, r));
  }
  return ids;
}

/** Options of {@link SandboxEvaluatorPool}. */
export interface SandboxEvaluatorPoolOptions {
  /** Refs of the cluster (the task context's). */
  refs: RefFactory;
  /** The job (a placement hint and the sandboxes' `troupe.job` label). */
  jobId: string;
  /** The execution's resource id: sandbox ids are derived from it. */
  resourceId: string;
  /** Sandboxes (evaluations at once). */
  slots: number;
  /** The suite: evaluator image, command, memory, phases. */
  suite: SearchTaskSpec;
  /** Suite-relative path → base64 (see `SuiteBundle.files`). */
  files: Readonly<Record<string, string>>;
  /** CPU limit of each sandbox. @default 1 */
  cpus?: number;
  /** Deadline of creating a sandbox (a missing image is built first). @default 600000 */
  createTimeoutMs?: number;
  /** Logger. */
  log: Logger;
}

interface Slot {
  index: number;
  replacement: number;
  ready: boolean;
}

/** Evaluator sandboxes leased to an island step (see {@link SandboxEvaluatorPool.lease}). */
export interface EvaluatorLease {
  /** Ids of the leased sandboxes, created and ready. */
  readonly sandboxIds: readonly string[];
  /** When the lease was asked for and when it was granted (epoch ms). */
  readonly askedAt: number;
  readonly grantedAt: number;
  /** @internal the pool's slots */
  readonly slots: readonly Slot[];
  /** @internal slots given back before the step ended */
  readonly returned: Set<Slot>;
}

/** What an island step reports about its lease when it is returned. */
export interface LeaseReport {
  /** Sandboxes that failed during the step: replaced before their slot is leased again. */
  lost?: readonly string[];
  /** A failure evaluations cannot recover from (stops the search, like {@link SandboxEvaluatorPool.fatal}). */
  fatal?: { code: string; message: string };
}

/**
 * The evaluator sandboxes of one task execution in the node agent (image
 * `troupe-<evaluator.image>:latest`, no network, the suite's memory), one reused sandbox per slot,
 * created lazily, replaced when lost: the task's evaluation capacity. It runs evaluations itself
 * ({@link SandboxEvaluatorPool.evaluate}, the test-phase grading) and leases sandboxes to island
 * steps ({@link SandboxEvaluatorPool.lease}), which evaluate in them with the same
 * {@link runSandboxEvaluation}; either way at most `slots` evaluations run at once. `onStart` is
 * called once a sandbox is held and ready, so waiting for a slot and building an image count as
 * queue time.
 *
 * Outcomes: the evaluator's JSON line is the result; a kill at the deadline is a `timeout` result
 * and an out-of-memory kill an `error` result (program outcomes, never retried). A lost sandbox,
 * a failed call, a non-zero exit or a missing or malformed line is an infrastructure failure
 * (`UNAVAILABLE`, which the search retries once); after a failed call the slot's sandbox is
 * replaced (a new id) for the next evaluation.
 */
export class SandboxEvaluatorPool {
  private readonly free: Slot[];
  private readonly waiting: ((slot: Slot) => void)[] = [];
  private readonly createTimeoutMs: number;
  private readonly log: Logger;
  /** Evaluations run (program outcomes returned). */
  evaluations = 0;
  /** Infrastructure failures thrown. */
  failures = 0;
  /** Sandboxes replaced after a failure. */
  replacements = 0;
  /**
   * Set when evaluations cannot succeed any more (a refused sandbox spec, a missing image, a slot
   * out of replacements): the driver stops the search and fails the attempt with it.
   */
  fatal: Error | undefined;
  /** Ids of the sandboxes this pool asked to create. */
  readonly created = new Set<string>();

  constructor(private readonly options: SandboxEvaluatorPoolOptions) {
    this.free = Array.from({ length: Math.max(1, options.slots) }, (_, index) => ({
      index,
      replacement: 0,
      ready: false,
    }));
    this.createTimeoutMs = options.createTimeoutMs ?? 600_000;
    this.log = options.log.child({ component: 'evolve-evaluators' });
  }

  /** The {@link Evaluate} function of the pool. */
  readonly evaluate: Evaluate = async (request, opts) => {
    opts.signal.throwIfAborted();
    const slot = await this.acquire(opts.signal);
    try {
      return await this.run(slot, request, opts);
    } finally {
      this.release(slot);
    }
  };

  /** Destroys every sandbox this pool created (best effort, in parallel). */
  async destroyCreated(signal?: AbortSignal): Promise<void> {
    await destroySandboxes(
      this.options.refs,
      this.options.jobId,
      [...this.created],
      this.log,
      signal,
    );
  }

  private ref(slot: Slot): UntypedActorRef {
    const id = this.idOf(slot);
    return this.options.refs
      .refOf({ kind: SANDBOX_KIND, id })
      .withHints({ jobId: this.options.jobId });
  }

  /**
   * Leases ready sandboxes to an island step: waits for one free slot, then takes more that are
   * free right now, up to `max`; creates any not yet created (a missing image is built: the wait
   * is the step's queue time). A slot whose creation fails is handled like a failed evaluation
   * (replaced, or {@link fatal}) and left out; when none is left the lease fails `UNAVAILABLE`.
   * Give it back with {@link returnLease}.
   */
  async lease(max: number, signal: AbortSignal): Promise<EvaluatorLease> {
    const askedAt = Date.now();
    // Take what is free synchronously, before the steps dispatched with this one ask: the
    // runner dispatches the largest step first, so it gets the sandboxes it can use.
    const slots: Slot[] = [];
    while (slots.length < max && this.free.length > 0) slots.push(this.free.shift() as Slot);
    if (slots.length === 0) slots.push(await this.acquire(signal));
    while (slots.length < max && this.free.length > 0) slots.push(this.free.shift() as Slot);
    const ready: Slot[] = [];
    let lastError: unknown;
    await Promise.all(
      slots.map(async (slot) => {
        try {
          await this.ensureCreated(slot, signal);
          ready.push(slot);
        } catch (err) {
          this.release(slot);
          if (signal.aborted) return;
          lastError = err;
          this.failures++;
          this.onFailure(slot, err);
        }
      }),
    );
    signal.throwIfAborted();
    if (ready.length === 0) throw sandboxFailure(lastError);
    ready.sort((a, b) => a.index - b.index);
    return {
      sandboxIds: ready.map((s) => this.idOf(s)),
      askedAt,
      grantedAt: Date.now(),
      slots: ready,
      returned: new Set(),
    };
  }

  /**
   * Gives one leased sandbox back before its step ends (the island will not use it again);
   * false for an id that is not, or no longer, part of the lease.
   */
  returnEarly(lease: EvaluatorLease, sandboxId: string): boolean {
    const slot = lease.slots.find((s) => !lease.returned.has(s) && this.idOf(s) === sandboxId);
    if (!slot) return false;
    lease.returned.add(slot);
    this.release(slot);
    return true;
  }

  /**
   * Gives a lease back: sandboxes the step reports lost are replaced (a new id) before their slot
   * is leased again; a reported fatal failure becomes {@link fatal}.
   */
  returnLease(lease: EvaluatorLease, report: LeaseReport = {}): void {
    const lost = new Set(report.lost ?? []);
    if (report.fatal) {
      this.fatal ??= new TroupeError(
        report.fatal.code as ErrorCode,
        `island evaluation failed: ${report.fatal.message}`,
      );
    }
    for (const slot of lease.slots) {
      if (lease.returned.has(slot)) continue;
      lease.returned.add(slot);
      if (lost.has(this.idOf(slot))) {
        this.failures++;
        this.replace(slot, new Error('the island step reported the sandbox lost'));
      }
      this.release(slot);
    }
  }

  private idOf(slot: Slot): string {
    return evaluatorSandboxId(this.options.resourceId, slot.index, slot.replacement);
  }

  private async ensureCreated(slot: Slot, signal: AbortSignal): Promise<void> {
    if (slot.ready) return;
    const { suite } = this.options;
    this.created.add(this.idOf(slot));
    await this.ref(slot).ask(
      'create',
      {
        spec: {
          image: `troupe-${suite.evaluator.image}:latest`,
          memoryMb: suite.evaluator.memoryMb,
          cpus: this.options.cpus ?? 1,
          network: 'none',
        },
        jobId: this.options.jobId,
      },
      { timeoutMs: this.createTimeoutMs, signal },
    );
    slot.ready = true;
  }

  private onFailure(slot: Slot, err: unknown): void {
    const kind = classifySandboxFailure(err);
    if (kind === 'fatal') {
      // Retrying cannot help (a missing image, a refused spec): stop the search.
      this.fatal ??= err instanceof Error ? err : new Error(String(err));
    } else if (kind === 'lost') {
      this.replace(slot, err);
    }
  }

  private async run(
    slot: Slot,
    request: EvaluationRequest,
    { signal, onStart }: EvaluateOptions,
  ): Promise<EvaluatorResult> {
    try {
      await this.ensureCreated(slot, signal);
      onStart?.();
      const result = await runSandboxEvaluation(
        this.ref(slot),
        request,
        { suite: this.options.suite, files: this.options.files },
        signal,
      );
      this.evaluations++;
      return result;
    } catch (err) {
      if (signal.aborted) throw signal.reason as Error;
      this.failures++;
      this.onFailure(slot, err);
      throw sandboxFailure(err);
    }
  }

  private replace(slot: Slot, err: unknown): void {
    const old = evaluatorSandboxId(this.options.resourceId, slot.index, slot.replacement);
    slot.ready = false;
    if (slot.replacement >= MAX_SANDBOX_REPLACEMENTS) {
      this.fatal ??= new TroupeError(
        'UNAVAILABLE',
        `evaluator slot ${slot.index} lost ${MAX_SANDBOX_REPLACEMENTS + 1} sandboxes`,
        { cause: err, retryable: true },
      );
      return;
    }
    slot.replacement++;
    this.replacements++;
    this.log.warn({ err, sandboxId: old }, 'evaluator sandbox replaced after a failure');
    // Best effort, in the background: cleanup destroys it again at the end anyway.
    this.options.refs
      .refOf({ kind: SANDBOX_KIND, id: old })
      .withHints({ jobId: this.options.jobId })
      .ask('destroy', {}, { timeoutMs: 30_000 })
      .catch(() => undefined);
  }

  private async acquire(signal: AbortSignal): Promise<Slot> {
    const slot = this.free.shift();
    if (slot) return slot;
    return await new Promise<Slot>((resolve, reject) => {
      const take = (s: Slot): void => {
        signal.removeEventListener('abort', onAbort);
        resolve(s);
      };
      const onAbort = (): void => {
        const i = this.waiting.indexOf(take);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason as Error);
      };
      this.waiting.push(take);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private release(slot: Slot): void {
    const next = this.waiting.shift();
    if (next) next(slot);
    else this.free.push(slot);
  }
}

/** Destroys sandboxes by id (best effort: failures are logged, never thrown). */
export async function destroySandboxes(
  refs: RefFactory,
  jobId: string,
  ids: readonly string[],
  log: Logger,
  signal?: AbortSignal,
): Promise<void> {
  await Promise.all(
    ids.map((id) =>
      refs
        .refOf({ kind: SANDBOX_KIND, id })
        .withHints({ jobId })
        .ask('destroy', {}, { timeoutMs: 30_000, ...(signal ? { signal } : {}) })
        .catch((err: unknown) => log.warn({ err, sandboxId: id }, 'could not destroy a sandbox')),
    ),
  );
}
