import { TroupeError } from '@troupe/proto';
import { nextDebugStep } from './debug-chain';
import { fitnessOf } from './direction';
import { type EvolveConfig, parseEvolveConfig } from './evolve-config';
import { admitChild, chooseIsland, type IslandMember, sampleParents } from './island';
import {
  type AttemptRecord,
  type GenerationRecord,
  type FinalRecord,
  type JournalRecord,
  type NodeRecord,
  type PlanRecord,
  type StopRecord,
  type TaskRecord,
  type TestStartRecord,
} from './journal-record';
import { type OperatorKind } from './operator-kind';
import { type Program } from './program';
import { ringMigration } from './ring-migration';
import { activeIntervals, type BudgetUsage, unionLengthMs } from './search-budget';
import { type IslandReset, resetIslands } from './island-reset';
import { SeededRng } from './seeded-rng';
import { banditStepScale, improveStepScale } from './step-adaptation';

/**
 * Everything a search knows, as a fold of its journal (see {@link applyJournalRecord}): the live
 * search and a resumed one both build it only from records, so a resume restores islands,
 * generation counter and budgets exactly. Plain data (JSON-compatible).
 */
export interface SearchState {
  /** The task. */
  taskId: string;
  /** Its configuration (from the task record). */
  config: EvolveConfig;
  /** Its seed programs. */
  seeds: Program[];
  /** The generation in progress (closed generations are below it). */
  generation: number;
  /** Island populations. */
  islands: IslandMember[][];
  /** `joinedAt` of the next member to arrive anywhere. */
  nextJoinedAt: number;
  /** Nodes that have been sent by migration (never sent again). */
  migrated: string[];
  /** Every node, by attempt id. */
  nodes: Record<string, NodeRecord>;
  /** Every attempt started, by attempt id. */
  attempts: Record<string, AttemptRecord>;
  /** Charged time of the closed generations, in ms. */
  closedChargedMs: number;
  /** Generation records, oldest first. */
  history: GenerationRecord[];
  /** Set once the search stopped. */
  stop: StopRecord | null;
  /** Test-phase attempts started on the selected program. */
  testAttempts: TestStartRecord[];
  /** Set once final selection was journaled. */
  final: FinalRecord | null;
  /** Records applied. */
  records: number;
  /** Async schedule: the children planned so far, by slot (slots count across the search). */
  plans: SlotPlan[];
  /** Async schedule: slots whose child is done and was offered for admission. */
  offered: number[];
  /** Async schedule: admissions and evictions since the last generation record. */
  pendingAdmissions: GenerationRecord['admissions'];
  /** Async schedule: evictions since the last generation record. */
  pendingEvicted: GenerationRecord['evicted'];
}

/** One child to produce in a generation, as planned from the state at the generation's start. */
export interface SlotPlan {
  /** Generation. */
  generation: number;
  /** Index of the child in the generation. */
  slot: number;
  /** Island it is for. */
  island: number;
  /** Operator of the child (depth 0). */
  operator: Exclude<OperatorKind, 'debug'>;
  /** Parents (Improve: one, Crossover: two). */
  parentIds: string[];
  /** For `seed`: which seed program. */
  seedIndex: number | null;
  /** Improve: multiple of `mutationSigma` (see {@link improveStepScale}); 1 otherwise. */
  stepScale: number;
}

/** What remains to do in a slot. */
export interface SlotProgress {
  /** Nothing more to do (a result is in and no Debug step follows). */
  done: boolean;
  /** Depth of the next attempt. */
  depth: number;
  /** Try of the next attempt (attempts lost in crashes at that depth before it). */
  try: number;
  /** For a Debug attempt, the buggy node it repairs. */
  debugParentId: string | null;
  /** Time spent on the slot's Debug attempts so far, in ms. */
  debugElapsedMs: number;
  /** Attempts the slot has started so far (lost ones included). */
  attemptsUsed: number;
}

/** A fresh state from the task record. */
export function createSearchState(task: TaskRecord): SearchState {
  const config = parseEvolveConfig(task.config);
  return {
    taskId: task.taskId,
    config,
    seeds: task.seeds.map((s) => ({ ...s })),
    generation: 0,
    islands: Array.from({ length: config.islands }, () => []),
    nextJoinedAt: 0,
    migrated: [],
    nodes: {},
    attempts: {},
    closedChargedMs: 0,
    history: [],
    stop: null,
    testAttempts: [],
    final: null,
    records: 1,
    plans: [],
    offered: [],
    pendingAdmissions: [],
    pendingEvicted: [],
  };
}

/**
 * Applies one journal record to the state (in place; returns it). Duplicates (a record whose
 * attempt or generation is already applied) change nothing. A `generation` record closes the
 * generation in progress by recomputing its admissions, evictions and migration with
 * {@link computeGenerationClose}, so the islands follow from the node records alone.
 * @throws TroupeError `INTERNAL` for a record of another task or a generation out of order
 */
export function applyJournalRecord(state: SearchState, record: JournalRecord): SearchState {
  if (record.taskId !== state.taskId) {
    throw new TroupeError('INTERNAL', `journal record of task ${record.taskId} in ${state.taskId}`);
  }
  state.records++;
  switch (record.type) {
    case 'task':
      break;
    case 'attempt':
      state.attempts[record.attemptId] ??= record;
      break;
    case 'node':
      if (state.nodes[record.attemptId]) break;
      state.nodes[record.attemptId] = record;
      if (state.config.schedule === 'async') offerIfDone(state, record.generation, record.slot);
      break;
    case 'plan':
      applyPlan(state, record);
      break;
    case 'generation': {
      if (record.generation < state.generation) break;
      if (record.generation !== state.generation) {
        throw new TroupeError(
          'INTERNAL',
          `generation ${record.generation} closed while ${state.generation} is in progress`,
        );
      }
      const close = computeGenerationClose(state, record.closedAt);
      state.islands = close.islands;
      state.nextJoinedAt = close.nextJoinedAt;
      state.migrated.push(...close.record.migrations.map((m) => m.nodeId));
      state.closedChargedMs += close.record.chargedMs;
      state.history.push(close.record);
      state.pendingAdmissions = [];
      state.pendingEvicted = [];
      state.generation++;
      break;
    }
    case 'stop':
      state.stop ??= record;
      break;
    case 'test-start':
      if (!state.testAttempts.some((t) => t.attemptId === record.attemptId)) {
        state.testAttempts.push(record);
      }
      break;
    case 'final':
      state.final ??= record;
      break;
  }
  return state;
}

/** Position order of nodes: generation, slot, depth, try. */
export function comparePositions(
  a: Pick<NodeRecord, 'generation' | 'slot' | 'depth' | 'try'>,
  b: Pick<NodeRecord, 'generation' | 'slot' | 'depth' | 'try'>,
): number {
  return a.generation - b.generation || a.slot - b.slot || a.depth - b.depth || a.try - b.try;
}

/** All nodes in position order. */
export function nodesInOrder(state: SearchState): NodeRecord[] {
  return Object.values(state.nodes).sort(comparePositions);
}

/**
 * The chain of a slot: per depth the node of the lowest try (a later try at the same depth only
 * exists when an earlier one was thought lost), in depth order.
 */
export function slotChain(state: SearchState, generation: number, slot: number): NodeRecord[] {
  const byDepth = new Map<number, NodeRecord>();
  for (const n of Object.values(state.nodes)) {
    if (n.generation !== generation || n.slot !== slot) continue;
    const cur = byDepth.get(n.depth);
    if (!cur || n.try < cur.try) byDepth.set(n.depth, n);
  }
  return [...byDepth.values()].sort((a, b) => a.depth - b.depth);
}

function attemptsAt(state: SearchState, g: number, slot: number, depth?: number): number {
  let n = 0;
  for (const a of Object.values(state.attempts)) {
    if (a.generation === g && a.slot === slot && (depth === undefined || a.depth === depth)) n++;
  }
  return n;
}

/**
 * What remains to do in a slot of the generation in progress (async schedule: of the generation
 * the slot was planned in).
 */
export function slotProgress(
  state: SearchState,
  slot: number,
  generation: number = state.generation,
): SlotProgress {
  const g = generation;
  const chain = slotChain(state, g, slot);
  const attemptsUsed = attemptsAt(state, g, slot);
  const debugElapsedMs = chain
    .filter((n) => n.depth > 0)
    .reduce((sum, n) => sum + n.timings.totalMs, 0);
  const last = chain[chain.length - 1];
  if (!last) {
    return {
      done: false,
      depth: 0,
      try: attemptsAt(state, g, slot, 0),
      debugParentId: null,
      debugElapsedMs,
      attemptsUsed,
    };
  }
  const decision = nextDebugStep(
    {
      canDebug: state.config.operators === 'llm',
      depth: last.depth,
      elapsedMs: debugElapsedMs,
      lastOutcome: last.outcome,
      attemptsLeft: Number.POSITIVE_INFINITY,
    },
    { maxDepth: state.config.debugMaxDepth, maxTimeMs: state.config.debugMaxTimeMs },
  );
  const depth = last.depth + 1;
  return {
    done: decision !== 'continue',
    depth,
    try: attemptsAt(state, g, slot, depth),
    debugParentId: last.attemptId,
    debugElapsedMs,
    attemptsUsed,
  };
}

/**
 * The children of the generation in progress, planned from the state at its start (pure and
 * seeded: the same state plans the same children, which is what lets a resumed search redo
 * exactly the slots a crash interrupted). Generation 0: the seeds unchanged (when
 * `includeSeeds`), then `draftsPerIsland` drafts per island. Later: `childrenPerGeneration`
 * children, each for an island chosen by softmax over normalised island fitness; an empty island
 * drafts; otherwise Crossover with `crossoverProbability` (from `crossoverAfterGeneration`, with
 * two members) of two parents sampled by fitness, else Improve of one.
 */
export function planGeneration(state: SearchState): SlotPlan[] {
  const g = state.generation;
  const cfg = state.config;
  const n = cfg.islands;
  const plans: SlotPlan[] = [];
  const add = (p: Omit<SlotPlan, 'generation' | 'slot' | 'stepScale'>): void => {
    plans.push({ generation: g, slot: plans.length, stepScale: 1, ...p });
  };
  if (g === 0) {
    if (cfg.includeSeeds) {
      state.seeds.forEach((_, k) =>
        add({ island: k % n, operator: 'seed', parentIds: [], seedIndex: k }),
      );
    }
    const drafts = cfg.draftsPerIsland > 0 || plans.length > 0 ? cfg.draftsPerIsland : 1;
    for (let island = 0; island < n; island++) {
      for (let d = 0; d < drafts; d++)
        add({ island, operator: 'draft', parentIds: [], seedIndex: null });
    }
    return plans;
  }
  for (let s = 0; s < cfg.childrenPerGeneration; s++) {
    const rng = SeededRng.fromKey(cfg.seed, 'plan', g, s);
    const island = chooseIsland(state.islands, cfg.islandTemperature, rng);
    const members = state.islands[island] ?? [];
    if (members.length === 0) {
      add({ island, operator: 'draft', parentIds: [], seedIndex: null });
      continue;
    }
    const crossover =
      g >= cfg.crossoverAfterGeneration &&
      members.length >= 2 &&
      rng.next() < cfg.crossoverProbability;
    const parents = sampleParents(members, crossover ? 2 : 1, cfg.parentTemperature, rng);
    plans.push({
      generation: g,
      slot: plans.length,
      island,
      operator: crossover ? 'crossover' : 'improve',
      parentIds: parents.map((p) => p.nodeId),
      seedIndex: null,
      stepScale: crossover ? 1 : stepScales(state, rng)(island),
    });
  }
  return plans;
}

/** The outcome of closing the generation in progress. */
export interface GenerationClose {
  /** The record to journal. */
  record: GenerationRecord;
  /** Islands after admissions, evictions and migration. */
  islands: IslandMember[][];
  /** `joinedAt` of the next arrival. */
  nextJoinedAt: number;
}

/**
 * Closes the generation in progress (pure): each slot's candidate — the first scored node of its
 * chain, i.e. the child or its successful Debug — is offered to the slot's island in slot order
 * (see {@link admitChild}); then, every `migrationInterval` generations, ring migration (see
 * {@link ringMigration}). The charged time is the union of the generation's active intervals.
 */
export function computeGenerationClose(state: SearchState, closedAt: number): GenerationClose {
  if (state.config.schedule === 'async') return computeAsyncGenerationClose(state, closedAt);
  const g = state.generation;
  const cfg = state.config;
  const genNodes = Object.values(state.nodes).filter((nd) => nd.generation === g);
  const slots = [...new Set(genNodes.map((nd) => nd.slot))].sort((a, b) => a - b);
  let islands = state.islands.map((m) => [...m]);
  let joinedAt = state.nextJoinedAt;
  const admissions: GenerationRecord['admissions'] = [];
  const evicted: GenerationRecord['evicted'] = [];
  for (const slot of slots) {
    const candidate = slotChain(state, g, slot).find((nd) => nd.outcome === 'scored');
    if (!candidate || candidate.result?.score == null) continue;
    const member: IslandMember = {
      nodeId: candidate.attemptId,
      fitness: fitnessOf(candidate.result.score, cfg.direction),
      codeHash: candidate.codeHash,
      migrant: false,
      joinedAt,
    };
    const outcome = admitChild(islands[candidate.island] ?? [], member, cfg.maxIslandSize);
    if (outcome.admitted) {
      joinedAt++;
      islands[candidate.island] = outcome.members;
      for (const e of outcome.evicted) evicted.push({ island: candidate.island, nodeId: e.nodeId });
    }
    admissions.push({
      nodeId: candidate.attemptId,
      island: candidate.island,
      admitted: outcome.admitted,
      reason: outcome.reason,
    });
  }
  let migrations: GenerationRecord['migrations'] = [];
  let resets: IslandReset[] = [];
  ({ islands, joinedAt, resets } = resetAtClose(state, islands, joinedAt, evicted));
  ({ islands, joinedAt, migrations } = migrateAtClose(state, islands, joinedAt, evicted));
  const chargedMs = unionLengthMs(genNodes.flatMap((nd) => activeIntervals(nd.timings)));
  return {
    record: {
      type: 'generation',
      taskId: state.taskId,
      generation: g,
      admissions,
      evicted,
      migrations,
      ...(resets.length > 0 ? { resets } : {}),
      chargedMs,
      closedAt,
    },
    islands,
    nextJoinedAt: joinedAt,
  };
}

/**
 * Budget usage derived from the state: evaluations = attempts that evaluated or never reported
 * (lost or running), charged time = closed generations plus the union of the active intervals of
 * the generation in progress, queue wait and cost summed over nodes.
 */
export function budgetUsage(state: SearchState): BudgetUsage {
  let evaluations = 0;
  let lostAttempts = 0;
  for (const id of Object.keys(state.attempts)) {
    const node = state.nodes[id];
    if (!node) {
      evaluations++;
      lostAttempts++;
    } else if (node.outcome !== 'no_code') {
      evaluations++;
    }
  }
  let queueMs = 0;
  let costUsd = 0;
  const current: NodeRecord[] = [];
  for (const node of Object.values(state.nodes)) {
    // A node without an attempt record can only come from a damaged journal; count it anyway.
    if (!state.attempts[node.attemptId] && node.outcome !== 'no_code') evaluations++;
    queueMs += node.timings.queueMs + (node.timings.leaseWaitMs ?? 0);
    costUsd += node.costUsd;
    if (node.generation === state.generation) current.push(node);
  }
  // Async: generations overlap, so the charged time is the union over every node.
  const chargedMs =
    state.config.schedule === 'async'
      ? unionLengthMs(Object.values(state.nodes).flatMap((nd) => activeIntervals(nd.timings)))
      : state.closedChargedMs + unionLengthMs(current.flatMap((nd) => activeIntervals(nd.timings)));
  return {
    evaluations,
    lostAttempts,
    chargedMs,
    queueMs,
    costUsd: Math.round(costUsd * 1e9) / 1e9,
    generations: state.generation,
  };
}

function applyPlan(state: SearchState, record: PlanRecord): void {
  if (state.plans[record.slot]) return;
  if (record.slot !== state.plans.length) {
    throw new TroupeError(
      'INTERNAL',
      `plan of slot ${record.slot} while ${state.plans.length} slots are planned`,
    );
  }
  state.plans.push({
    generation: record.generation,
    slot: record.slot,
    island: record.island,
    operator: record.operator,
    parentIds: [...record.parentIds],
    seedIndex: record.seedIndex,
    stepScale: record.stepScale ?? 1,
  });
}

/**
 * Async schedule: once a slot's chain is done, its candidate (the first scored node of the chain)
 * is offered to its island at once, with the generational admission rule (see
 * {@link admitChild}); the decision waits in `pendingAdmissions` for the next generation record.
 */
function offerIfDone(state: SearchState, generation: number, slot: number): void {
  if (state.offered.includes(slot) || !slotProgress(state, slot, generation).done) return;
  state.offered.push(slot);
  const candidate = slotChain(state, generation, slot).find((nd) => nd.outcome === 'scored');
  if (!candidate || candidate.result?.score == null) return;
  const member: IslandMember = {
    nodeId: candidate.attemptId,
    fitness: fitnessOf(candidate.result.score, state.config.direction),
    codeHash: candidate.codeHash,
    migrant: false,
    joinedAt: state.nextJoinedAt,
  };
  const outcome = admitChild(
    state.islands[candidate.island] ?? [],
    member,
    state.config.maxIslandSize,
  );
  if (outcome.admitted) {
    state.nextJoinedAt++;
    state.islands[candidate.island] = outcome.members;
    for (const e of outcome.evicted) {
      state.pendingEvicted.push({ island: candidate.island, nodeId: e.nodeId });
    }
  }
  state.pendingAdmissions.push({
    nodeId: candidate.attemptId,
    island: candidate.island,
    admitted: outcome.admitted,
    reason: outcome.reason,
  });
}

/**
 * Async schedule: the number of children of generation 0 (the seeds and drafts, planned as the
 * generational schedule plans them).
 */
export function initialPlanCount(state: SearchState): number {
  return planGeneration({ ...state, generation: 0 }).length;
}

/**
 * Async schedule: whether the generation in progress is due to close — as many children are
 * done (offered) as generations 0..g hold: the initial ones, then `childrenPerGeneration` each.
 */
export function asyncGenerationDue(state: SearchState): boolean {
  const due = initialPlanCount(state) + state.generation * state.config.childrenPerGeneration;
  return state.offered.length >= due;
}

/**
 * Async schedule: the child of the next slot, planned from the islands as they are now (pure and
 * seeded by `search.seed` and the slot): the initial slots as generation 0 plans them, then a
 * child for an island chosen by softmax, as {@link planGeneration} plans a later generation's.
 */
export function planAsyncSlot(state: SearchState): SlotPlan {
  const slot = state.plans.length;
  const initial = planGeneration({ ...state, generation: 0 });
  const first = initial[slot];
  if (first) return { ...first, generation: state.generation };
  const cfg = state.config;
  const g = state.generation;
  const rng = SeededRng.fromKey(cfg.seed, 'plan', 'async', slot);
  const island = chooseIsland(state.islands, cfg.islandTemperature, rng);
  const members = state.islands[island] ?? [];
  if (members.length === 0) {
    return {
      generation: g,
      slot,
      island,
      operator: 'draft',
      parentIds: [],
      seedIndex: null,
      stepScale: 1,
    };
  }
  const crossover =
    g >= cfg.crossoverAfterGeneration &&
    members.length >= 2 &&
    rng.next() < cfg.crossoverProbability;
  const parents = sampleParents(members, crossover ? 2 : 1, cfg.parentTemperature, rng);
  return {
    generation: g,
    slot,
    island,
    operator: crossover ? 'crossover' : 'improve',
    parentIds: parents.map((p) => p.nodeId),
    seedIndex: null,
    stepScale: crossover ? 1 : stepScales(state, rng)(island),
  };
}

/**
 * The Improve step scale of each island as the state stands (1 everywhere when
 * `stepAdaptation` is `off`); nodes are put in position order once, on first use.
 */
function stepScales(state: SearchState, rng: SeededRng): (island: number) => number {
  const mode = state.config.stepAdaptation;
  if (mode === 'off') return () => 1;
  let ordered: NodeRecord[] | undefined;
  return (island) => {
    ordered ??= nodesInOrder(state);
    return mode === 'bandit'
      ? banditStepScale(ordered, state.config.direction, rng)
      : improveStepScale(ordered, island, state.config.direction);
  };
}

/**
 * The island reset due when generation `state.generation` closes (every `resetInterval`
 * generations, before migration; none otherwise), in both schedules, seeded by `search.seed` and
 * the generation. Pushes the members it removes onto `evicted`.
 */
function resetAtClose(
  state: SearchState,
  islands: IslandMember[][],
  joinedAt: number,
  evicted: GenerationRecord['evicted'],
): { islands: IslandMember[][]; joinedAt: number; resets: IslandReset[] } {
  const cfg = state.config;
  if (cfg.resetInterval <= 0 || (state.generation + 1) % cfg.resetInterval !== 0) {
    return { islands, joinedAt, resets: [] };
  }
  const rng = SeededRng.fromKey(cfg.seed, 'reset', state.generation);
  const r = resetIslands(islands, rng, joinedAt);
  evicted.push(...r.evicted);
  return { islands: r.islands, joinedAt: r.nextJoinedAt, resets: r.resets };
}

/**
 * The ring migration due when generation `state.generation` closes (every `migrationInterval`
 * generations; none otherwise), in both schedules. Pushes what it evicts onto `evicted`.
 */
function migrateAtClose(
  state: SearchState,
  islands: IslandMember[][],
  joinedAt: number,
  evicted: GenerationRecord['evicted'],
): { islands: IslandMember[][]; joinedAt: number; migrations: GenerationRecord['migrations'] } {
  const cfg = state.config;
  if (cfg.migrationInterval <= 0 || (state.generation + 1) % cfg.migrationInterval !== 0) {
    return { islands, joinedAt, migrations: [] };
  }
  const m = ringMigration(islands, {
    topK: cfg.migrationTopK,
    maxSize: cfg.maxIslandSize,
    alreadyMigrated: new Set(state.migrated),
    nextJoinedAt: joinedAt,
  });
  evicted.push(...m.evicted);
  return { islands: m.islands, joinedAt: m.nextJoinedAt, migrations: m.moves };
}

/**
 * Async schedule: closes the generation in progress. Its admissions were made as its children
 * finished (listed from `pendingAdmissions`); what is left is migration, every
 * `migrationInterval` generations, and the charged time added since the last close.
 */
function computeAsyncGenerationClose(state: SearchState, closedAt: number): GenerationClose {
  const g = state.generation;
  let islands = state.islands.map((m) => [...m]);
  let joinedAt = state.nextJoinedAt;
  const evicted = [...state.pendingEvicted];
  let migrations: GenerationRecord['migrations'] = [];
  let resets: IslandReset[] = [];
  ({ islands, joinedAt, resets } = resetAtClose(state, islands, joinedAt, evicted));
  ({ islands, joinedAt, migrations } = migrateAtClose(state, islands, joinedAt, evicted));
  const total = unionLengthMs(
    Object.values(state.nodes).flatMap((nd) => activeIntervals(nd.timings)),
  );
  return {
    record: {
      type: 'generation',
      taskId: state.taskId,
      generation: g,
      admissions: [...state.pendingAdmissions],
      evicted,
      migrations,
      ...(resets.length > 0 ? { resets } : {}),
      chargedMs: Math.max(0, total - state.closedChargedMs),
      closedAt,
    },
    islands,
    nextJoinedAt: joinedAt,
  };
}
