import { type Logger, noopLogger } from '@troupe/actors';
import { invalidArgument, TroupeError } from '@troupe/proto';
import { type Evaluate } from './evaluation-request';
import { type EvolveOptions, parseEvolveConfig } from './evolve-config';
import { validateTaskId } from './evolve-names';
import { selectFinal } from './final-selection';
import { type IslandStep, evaluateWithRetry, type SlotWork } from './island-worker';
import {
  type EvolveTaskStatus,
  type FinalRecord,
  type JournalRecord,
  JournalRecordSchema,
  type StopRecord,
} from './journal-record';
import { type JournalStore } from './journal-store';
import { type Program, ProgramSchema } from './program';
import { replayJournal } from './replay-journal';
import { budgetStopReason, type StopReason } from './search-budget';
import {
  applyJournalRecord,
  asyncGenerationDue,
  budgetUsage,
  computeGenerationClose,
  nodesInOrder,
  planAsyncSlot,
  planGeneration,
  type SearchState,
  slotProgress,
} from './search-state';
import { parseTunableParams } from './tunable-params';

/** A search task: id, options and seed programs. */
export interface SearchTask {
  /** Task id, `[A-Za-z0-9_-]{1,100}`. */
  taskId: string;
  /** Search options. */
  options: EvolveOptions;
  /** Seed programs (at least one). */
  seeds: Program[];
}

/**
 * Runs one island's step (in production: an ask to the island actor). With the async schedule
 * the first argument is a lane (`0 … islands × islandConcurrency - 1`), not the island: the step
 * carries its slot's island.
 */
export type IslandStepper = (
  island: number,
  step: IslandStep,
  signal: AbortSignal,
) => Promise<unknown>;

/** What a {@link SearchRunner} needs. */
export interface SearchRunnerDeps {
  /** The journal (source of truth: the runner's state is always a replay of it). */
  journal: JournalStore;
  /** Evaluations (the test-phase grading of the selected program runs here). */
  evaluate: Evaluate;
  /** Runs island steps. */
  stepIsland: IslandStepper;
  /**
   * Polled between rounds; true (reason `requested`) or a stop reason (e.g. `cost` when a model
   * budget refused a call) stops the search, then final selection. @default never
   */
  stopRequested?: () =>
    boolean | StopReason | undefined | Promise<boolean | StopReason | undefined>;
  /** Clock, epoch ms. @default Date.now */
  now?: () => number;
  /** Logger. @default no logging */
  logger?: Logger;
  /**
   * Rounds of island steps one generation may take before it is closed with what it has (island
   * steps that fail are retried in the next round).
   * @default 3
   */
  maxRoundsPerGeneration?: number;
}

/**
 * The search loop of one task, as the search actor runs it. Every decision is taken from the
 * state replayed from the journal, and every effect is a journal record, so `run` can be called
 * again after a crash at any point and continues where the journal ends: lost attempts get a new
 * try number (each attempt id is evaluated at most once), finished slots are not redone.
 *
 * A generation: plan its slots (pure, seeded), give each unfinished slot an evaluation allowance
 * from the remaining budget, ask the islands to work on them in parallel, then close it
 * (admission, eviction, migration) once no slot has work left. Limits are checked before each
 * round; a stop closes the generation in progress, journals a stop record and goes to final
 * selection, optional test grading and the final record with the task's real status.
 */
export class SearchRunner {
  private readonly task: SearchTask;
  private readonly deps: SearchRunnerDeps;
  private readonly now: () => number;
  private readonly log: Logger;
  private state: SearchState | undefined;
  private lastSeq = 0;
  private stopLatched: StopReason | undefined;

  constructor(task: SearchTask, deps: SearchRunnerDeps) {
    this.task = task;
    this.deps = deps;
    this.now = deps.now ?? Date.now;
    this.log = (deps.logger ?? noopLogger).child({ taskId: task.taskId });
  }

  /** The state as of the last journal read (undefined before {@link SearchRunner.run}). */
  get current(): SearchState | undefined {
    return this.state;
  }

  /** Runs (or resumes) the search to its final record and returns it. */
  async run(signal: AbortSignal): Promise<FinalRecord> {
    const state = await this.load(signal);
    if (state.config.schedule === 'async') return this.runAsync(state, signal);
    let round = 0;
    let roundGeneration = state.generation;
    while (!state.final) {
      signal.throwIfAborted();
      if (state.stop) {
        await this.finish(state.stop, signal);
        continue;
      }
      if (state.generation !== roundGeneration) {
        roundGeneration = state.generation;
        round = 0;
      }
      const work = this.pendingWork(state);
      const reason = await this.stopReason(state);
      const rounds = this.deps.maxRoundsPerGeneration ?? 3;
      if (work.length === 0 || (reason !== undefined && this.hasNodes(state)) || round >= rounds) {
        if (round >= rounds && work.length > 0) {
          this.log.warn(
            { generation: state.generation },
            'evolve generation closed with unfinished slots',
          );
        }
        await this.append(computeGenerationClose(state, this.now()).record, signal);
        continue;
      }
      if (reason !== undefined) {
        await this.append(this.stopRecord(state, reason), signal);
        continue;
      }
      const allotted = this.allot(state, work);
      if (allotted.length === 0) {
        await this.append(this.stopRecord(state, 'evaluations'), signal);
        continue;
      }
      round++;
      await this.dispatch(state, allotted, signal);
      await this.refresh(signal);
    }
    return state.final;
  }

  /**
   * The async (steady-state) schedule: keep `islands × islandConcurrency` slots busy. Whenever a
   * slot frees, a generation that has all its children done is closed (migration), then the next
   * child is planned from the islands as they are (a `plan` record, journaled before dispatch)
   * and sent to its island as a one-slot step. A child is admitted when its node arrives (the
   * journal fold does it), so the islands are always a replay of the journal. On resume, planned
   * slots that are not done are dispatched again first (lost attempts get a new try). A stop
   * waits for the children in flight, then final selection runs as in the generational mode.
   */
  private async runAsync(state: SearchState, signal: AbortSignal): Promise<FinalRecord> {
    const cfg = state.config;
    const lanes = Math.max(1, cfg.islands * cfg.islandConcurrency);
    const rounds = this.deps.maxRoundsPerGeneration ?? 3;
    const inFlight = new Map<
      number,
      { done: Promise<void>; work: SlotWork; usedBefore: number; lane: number }
    >();
    const dispatches = new Map<number, number>();
    const settled: number[] = [];
    while (!state.final) {
      signal.throwIfAborted();
      if (state.stop) {
        if (inFlight.size > 0) {
          await this.awaitAny(inFlight, settled, signal);
          continue;
        }
        await this.finish(state.stop, signal);
        continue;
      }
      if (asyncGenerationDue(state)) {
        await this.append(computeGenerationClose(state, this.now()).record, signal);
        continue;
      }
      const reason = await this.stopReason(state);
      if (reason !== undefined) {
        if (inFlight.size > 0) {
          await this.awaitAny(inFlight, settled, signal);
          continue;
        }
        await this.append(this.stopRecord(state, reason), signal);
        continue;
      }
      let reserved = 0;
      for (const f of inFlight.values()) {
        const used = slotProgress(state, f.work.slot, f.work.generation).attemptsUsed;
        reserved += Math.max(0, f.work.maxAttempts - (used - f.usedBefore));
      }
      let remaining = cfg.limits.maxEvaluations - budgetUsage(state).evaluations - reserved;
      while (inFlight.size < lanes && remaining > 0) {
        const work = await this.nextAsyncWork(state, inFlight, dispatches, rounds, signal);
        if (!work) break;
        const usedBefore = slotProgress(state, work.slot, work.generation).attemptsUsed;
        const full = cfg.operators === 'llm' ? 1 + cfg.debugMaxDepth : 1;
        const allowance = Math.min(full - Math.min(usedBefore, full - 1), remaining);
        remaining -= allowance;
        const slotWork: SlotWork = { ...work, maxAttempts: allowance };
        dispatches.set(work.slot, (dispatches.get(work.slot) ?? 0) + 1);
        // Island actors are turn-based and keep no population, so a step goes to the actor of a
        // free lane (not of the child's island): two children of one island run side by side.
        const busy = new Set([...inFlight.values()].map((f) => f.lane));
        let lane = 0;
        while (busy.has(lane)) lane++;
        const done = this.deps.stepIsland(lane, this.stepOf(state, [slotWork]), signal).then(
          () => void settled.push(work.slot),
          (err: unknown) => {
            if (!signal.aborted) {
              this.log.warn({ err, slot: work.slot }, 'evolve island step failed; retrying it');
            }
            settled.push(work.slot);
          },
        );
        inFlight.set(work.slot, { done, work: slotWork, usedBefore, lane });
      }
      if (inFlight.size === 0) {
        await this.append(this.stopRecord(state, 'evaluations'), signal);
        continue;
      }
      await this.awaitAny(inFlight, settled, signal);
    }
    return state.final;
  }

  /** Waits until at least one slot in flight settled, drops the settled ones, reads the journal. */
  private async awaitAny(
    inFlight: Map<number, { done: Promise<void> }>,
    settled: number[],
    signal: AbortSignal,
  ): Promise<void> {
    if (settled.length === 0) await Promise.race([...inFlight.values()].map((f) => f.done));
    signal.throwIfAborted();
    for (const slot of settled.splice(0)) inFlight.delete(slot);
    await this.refresh(signal);
  }

  /**
   * The next slot to run: a planned slot that is not done, not in flight and not given up (after
   * `rounds` dispatches), else a newly planned one (journaled first).
   */
  private async nextAsyncWork(
    state: SearchState,
    inFlight: Map<number, unknown>,
    dispatches: Map<number, number>,
    rounds: number,
    signal: AbortSignal,
  ): Promise<Omit<SlotWork, 'maxAttempts'> | undefined> {
    let plan = state.plans.find((p) => {
      if (inFlight.has(p.slot) || (dispatches.get(p.slot) ?? 0) >= rounds) return false;
      return !slotProgress(state, p.slot, p.generation).done;
    });
    if (!plan) {
      const next = planAsyncSlot(state);
      await this.append({ type: 'plan', taskId: state.taskId, ...next, at: this.now() }, signal);
      plan = state.plans[next.slot];
      if (!plan) throw new TroupeError('INTERNAL', `plan of slot ${next.slot} was not journaled`);
    }
    const p = slotProgress(state, plan.slot, plan.generation);
    return {
      generation: plan.generation,
      slot: plan.slot,
      island: plan.island,
      operator: plan.operator,
      parentIds: plan.parentIds,
      seedIndex: plan.seedIndex,
      stepScale: plan.stepScale,
      depth: p.depth,
      try: p.try,
      debugParentId: p.debugParentId,
      debugElapsedMs: p.debugElapsedMs,
    };
  }

  private async load(signal: AbortSignal): Promise<SearchState> {
    const taskId = validateTaskId(this.task.taskId);
    let read = await this.deps.journal.read(taskId, 0, { signal });
    if (read.records.length === 0) {
      const config = parseEvolveConfig(this.task.options);
      const seeds = this.task.seeds.map((s, i) => {
        const parsed = ProgramSchema.safeParse(s);
        if (!parsed.success) throw invalidArgument(`seeds[${i}]`, 'must be {language, source}');
        if (config.operators === 'builtin') {
          const params = parseTunableParams(parsed.data.source);
          if (params.length === 0) {
            throw invalidArgument(`seeds[${i}]`, 'built-in operators need troupe:param markers');
          }
        }
        return parsed.data;
      });
      if (seeds.length === 0) throw invalidArgument('seeds', 'a search needs a seed program');
      await this.deps.journal.append(
        { type: 'task', taskId, config, seeds, createdAt: this.now() },
        { signal },
      );
      read = await this.deps.journal.read(taskId, 0, { signal });
    }
    this.state = replayJournal(read.records);
    this.lastSeq = read.lastSeq;
    this.log.info(
      { generation: this.state.generation, records: read.records.length },
      'evolve search loaded its journal',
    );
    return this.state;
  }

  private async refresh(signal: AbortSignal): Promise<void> {
    const state = this.state as SearchState;
    const read = await this.deps.journal.read(state.taskId, this.lastSeq, { signal });
    for (const record of read.records) applyJournalRecord(state, record);
    this.lastSeq = read.lastSeq;
  }

  private async append(record: JournalRecord, signal: AbortSignal): Promise<void> {
    const receipt = await this.deps.journal.append(record, { signal });
    if (!receipt.duplicate && receipt.seq === this.lastSeq + 1) {
      // Nothing was written between our last read and this record: apply it as a reader would
      // see it (a JSON round trip through the schema) and save a journal read per generation.
      applyJournalRecord(
        this.state as SearchState,
        JournalRecordSchema.parse(JSON.parse(JSON.stringify(record))),
      );
      this.lastSeq = receipt.seq;
      return;
    }
    await this.refresh(signal);
  }

  private hasNodes(state: SearchState): boolean {
    return Object.values(state.nodes).some((n) => n.generation === state.generation);
  }

  private async stopReason(state: SearchState): Promise<StopReason | undefined> {
    const reason = budgetStopReason(budgetUsage(state), state.config.limits);
    if (reason !== undefined) return reason;
    if (this.stopLatched === undefined) {
      const asked = await this.deps.stopRequested?.();
      if (asked) this.stopLatched = asked === true ? 'requested' : asked;
    }
    return this.stopLatched;
  }

  private stopRecord(state: SearchState, reason: StopReason): StopRecord {
    return {
      type: 'stop',
      taskId: state.taskId,
      reason,
      generation: state.generation,
      usage: budgetUsage(state),
      at: this.now(),
    };
  }

  private pendingWork(state: SearchState): Omit<SlotWork, 'maxAttempts'>[] {
    const out: Omit<SlotWork, 'maxAttempts'>[] = [];
    for (const plan of planGeneration(state)) {
      const p = slotProgress(state, plan.slot);
      if (p.done) continue;
      out.push({
        generation: plan.generation,
        slot: plan.slot,
        island: plan.island,
        operator: plan.operator,
        parentIds: plan.parentIds,
        seedIndex: plan.seedIndex,
        stepScale: plan.stepScale,
        depth: p.depth,
        try: p.try,
        debugParentId: p.debugParentId,
        debugElapsedMs: p.debugElapsedMs,
      });
    }
    return out;
  }

  /**
   * Evaluation allowances: a slot may use 1 + `debugMaxDepth` attempts in all (1 with built-in
   * operators), and the allowances together never exceed the evaluations left, so the limit is
   * never overshot however the islands' work interleaves.
   */
  private allot(state: SearchState, work: Omit<SlotWork, 'maxAttempts'>[]): SlotWork[] {
    const cfg = state.config;
    const perSlot = cfg.operators === 'llm' ? 1 + cfg.debugMaxDepth : 1;
    let remaining = cfg.limits.maxEvaluations - budgetUsage(state).evaluations;
    const out: SlotWork[] = [];
    for (const w of work) {
      const used = slotProgress(state, w.slot).attemptsUsed;
      const allowance = Math.min(perSlot - Math.min(used, perSlot - 1), remaining);
      if (allowance <= 0) break;
      remaining -= allowance;
      out.push({ ...w, maxAttempts: allowance });
    }
    return out;
  }

  private async dispatch(state: SearchState, work: SlotWork[], signal: AbortSignal): Promise<void> {
    const byIsland = new Map<number, SlotWork[]>();
    for (const w of work) byIsland.set(w.island, [...(byIsland.get(w.island) ?? []), w]);
    // Largest step first (a fixed order; its evaluations are dispatched first).
    const steps = [...byIsland.entries()].sort((a, b) => b[1].length - a[1].length || a[0] - b[0]);
    const settled = await Promise.allSettled(
      steps.map(([island, slots]) =>
        this.deps.stepIsland(island, this.stepOf(state, slots), signal),
      ),
    );
    signal.throwIfAborted();
    for (const s of settled) {
      if (s.status === 'rejected') {
        this.log.warn(
          { err: s.reason as unknown },
          'evolve island step failed; retrying its slots',
        );
      }
    }
  }

  /** The step of some slots: the task, its config and seeds, and every parent they refer to. */
  private stepOf(state: SearchState, slots: SlotWork[]): IslandStep {
    const parents: IslandStep['parents'] = {};
    for (const s of slots) {
      for (const id of [...s.parentIds, ...(s.debugParentId ? [s.debugParentId] : [])]) {
        const node = state.nodes[id];
        if (node) parents[id] = { program: node.program, result: node.result };
      }
    }
    return { taskId: state.taskId, config: state.config, seeds: state.seeds, parents, slots };
  }

  private async finish(stop: StopRecord, signal: AbortSignal): Promise<void> {
    const state = this.state as SearchState;
    const cfg = state.config;
    const selection = selectFinal(nodesInOrder(state), {
      seed: cfg.seed,
      direction: cfg.direction,
    });
    let test: FinalRecord['test'] = null;
    if (cfg.testPhase && selection.node) {
      // Journaled first: a crash during grading makes the next run use a new attempt id.
      const attemptId = `${state.taskId}:final:test:t${state.testAttempts.length}`;
      await this.append(
        {
          type: 'test-start',
          taskId: state.taskId,
          attemptId,
          nodeId: selection.node.attemptId,
          at: this.now(),
        },
        signal,
      );
      const graded = await evaluateWithRetry(
        this.deps.evaluate,
        {
          program: selection.node.program,
          phase: 'test',
          attemptId,
          timeoutMs: cfg.evaluationTimeoutMs,
        },
        signal,
        this.now,
      );
      test = { attemptId, result: graded.result, error: graded.error };
    }
    let status: EvolveTaskStatus;
    if (selection.source === 'none') status = 'no_program';
    else if (selection.source === 'random_no_valid') status = 'no_valid_program';
    else if (test && test.result?.status !== 'ok') status = 'test_failed';
    else status = 'succeeded';
    const final: FinalRecord = {
      type: 'final',
      taskId: state.taskId,
      selection: {
        nodeId: selection.node?.attemptId ?? null,
        source: selection.source,
        score: selection.score,
      },
      test,
      status,
      stopReason: stop.reason,
      usage: budgetUsage(state),
      at: this.now(),
    };
    await this.append(final, signal);
    if (!state.final) throw new TroupeError('INTERNAL', 'final record did not reach the journal');
    this.log.info(
      { status, source: selection.source, score: selection.score, stopReason: stop.reason },
      'evolve search finished',
    );
  }
}
