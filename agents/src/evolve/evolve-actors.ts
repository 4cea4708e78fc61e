import { defineActor } from '@troupe/actors';
import { invalidArgument } from '@troupe/proto';
import { z } from 'zod';
import { createOperators } from './create-operators';
import { type Evaluate } from './evaluation-request';
import { type EvolveConfig, EvolveOptionsSchema } from './evolve-config';
import { islandActorId } from './evolve-names';
import { IslandStepSchema, runIslandStep } from './island-worker';
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

/** The `step` reply of an island: how many nodes it journaled. */
export const IslandStepReplySchema = z.object({ nodes: z.number().int().nonnegative() }).strict();

/**
 * The two evolve actor kinds, bound to the host's dependencies:
 * - `evolve-search` (id = task id) owns the task: posted `run` is one long turn running a
 *   {@link SearchRunner} over the journal — budget, planning, generation closing, stop, final
 *   selection, test grading. After a crash the runtime delivers `run` again and the runner
 *   resumes from the journal. A posted `stop` is taken at the next round (`drainInbox`); `status`
 *   (ask) answers between runs.
 * - `evolve-island` (id `<taskId>-i<k>`) does an island's work of a generation (`step`, ask):
 *   operators, evaluation requests, Debug chains, journaling each attempt and node. It keeps no
 *   state of its own: the population of record is the journal's, shipped in each step, so an
 *   island can be re-placed on any host at any time.
 */
export function createEvolveActors(deps: EvolveActorDeps): {
  search: ReturnType<typeof defineSearch>;
  island: ReturnType<typeof defineIsland>;
} {
  const island = defineIsland(deps);
  return { search: defineSearch(deps, island), island };
}

function defineIsland(deps: EvolveActorDeps) {
  const operatorsFor =
    deps.operators ?? ((config: EvolveConfig) => createOperators(config, { chat: deps.chat }));
  return defineActor({
    kind: EVOLVE_ISLAND_KIND,
    state: z.object({}).strict(),
    initialState: () => ({}),
    messages: { step: IslandStepSchema },
    handlers: {
      step: async (ctx, msg) => {
        const nodes = await runIslandStep(
          msg,
          {
            evaluate: deps.evaluate,
            operators: operatorsFor(msg.config),
            journal: deps.journal,
            ...(deps.now ? { now: deps.now } : {}),
            logger: ctx.log,
          },
          ctx.signal,
        );
        return { reply: { nodes: nodes.length } };
      },
    },
    idleTimeoutMs: 120_000,
  });
}

function defineSearch(deps: EvolveActorDeps, island: ReturnType<typeof defineIsland>) {
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
