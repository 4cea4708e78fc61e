import { defineActor, type Logger } from '@troupe/actors';
import { z } from 'zod';
import { type Evaluate } from './evaluation-request';
import { type IslandStep, IslandStepSchema, runIslandStep } from './island-worker';
import { type JournalStore } from './journal-store';
import { type SearchOperators } from './search-operators';

/** Actor kind of the island actors (id `<taskId>-i<k>`). */
export const EVOLVE_ISLAND_KIND = 'evolve-island';

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
 * model it calls ({@link IslandActorDeps.session}): the `evolve` job driver binds the sandboxes
 * leased to the step and the step's model (the package's tests bind fixed functions).
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
