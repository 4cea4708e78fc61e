import { defineActor, type Logger } from '@troupe/actors';
import { invalidArgument } from '@troupe/proto';
import { z } from 'zod';
import { createOperators } from './create-operators';
import { type Evaluate } from './evaluation-request';
import { type EvolveConfig, EvolveOptionsSchema } from './evolve-config';
import { islandActorId } from './evolve-names';
import { type IslandStep, IslandStepSchema, runIslandStep } from './island-worker';
import { FinalRecordSchema } from './journal-record';
import { type JournalStore } from './journal-store';
import { type ChatFunction } from './llm-operator';
import { ProgramSchema } from './program';
import { type SearchOperators } from './search-operators';
import { SearchRunner } from './search-runner';

/** Actor kind of the search actors (one per task, id = task id). */
export const EVOLVE_SEARCH_KIND = 'evolve-search';
/** Actor kind of the island actors (id `<taskId>-i<k>`). */
export const EVOLVE_ISLAND_KIND = 'evolve-island';

/** What the evolve actors need from their host process. */
export interface EvolveActorDeps {
  /** The journal (production: a `JetStreamJournalStore` on the host's connection). */
  journal: JournalStore;
  /**
   * Runs one evaluation. The driver injects one that uses the node agent's sandbox/evaluator
   * actors; tests inject `createProcessEvaluate` (host processes, test-only).
   */
  evaluate: Evaluate;
  /** Model calls for LLM operators. */
  chat?: ChatFunction;
  /** Operators for a configuration. @default createOperators(config, {chat}) */
  operators?: (config: EvolveConfig) => SearchOperators;
  /** Clock, epoch ms. @default Date.now */
  now?: () => number;
}

/** `run`: start (or resume) the search of a task. Post it with `dedupeId: run:<taskId>`. */
export const EvolveRunMessageSchema = z
  .object({
    /** Must equal the search actor's id. */
    taskId: z.string(),
    /** Search options (ignored on resume: the journal's task record wins). */
    options: EvolveOptionsSchema,
    /** Seed programs. */
    seeds: z.array(ProgramSchema).min(1),
  })
  .strict();

const SearchStateSchema = z
  .object({
    status: z.enum(['idle', 'done']),
    final: FinalRecordSchema.nullable(),
  })
  .strict();

/**
 * The `step` reply of an island: how many nodes it journaled, and what its host's session
 * reports — a model budget refusal (the search should stop), leased evaluators it lost (the
 * owner replaces them before leasing them again), an error evaluations cannot recover from.
 */
export const IslandStepReplySchema = z
  .object({
    nodes: z.number().int().nonnegative(),
    budgetExhausted: z.boolean().optional(),
    lostEvaluators: z.array(z.string()).optional(),
    fatal: z.object({ code: z.string(), message: z.string() }).strict().optional(),
  })
  .strict();

/** The `step` reply of an island (see {@link IslandStepReplySchema}). */
export type IslandStepReply = z.output<typeof IslandStepReplySchema>;

/** What one island step works with, built by the island's host for that step. */
export interface IslandStepSession {
  /** Evaluations of the step (e.g. in sandboxes leased per evaluation, `IslandStep.lease`). */
  evaluate: Evaluate;
  /** Draft/Improve/Crossover/Debug for the step's configuration. */
  operators: SearchOperators;
  /** What the reply reports besides the node count, read once the step has run. */
  report?(): Omit<IslandStepReply, 'nodes'>;
}

/** What the `evolve-island` actor needs from its host. */
export interface IslandActorDeps {
  /** The journal, or a getter for one bound once the host is connected. */
  journal: JournalStore | (() => JournalStore);
  /** Builds a step's evaluate function and operators (from the step's fields). */
  session(
    step: IslandStep,
    ctx: { log: Logger; signal: AbortSignal },
  ): IslandStepSession | Promise<IslandStepSession>;
  /** Clock, epoch ms. @default Date.now */
  now?: () => number;
}

/**
 * The `evolve-island` actor (id `<taskId>-i<k>`): an island's work of a generation (`step`, ask)
 * — operators, evaluations, Debug chains, journaling each attempt and node itself. It keeps no
 * state: the population of record is the journal's, shipped in each step, so an island can be
 * placed on any host and re-placed at any time. Its host decides how a step evaluates and which
 * model it calls ({@link IslandActorDeps.session}): {@link createEvolveActors} binds fixed
 * functions, the `evolve` job driver the sandboxes leased to the step and the step's model.
 */
export function defineIslandActor(deps: IslandActorDeps) {
  const journalOf = (): JournalStore =>
    typeof deps.journal === 'function' ? deps.journal() : deps.journal;
  return defineActor({
    kind: EVOLVE_ISLAND_KIND,
    state: z.object({}).strict(),
    initialState: () => ({}),
    messages: { step: IslandStepSchema },
    handlers: {
      step: async (ctx, msg) => {
        const session = await deps.session(msg, { log: ctx.log, signal: ctx.signal });
        const nodes = await runIslandStep(
          msg,
          {
            evaluate: session.evaluate,
            operators: session.operators,
            journal: journalOf(),
            ...(deps.now ? { now: deps.now } : {}),
            logger: ctx.log,
          },
          ctx.signal,
        );
        const reply: IslandStepReply = { ...(session.report?.() ?? {}), nodes: nodes.length };
        return { reply };
      },
    },
    idleTimeoutMs: 120_000,
  });
}

/**
 * The two evolve actor kinds, bound to the host's dependencies:
 * - `evolve-search` (id = task id) owns the task: posted `run` is one long turn running a
 *   {@link SearchRunner} over the journal — budget, planning, generation closing, stop, final
 *   selection, test grading. After a crash the runtime delivers `run` again and the runner
 *   resumes from the journal. A posted `stop` is taken at the next round (`drainInbox`); `status`
 *   (ask) answers between runs.
 * - `evolve-island` ({@link defineIslandActor}) with the host's `evaluate` and operators.
 */
export function createEvolveActors(deps: EvolveActorDeps): {
  search: ReturnType<typeof defineSearch>;
  island: ReturnType<typeof defineIslandActor>;
} {
  const operatorsFor =
    deps.operators ?? ((config: EvolveConfig) => createOperators(config, { chat: deps.chat }));
  const island = defineIslandActor({
    journal: deps.journal,
    ...(deps.now ? { now: deps.now } : {}),
    session: (step) => ({ evaluate: deps.evaluate, operators: operatorsFor(step.config) }),
  });
  return { search: defineSearch(deps, island), island };
}

function defineSearch(deps: EvolveActorDeps, island: ReturnType<typeof defineIslandActor>) {
  return defineActor({
    kind: EVOLVE_SEARCH_KIND,
    state: SearchStateSchema,
    initialState: () => ({ status: 'idle' as const, final: null }),
    messages: {
      run: EvolveRunMessageSchema,
      stop: z.object({}).strict(),
      status: z.object({}).strict(),
    },
    handlers: {
      run: async (ctx, msg, state) => {
        if (msg.taskId !== ctx.self.id) {
          throw invalidArgument(
            'run.taskId',
            `must equal the search actor id ${ctx.self.id}`,
            msg.taskId,
          );
        }
        if (state.final) return { reply: state.final };
        const runner = new SearchRunner(
          { taskId: msg.taskId, options: msg.options, seeds: msg.seeds },
          {
            journal: deps.journal,
            evaluate: deps.evaluate,
            ...(deps.now ? { now: deps.now } : {}),
            logger: ctx.log,
            stepIsland: async (k, step, signal) => {
              const reply = await ctx.refs
                .ref(island, islandActorId(msg.taskId, k))
                .ask('step', step, { timeoutMs: step.config.islandStepTimeoutMs, signal });
              return IslandStepReplySchema.parse(reply);
            },
            stopRequested: async () =>
              ctx.message.via === 'post' && (await ctx.drainInbox()).some((m) => m.type === 'stop'),
          },
        );
        const final = await runner.run(ctx.signal);
        return { state: { status: 'done' as const, final }, reply: final };
      },
      // Outside a run there is nothing to stop; during one, the run takes it from the inbox.
      stop: () => undefined,
      status: (_ctx, _msg, state) => ({ reply: state }),
    },
    idleTimeoutMs: 60_000,
    maxAttempts: 5,
  });
}
