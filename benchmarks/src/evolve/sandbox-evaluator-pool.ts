import { type Logger, type RefFactory, type UntypedActorRef } from '@troupe/actors';
import {
  type Evaluate,
  type EvaluateOptions,
  type EvaluationRequest,
  type EvaluatorResult,
  parseEvaluatorOutput,
  renderEvaluatorCommand,
  type SearchTaskSpec,
} from '@troupe/agents';
import { isSandboxLost, SANDBOX_KIND } from '@troupe/node-agent';
import { errorCode, TroupeError } from '@troupe/proto';
import { z } from 'zod';
import { phaseFiles } from './suite-bundle';

/** Where an evaluation's files go inside its sandbox (emptied before every evaluation). */
export const EVAL_DIR = '/workspace/eval';
/** Times one evaluator slot may replace a lost sandbox before its evaluations fail for good. */
export const MAX_SANDBOX_REPLACEMENTS = 3;
const STDERR_TAIL_CHARS = 2_000;
const FATAL_CODES: ReadonlySet<string> = new Set([
  'INVALID_ARGUMENT',
  'NOT_FOUND',
  'PERMISSION_DENIED',
  'UNAUTHENTICATED',
  'BUDGET_EXHAUSTED',
]);
// Removes what the previous evaluation left (a program may write files) and recreates the dir.
const CLEAN_SCRIPT = `rm -rf ${EVAL_DIR} /tmp/* /tmp/.[!.]* 2>/dev/null; mkdir -p ${EVAL_DIR}`;

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

const ExecReplySchema = z
  .object({
    exitCode: z.number(),
    stdout: z.string(),
    stderr: z.string(),
    timedOut: z.boolean(),
    oomKilled: z.boolean().optional(),
    durationMs: z.number(),
  })
  .loose();

/**
 * Runs evaluations in the node agent's sandboxes (image `troupe-<evaluator.image>:latest`, no
 * network, the suite's memory), one reused sandbox per slot: each evaluation empties
 * {@link EVAL_DIR} and `/tmp`, puts the program and only its phase's suite files there, and runs
 * the evaluator command with the evaluation's deadline as a hard kill. `onStart` is called once a
 * sandbox is held and ready, so waiting for a slot and building an image count as queue time.
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
    const id = evaluatorSandboxId(this.options.resourceId, slot.index, slot.replacement);
    return this.options.refs
      .refOf({ kind: SANDBOX_KIND, id })
      .withHints({ jobId: this.options.jobId });
  }

  private async run(
    slot: Slot,
    request: EvaluationRequest,
    { signal, onStart }: EvaluateOptions,
  ): Promise<EvaluatorResult> {
    const { suite } = this.options;
    try {
      const sb = this.ref(slot);
      if (!slot.ready) {
        this.created.add(evaluatorSandboxId(this.options.resourceId, slot.index, slot.replacement));
        await sb.ask(
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
      onStart?.();
      await sb.ask(
        'exec',
        { cmd: ['/bin/sh', '-c', CLEAN_SCRIPT], timeoutMs: 30_000 },
        {
          timeoutMs: 60_000,
          signal,
        },
      );
      const files: Record<string, string | { base64: string }> = {
        [programFileOf(request.program.language)]: request.program.source,
      };
      for (const [rel, base64] of Object.entries(
        phaseFiles(suite, this.options.files, request.phase),
      )) {
        files[`suite/${rel}`] = { base64 };
      }
      await sb.ask('putFiles', { destDir: EVAL_DIR, files }, { timeoutMs: 60_000, signal });
      const cmd = renderEvaluatorCommand(suite, {
        suite: `${EVAL_DIR}/suite`,
        program: `${EVAL_DIR}/${programFileOf(request.program.language)}`,
        phase: request.phase,
        timeoutMs: request.timeoutMs,
      });
      const reply = ExecReplySchema.parse(
        await sb.ask(
          'exec',
          { cmd, cwd: EVAL_DIR, timeoutMs: request.timeoutMs },
          { timeoutMs: request.timeoutMs + 30_000, signal },
        ),
      );
      const result = this.resultOf(reply, request);
      this.evaluations++;
      return result;
    } catch (err) {
      if (signal.aborted) throw signal.reason as Error;
      this.failures++;
      // The evaluator itself failed (exit status, no result line): the sandbox is fine.
      if (err instanceof TroupeError && err.details?.['evaluator'] === true) throw err;
      const code = errorCode(err);
      if (FATAL_CODES.has(code)) {
        // Retrying cannot help (a missing image, a refused spec): stop the search.
        this.fatal ??= err instanceof Error ? err : new Error(String(err));
      } else {
        this.replace(slot, err);
      }
      throw new TroupeError('UNAVAILABLE', `evaluator sandbox failed: ${(err as Error).message}`, {
        cause: err,
        retryable: true,
        details: { sandboxLost: isSandboxLost(err), code },
      });
    }
  }

  private resultOf(
    reply: z.output<typeof ExecReplySchema>,
    request: EvaluationRequest,
  ): EvaluatorResult {
    const stderrTail = reply.stderr.slice(-STDERR_TAIL_CHARS);
    if (reply.timedOut) {
      return {
        status: 'timeout',
        score: null,
        signature: [],
        metrics: { reason: `evaluator killed at its deadline of ${request.timeoutMs} ms` },
        stderrTail,
        evalMs: Math.round(reply.durationMs),
        evaluatorVersion: 'unknown',
      };
    }
    if (reply.oomKilled && reply.exitCode !== 0) {
      // The evaluator and the program share the sandbox's memory: the program exhausted it.
      return {
        status: 'error',
        score: null,
        signature: [],
        metrics: { reason: 'out of memory (sandbox limit reached)' },
        stderrTail,
        evalMs: Math.round(reply.durationMs),
        evaluatorVersion: 'unknown',
      };
    }
    if (reply.exitCode !== 0) {
      throw new TroupeError('UNAVAILABLE', `evaluator exited with status ${reply.exitCode}`, {
        retryable: true,
        details: { evaluator: true, stderrTail: stderrTail.slice(-500) },
      });
    }
    try {
      return parseEvaluatorOutput(reply.stdout);
    } catch (err) {
      throw new TroupeError('UNAVAILABLE', (err as Error).message, {
        cause: err,
        retryable: true,
        details: { evaluator: true, stderrTail: stderrTail.slice(-500) },
      });
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

/** File name a program is written to: `program.py` for python, else `program.txt`. */
export function programFileOf(language: string): string {
  if (language === 'python') return 'program.py';
  if (language === 'javascript' || language === 'node') return 'program.js';
  return 'program.txt';
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
