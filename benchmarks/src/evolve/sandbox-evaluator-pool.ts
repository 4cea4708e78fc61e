import { type Logger, type RefFactory, type UntypedActorRef } from '@troupe/actors';
import type {
  Evaluate,
  EvaluateOptions,
  EvaluationRequest,
  EvaluatorResult,
  SearchTaskSpec,
} from '@troupe/evolve';
import { SANDBOX_KIND } from '@troupe/node-agent';
import { type ErrorCode, TroupeError } from '@troupe/proto';
import {
  classifySandboxFailure,
  runSandboxEvaluation,
  sandboxFailure,
} from './run-sandbox-evaluation';
import { graderSandboxId } from './run-sealed-evaluation';

/** Times one evaluator slot may replace a lost sandbox before its evaluations fail for good. */
export const MAX_SANDBOX_REPLACEMENTS = 3;

/**
 * Id of the sandbox of evaluator slot `slot` of an attempt's execution (`resourceId`), after
 * `replacement` lost sandboxes (a destroyed or lost sandbox id is never reused).
 */
export function evaluatorSandboxId(resourceId: string, slot: number, replacement = 0): string {
  return `ev-${resourceId}-s${slot}${replacement > 0 ? `-r${replacement}` : ''}`;
}

/**
 * Every sandbox id an execution with `slots` evaluator slots may have created (with `sealed`,
 * each slot's grader sandbox too).
 */
export function evaluatorSandboxIds(resourceId: string, slots: number, sealed = false): string[] {
  const ids: string[] = [];
  for (let s = 0; s < slots; s++) {
    for (let r = 0; r <= MAX_SANDBOX_REPLACEMENTS; r++) {
      const id = evaluatorSandboxId(resourceId, s, r);
      ids.push(id);
      if (sealed) ids.push(graderSandboxId(id));
    }
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
  /** Image of the sandboxes (a built grader environment). @default `troupe-<evaluator.image>:latest` */
  image?: string;
  /** Deadline of creating a sandbox (a missing image is built first). @default 600000 */
  createTimeoutMs?: number;
  /** Logger. */
  log: Logger;
}

interface Slot {
  index: number;
  replacement: number;
  ready: boolean;
  /** The creation of the slot's sandbox while it is under way. */
  creating?: Promise<void>;
}

/** What an island reports when it gives a leased sandbox back. */
export interface LeaseReport {
  /** The sandbox failed: replaced (a new id) before its slot is granted again. */
  lost?: boolean;
  /** A failure evaluations cannot recover from (stops the search, like {@link SandboxEvaluatorPool.fatal}). */
  fatal?: { code: string; message: string };
}

interface StepLeases {
  /** Aborted when the step ends: drops its queued grants. */
  readonly ended: AbortController;
  /** Slots granted to the step and not given back. */
  readonly held: Set<Slot>;
}

/**
 * The evaluator sandboxes of one task execution in the node agent (image
 * `troupe-<evaluator.image>:latest`, no network, the suite's memory), one reused sandbox per slot,
 * created lazily, replaced when lost: the task's evaluation capacity. It runs evaluations itself
 * ({@link SandboxEvaluatorPool.evaluate}, the test-phase grading) and leases sandboxes to island
 * steps one evaluation at a time ({@link SandboxEvaluatorPool.grant}), which evaluate in them with the same
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
  /** Evaluations waiting for their slot's sandbox to be created, ready to take a ready slot. */
  private readonly swappers: ((slot: Slot) => void)[] = [];
  /** Set by {@link destroyCreated}: a sandbox whose creation ends after it is destroyed at once. */
  private closed = false;
  private readonly steps = new Map<string, StepLeases>();
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
    const slot = await this.acquireReady(opts.signal);
    try {
      return await this.run(slot, request, opts);
    } finally {
      this.release(slot);
    }
  };

  /** Destroys every sandbox this pool created (best effort, in parallel). */
  async destroyCreated(signal?: AbortSignal): Promise<void> {
    this.closed = true;
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
   * Opens the leases of an island step: until {@link endStep}, {@link grant} may lease sandboxes
   * to it, one per evaluation.
   */
  openStep(stepId: string): void {
    if (!this.steps.has(stepId)) {
      this.steps.set(stepId, { ended: new AbortController(), held: new Set() });
    }
  }

  /**
   * Leases one ready sandbox to an evaluation of step `stepId`: waits for a free slot (FIFO with
   * every other waiter of the task, so the slots form one work-conserving queue across islands)
   * and creates its sandbox if needed (a missing image is built: the wait is the evaluation's
   * queue time). A failed creation is handled like a failed evaluation (replaced, or
   * {@link fatal}) and thrown (`UNAVAILABLE`); a step that is not open, or ends while waiting,
   * fails `CANCELLED`. Give it back with {@link giveBack} (or {@link endStep}).
   */
  async grant(stepId: string, signal: AbortSignal): Promise<string> {
    const step = this.steps.get(stepId);
    if (!step || step.ended.signal.aborted) throw stepEnded(stepId);
    const both = AbortSignal.any([signal, step.ended.signal]);
    let slot: Slot;
    try {
      slot = await this.acquireReady(both);
    } catch (err) {
      if (both.aborted) throw signal.aborted ? (signal.reason as Error) : stepEnded(stepId);
      throw err;
    }
    if (both.aborted) {
      this.release(slot);
      throw signal.aborted ? (signal.reason as Error) : stepEnded(stepId);
    }
    step.held.add(slot);
    return this.idOf(slot);
  }

  /**
   * Gives a sandbox leased to step `stepId` back: a lost one is replaced (a new id) before its
   * slot is granted again; a reported fatal failure becomes {@link fatal}. False for an id that
   * is not, or no longer, leased to the step.
   */
  giveBack(stepId: string, sandboxId: string, report: LeaseReport = {}): boolean {
    const step = this.steps.get(stepId);
    const slot = step ? [...step.held].find((s) => this.idOf(s) === sandboxId) : undefined;
    if (!step || !slot) return false;
    step.held.delete(slot);
    this.settle(slot, report);
    return true;
  }

  /**
   * Ends the leases of a step (it replied, failed or timed out): its queued grants are dropped
   * and every sandbox still leased to it returns to the pool, so a dead island leaks none.
   * `lost`: sandboxes the step's reply reports lost (replaced).
   */
  endStep(
    stepId: string,
    report: { lost?: readonly string[]; fatal?: LeaseReport['fatal'] } = {},
  ): void {
    const step = this.steps.get(stepId);
    if (report.fatal) this.settleFatal(report.fatal);
    if (!step) return;
    this.steps.delete(stepId);
    step.ended.abort(stepEnded(stepId));
    const lost = new Set(report.lost ?? []);
    for (const slot of step.held) this.settle(slot, { lost: lost.has(this.idOf(slot)) });
    step.held.clear();
  }

  private settle(slot: Slot, report: LeaseReport): void {
    if (report.fatal) this.settleFatal(report.fatal);
    if (report.lost) {
      this.failures++;
      this.replace(slot, new Error('the island reported the sandbox lost'));
    }
    this.release(slot);
  }

  private settleFatal(fatal: NonNullable<LeaseReport['fatal']>): void {
    this.fatal ??= new TroupeError(
      fatal.code as ErrorCode,
      `island evaluation failed: ${fatal.message}`,
    );
  }

  private idOf(slot: Slot): string {
    return evaluatorSandboxId(this.options.resourceId, slot.index, slot.replacement);
  }

  /**
   * A held slot whose sandbox is ready. A ready free slot is taken first; else a free slot
   * without one, whose sandbox is then created. When a ready slot frees while that creation
   * waits (the cluster may have no room for another sandbox: a node was lost, the survivors are
   * full), the evaluation takes the ready slot and the creation goes on without it: its slot
   * rejoins the pool when the creation ends, so the pool uses what the cluster can hold and grows
   * back when room appears. A failed creation counts as a failed evaluation (replaced, or
   * {@link fatal}) and is thrown (`UNAVAILABLE`); an abort while waiting is thrown as the abort.
   */
  private async acquireReady(signal: AbortSignal): Promise<Slot> {
    const slot = await this.acquire(signal);
    if (slot.ready) return slot;
    const creating = this.startCreating(slot);
    return await new Promise<Slot>((resolve, reject) => {
      let waiting = true;
      const stopWaiting = (): void => {
        waiting = false;
        signal.removeEventListener('abort', onAbort);
        const i = this.swappers.indexOf(swap);
        if (i >= 0) this.swappers.splice(i, 1);
      };
      const handOver = (): void => {
        // The creation goes on without this evaluation; its slot rejoins the pool at its end.
        void creating.then(
          () => this.release(slot),
          () => this.release(slot),
        );
      };
      const swap = (ready: Slot): void => {
        stopWaiting();
        handOver();
        resolve(ready);
      };
      const onAbort = (): void => {
        stopWaiting();
        handOver();
        reject(signal.reason as Error);
      };
      this.swappers.push(swap);
      signal.addEventListener('abort', onAbort, { once: true });
      creating.then(
        () => {
          if (!waiting) return;
          stopWaiting();
          resolve(slot);
        },
        (err: unknown) => {
          if (!waiting) return;
          stopWaiting();
          this.release(slot);
          reject(sandboxFailure(err));
        },
      );
    });
  }

  /**
   * Creates the sandbox(es) of `slot`, once however often asked, bound by the creation deadline
   * only (no evaluation's signal: the slot outlives the evaluation that started it). A failure is
   * counted and handled ({@link onFailure}) before the promise rejects.
   */
  private startCreating(slot: Slot): Promise<void> {
    slot.creating ??= this.ensureCreated(slot)
      .then(
        () => {
          if (this.closed) void this.destroyLate(slot);
        },
        (err: unknown) => {
          this.failures++;
          this.onFailure(slot, err);
          throw err;
        },
      )
      .finally(() => {
        slot.creating = undefined;
      });
    return slot.creating;
  }

  /** A sandbox whose creation ended after {@link destroyCreated}: destroyed at once. */
  private async destroyLate(slot: Slot): Promise<void> {
    const id = this.idOf(slot);
    const ids = this.options.suite.evaluator.sealed ? [id, graderSandboxId(id)] : [id];
    await destroySandboxes(this.options.refs, this.options.jobId, ids, this.log);
  }

  private async ensureCreated(slot: Slot): Promise<void> {
    if (slot.ready) return;
    const { suite } = this.options;
    const create = {
      spec: {
        image: this.options.image ?? `troupe-${suite.evaluator.image}:latest`,
        memoryMb: suite.evaluator.memoryMb,
        cpus: this.options.cpus ?? 1,
        network: 'none',
      },
      jobId: this.options.jobId,
    };
    const ids = [this.idOf(slot)];
    // Sealed grading: a second sandbox per slot, the only one that receives the answers.
    if (suite.evaluator.sealed) ids.push(graderSandboxId(this.idOf(slot)));
    for (const id of ids) {
      this.created.add(id);
      await this.refById(id).ask('create', create, { timeoutMs: this.createTimeoutMs });
    }
    slot.ready = true;
  }

  private refById(id: string): UntypedActorRef {
    return this.options.refs
      .refOf({ kind: SANDBOX_KIND, id })
      .withHints({ jobId: this.options.jobId });
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
      onStart?.();
      const result = await runSandboxEvaluation(
        this.ref(slot),
        request,
        { suite: this.options.suite, files: this.options.files },
        signal,
        this.refById(graderSandboxId(this.idOf(slot))),
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
    const olds = this.options.suite.evaluator.sealed ? [old, graderSandboxId(old)] : [old];
    for (const id of olds) {
      this.options.refs
        .refOf({ kind: SANDBOX_KIND, id })
        .withHints({ jobId: this.options.jobId })
        .ask('destroy', {}, { timeoutMs: 30_000 })
        .catch(() => undefined);
    }
  }

  /** A free slot (one whose sandbox is ready first), or the next one released. */
  private async acquire(signal: AbortSignal): Promise<Slot> {
    const ready = this.free.findIndex((s) => s.ready);
    const slot = ready >= 0 ? this.free.splice(ready, 1)[0] : this.free.shift();
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
    const swapper = slot.ready ? this.swappers.shift() : undefined;
    if (swapper) return swapper(slot);
    const next = this.waiting.shift();
    if (next) next(slot);
    else this.free.push(slot);
  }
}

function stepEnded(stepId: string): TroupeError {
  return new TroupeError('CANCELLED', `island step ${stepId} has ended: no evaluator lease`);
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
