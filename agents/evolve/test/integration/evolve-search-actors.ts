import { defineActor } from '@troupe/actors';
import { invalidArgument } from '@troupe/proto';
import { z } from 'zod';
import { createOperators } from '../../src/create-operators';
import { type Evaluate } from '../../src/evaluation-request';
import { type EvolveConfig, EvolveOptionsSchema } from '../../src/evolve-config';
import { islandActorId } from '../../src/evolve-names';
import { defineIslandActor, IslandStepReplySchema } from '../../src/island-actor';
import { FinalRecordSchema } from '../../src/journal-record';
import { type JournalStore } from '../../src/journal-store';
import { type ChatFunction } from '../../src/llm-operator';
import { ProgramSchema } from '../../src/program';
import { type SearchOperators } from '../../src/search-operators';
import { SearchRunner } from '../../src/search-runner';

// A test-only search topology: an `evolve-search` actor per task running the SearchRunner in one
// long turn, with islands bound to fixed evaluate/operators. Production searches run as the
// `evolve` job driver's task actor (@troupe/benchmarks) with the same SearchRunner and island
// actor; this one lets the package's tests drive a search over real NATS without the job
// runtime. Loaded from source by jest and (through evolve-fixtures/register-ts.js) by the child
// process of the crash test.

/** Actor kind of the search actors (one per task, id = task id). */
export const EVOLVE_SEARCH_KIND = 'evolve-search';

/** What the test search actors need from their host process. */
export interface EvolveActorDeps {
  /** The journal (a `JetStreamJournalStore` on the host's connection). */
  journal: JournalStore;
  /** Runs one evaluation (tests: `createProcessEvaluate`, host processes). */
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
 * The test search topology, bound to the host's dependencies:
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
