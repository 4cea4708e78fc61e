import { errorCode, isTroupeError, LEASE_SUBJECT_PATTERN, LEASE_SUBJECT_RULE } from '@troupe/proto';
import { z } from 'zod';
import { nextDebugStep } from './debug-chain';
import { type Evaluate } from './evaluation-request';
import {
  type EvaluatorResult,
  EvaluatorResultSchema,
  parseEvaluatorResult,
} from './evaluator-result';
import { type EvolveConfig, EvolveOptionsSchema } from './evolve-config';
import {
  attemptIdOf,
  type AttemptRecord,
  type NodeOutcome,
  type NodeRecord,
} from './journal-record';
import { type JournalStore } from './journal-store';
import { type Logger } from '@troupe/actors';
import { type OperatorKind } from './operator-kind';
import { type Program, programHash, ProgramSchema } from './program';
import { type OperatorParent, type Proposal, type SearchOperators } from './search-operators';
import { SeededRng } from './seeded-rng';

const count = z.number().int().nonnegative();

/** One slot an island works on in a step: where to start and how many attempts it may make. */
export const SlotWorkSchema = z
  .object({
    generation: count,
    slot: count,
    island: count,
    operator: z.enum(['seed', 'draft', 'improve', 'crossover']),
    parentIds: z.array(z.string()).max(2),
    seedIndex: count.nullable(),
    /** Improve: multiple of `mutationSigma` for the child (`stepAdaptation`). @default 1 */
    stepScale: z.number().positive().max(64).default(1),
    /** Depth of the first attempt (above 0 when a Debug chain resumes). */
    depth: count,
    /** Try of the first attempt (above 0 after lost attempts). */
    try: count,
    /** For a first attempt at depth > 0: the buggy node to debug. */
    debugParentId: z.string().nullable(),
    /** Debug time already spent in the chain, in ms. */
    debugElapsedMs: z.number().nonnegative(),
    /** Attempts (evaluations) this step may start for the slot. */
    maxAttempts: z.number().int().positive(),
  })
  .strict();

/** One slot's work (see {@link SlotWorkSchema}). */
export type SlotWork = z.output<typeof SlotWorkSchema>;

/** A parent as shipped to an island: program and result. */
export const StepParentSchema = z
  .object({ program: ProgramSchema, result: EvaluatorResultSchema.nullable() })
  .strict();

/** What an island step receives. */
export const IslandStepSchema = z
  .object({
    taskId: z.string(),
    config: EvolveOptionsSchema,
    seeds: z.array(ProgramSchema).min(1),
    /** Programs and results of every node a slot refers to, by node id. */
    parents: z.record(z.string(), StepParentSchema),
    slots: z.array(SlotWorkSchema),
    /**
     * Where the island's evaluations lease evaluators from the search's owner, one evaluation
     * at a time (`subject`: the core NATS lease subject the owner serves, `troupe.<c>.lease.<token>`; `stepId`: this step,
     * whose leases the owner ends with the step), so the owner's evaluator cap holds across
     * processes. @default none (the island host's own `evaluate`)
     */
    lease: z
      .object({
        subject: z.string().regex(LEASE_SUBJECT_PATTERN, LEASE_SUBJECT_RULE),
        stepId: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'must be [A-Za-z0-9_-]{1,128}'),
      })
      .strict()
      .optional(),
    /** Host-specific evaluation setup the island's host parses itself (evaluator, files). */
    evaluation: z.record(z.string(), z.unknown()).optional(),
    /** Model calls of LLM operators, built on the island's host. @default the host's chat */
    llm: z
      .object({
        /** Registry name of the model. */
        model: z.string().min(1),
        maxTokens: z.number().int().positive().optional(),
        temperature: z.number().min(0).max(2).optional(),
        /** The job's ledger scope (as `TaskContext.budgetScope`), for the host's budget hook. */
        budgetScope: z.string().min(1).optional(),
        /**
         * The search's own scope (`agent:<jobId>/<searchId>` in the job's own ledger, limit
         * `maxCostUsd`): every call also reserves its worst case there, so the islands of a
         * search, wherever they run, never overshoot its cost limit.
         */
        searchScope: z.string().min(1).optional(),
        /** Metadata of every call record (job, task, attempt). */
        metadata: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

/** An island step (see {@link IslandStepSchema}). */
export type IslandStep = z.output<typeof IslandStepSchema>;

/** What {@link runIslandStep} needs. */
export interface IslandWorkerDeps {
  /** Runs evaluations. */
  evaluate: Evaluate;
  /** Draft/Improve/Crossover/Debug. */
  operators: SearchOperators;
  /** Where attempts and nodes are journaled. */
  journal: JournalStore;
  /** Clock, epoch ms. @default Date.now */
  now?: () => number;
  /** Logger. */
  logger: Logger;
}

interface EvaluationOutcome {
  result: EvaluatorResult | null;
  error: string | null;
  queueMs: number;
  infraRetries: number;
}

function messageOf(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return isTroupeError(err) ? `${errorCode(err)}: ${text}` : text;
}

/**
 * Runs an evaluation, retrying once after an infrastructure failure (the evaluate function threw,
 * or returned something that is not an evaluator result). Program outcomes — invalid, error,
 * timeout — are results and never retried. Queue wait is measured with `onStart` when the
 * evaluate function calls it, else as call time minus the evaluator's own `evalMs`; the time of a
 * failed infrastructure call counts as waiting too (it is not the search's work).
 */
export async function evaluateWithRetry(
  evaluate: Evaluate,
  request: { program: Program; phase: 'validation' | 'test'; attemptId: string; timeoutMs: number },
  signal: AbortSignal,
  now: () => number = Date.now,
): Promise<EvaluationOutcome> {
  let queueMs = 0;
  let lastError = 'no attempt made';
  for (let infraRetry = 0; infraRetry <= 1; infraRetry++) {
    signal.throwIfAborted();
    const callStart = now();
    let startedAt: number | undefined;
    // A grace period past the evaluator's own deadline: an evaluator that never answers is an
    // infrastructure failure, not a program timeout.
    const callSignal = AbortSignal.any([
      signal,
      AbortSignal.timeout(request.timeoutMs + Math.max(30_000, request.timeoutMs / 2)),
    ]);
    try {
      const raw = await evaluate(
        { ...request, infraRetry },
        { signal: callSignal, onStart: () => void (startedAt ??= now()) },
      );
      const result = parseEvaluatorResult(raw);
      const callMs = now() - callStart;
      queueMs +=
        startedAt !== undefined
          ? Math.max(0, startedAt - callStart)
          : Math.max(0, callMs - result.evalMs);
      return { result, error: null, queueMs, infraRetries: infraRetry };
    } catch (err) {
      signal.throwIfAborted();
      queueMs += now() - callStart;
      lastError = messageOf(err);
    }
  }
  return { result: null, error: lastError, queueMs, infraRetries: 1 };
}

async function propose(
  work: SlotWork,
  depth: number,
  debugParent: OperatorParent | null,
  step: IslandStep,
  operators: SearchOperators,
  signal: AbortSignal,
): Promise<Proposal> {
  const cfg = step.config;
  const ctx = {
    rng: SeededRng.fromKey(cfg.seed, 'op', work.generation, work.slot, depth),
    signal: AbortSignal.any([signal, AbortSignal.timeout(cfg.operatorTimeoutMs)]),
    seeds: step.seeds,
    generation: work.generation,
    stepScale: work.stepScale,
  };
  const parent = (id: string | undefined): OperatorParent => {
    const p = id === undefined ? undefined : step.parents[id];
    if (!p || id === undefined) throw new Error(`parent ${String(id)} was not shipped`);
    return { nodeId: id, program: p.program, result: p.result };
  };
  if (depth > 0) {
    if (!debugParent) throw new Error('debug attempt without a buggy parent');
    return operators.debug(debugParent, ctx);
  }
  switch (work.operator) {
    case 'seed': {
      const seed = step.seeds[work.seedIndex ?? 0];
      if (!seed) throw new Error(`seed ${String(work.seedIndex)} does not exist`);
      return { program: { ...seed }, costUsd: 0 };
    }
    case 'draft':
      return operators.draft(ctx);
    case 'improve':
      return operators.improve(parent(work.parentIds[0]), ctx);
    case 'crossover':
      return operators.crossover(parent(work.parentIds[0]), parent(work.parentIds[1]), ctx);
  }
}

async function runSlot(
  work: SlotWork,
  step: IslandStep,
  deps: IslandWorkerDeps,
  signal: AbortSignal,
): Promise<NodeRecord[]> {
  const now = deps.now ?? Date.now;
  const cfg: EvolveConfig = step.config;
  const nodes: NodeRecord[] = [];
  let depth = work.depth;
  let tryNo = work.try;
  let elapsedMs = work.debugElapsedMs;
  let debugParent: OperatorParent | null = null;
  if (work.debugParentId !== null) {
    const p = step.parents[work.debugParentId];
    if (p) debugParent = { nodeId: work.debugParentId, program: p.program, result: p.result };
  }
  for (let used = 0; used < work.maxAttempts;) {
    const position = {
      taskId: step.taskId,
      generation: work.generation,
      slot: work.slot,
      depth,
      try: tryNo,
    };
    const attemptId = attemptIdOf(position);
    const operator: OperatorKind = depth > 0 ? 'debug' : work.operator;
    const parentIds = depth > 0 && debugParent ? [debugParent.nodeId] : work.parentIds;
    const startedAt = now();
    const attempt: AttemptRecord = {
      type: 'attempt',
      ...position,
      attemptId,
      island: work.island,
      operator,
      parentIds,
      startedAt,
    };
    await deps.journal.append(attempt, { signal });
    used++;
    let program: Program = { language: step.seeds[0]?.language ?? 'python', source: '' };
    let costUsd = 0;
    let outcome: NodeOutcome;
    let error: string | null = null;
    let evaluation: EvaluationOutcome = { result: null, error: null, queueMs: 0, infraRetries: 0 };
    let opMs = 0;
    try {
      const proposal = await propose(work, depth, debugParent, step, deps.operators, signal);
      program = proposal.program;
      costUsd = proposal.costUsd;
    } catch (err) {
      signal.throwIfAborted();
      error = messageOf(err);
      const details = isTroupeError(err) ? err.details : undefined;
      if (typeof details?.costUsd === 'number') costUsd = details.costUsd;
    }
    opMs = now() - startedAt;
    if (error === null) {
      evaluation = await evaluateWithRetry(
        deps.evaluate,
        { program, phase: 'validation', attemptId, timeoutMs: cfg.evaluationTimeoutMs },
        signal,
        now,
      );
      error = evaluation.error;
      outcome =
        evaluation.result === null
          ? 'unscored'
          : evaluation.result.status === 'ok'
            ? 'scored'
            : 'buggy';
    } else {
      outcome = 'no_code';
    }
    const node: NodeRecord = {
      type: 'node',
      ...position,
      attemptId,
      island: work.island,
      operator,
      parentIds,
      program,
      codeHash: programHash(program.source),
      outcome,
      result: evaluation.result,
      error,
      costUsd,
      infraRetries: evaluation.infraRetries,
      ...(operator === 'improve' && work.stepScale !== 1 ? { stepScale: work.stepScale } : {}),
      timings: {
        startedAt,
        opMs,
        queueMs: evaluation.queueMs,
        evalMs: evaluation.result?.evalMs ?? 0,
        totalMs: now() - startedAt,
      },
    };
    await deps.journal.append(node, { signal });
    nodes.push(node);
    deps.logger.debug(
      { attemptId, operator, outcome, score: node.result?.score ?? null },
      'evolve attempt finished',
    );
    if (depth > 0) elapsedMs += node.timings.totalMs;
    const decision = nextDebugStep(
      {
        canDebug: cfg.operators === 'llm' && deps.operators.canDebug,
        depth,
        elapsedMs,
        lastOutcome: outcome,
        attemptsLeft: work.maxAttempts - used,
      },
      { maxDepth: cfg.debugMaxDepth, maxTimeMs: cfg.debugMaxTimeMs },
    );
    if (decision !== 'continue') break;
    debugParent = { nodeId: attemptId, program, result: node.result };
    depth++;
    tryNo = 0;
  }
  return nodes;
}

/**
 * Works through an island's slots of one generation, `islandConcurrency` at a time: for each,
 * journal the attempt, run the operator, evaluate (infrastructure failures retried once),
 * journal the node, and — with LLM operators — follow a buggy child with a Debug chain bounded by
 * depth, total time and the slot's attempt allowance. Returns every node made, in slot order.
 */
export async function runIslandStep(
  step: IslandStep,
  deps: IslandWorkerDeps,
  signal: AbortSignal,
): Promise<NodeRecord[]> {
  const results: NodeRecord[][] = new Array<NodeRecord[]>(step.slots.length);
  let next = 0;
  const lanes = Math.max(1, Math.min(step.config.islandConcurrency, step.slots.length));
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < step.slots.length) {
        const index = next++;
        results[index] = await runSlot(step.slots[index] as SlotWork, step, deps, signal);
      }
    }),
  );
  return results.flat();
}
