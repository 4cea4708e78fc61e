import { type RefFactory } from '@troupe/actors';
import {
  type BudgetHook,
  type ChatFunction,
  createOperators,
  defineIslandActor,
  type Evaluate,
  type IslandStepReply,
  type JournalStore,
  JetStreamJournalStore,
  type LlmClient,
  llmChatFunction,
  SearchTaskSpecSchema,
} from '@troupe/agents';
import { BudgetLedger, type DriverActorRuntime, LedgerBudgetHook } from '@troupe/coordinator';
import { SANDBOX_KIND } from '@troupe/node-agent';
import { errorCode, invalidArgument, parseWith, TroupeError } from '@troupe/proto';
import { composeBudgetHooks } from './compose-budget-hooks';
import { searchLedgerRoot } from './search-budget-scope';
import { z } from 'zod';
import {
  classifySandboxFailure,
  runSandboxEvaluation,
  sandboxFailure,
} from './run-sandbox-evaluation';

/**
 * What an `evolve` island step carries in `IslandStep.evaluation`: the job (the sandboxes'
 * placement hint), the suite and its files (only the validation phase's are shipped).
 */
export const IslandEvaluationSchema = z
  .object({
    jobId: z.string().min(1),
    suite: SearchTaskSpecSchema,
    files: z.record(z.string(), z.string()),
  })
  .strict();

/** What the budget hook of an island's model calls is built for. */
export interface EvolveBudgetContext {
  jobId: string;
  taskId: string;
  /**
   * The ledger scope the calls reserve in: the search's own scope (`agent:<jobId>/<searchId>`,
   * limit `maxCostUsd`) under the job's.
   */
  budgetScope?: string;
  /** Refs of the island's host (to reach the ledger). */
  refs: RefFactory;
}

/** What {@link createEvolveIslandActor} needs (the driver's options). */
export interface EvolveIslandActorOptions {
  /** A fixed journal (tests); @default a `JetStreamJournalStore` on the host's connection */
  journal?: JournalStore;
  /** Model calls when a step names no model. */
  chat?: ChatFunction;
  /** Models for steps that name one (`IslandStep.llm`). */
  llm?: {
    client: Pick<LlmClient, 'chat'>;
    /** Budget hook of a step's calls. @default a ledger hook on the step's `budgetScope` */
    budgetFor?: (ctx: EvolveBudgetContext) => BudgetHook | undefined;
  };
}

/**
 * The `evolve-island` actor as the `evolve` driver hosts it next to the task actors (on every
 * coordinator): each step evaluates only in the evaluator sandboxes the task leased to it
 * (`step.evaluators`, at most one evaluation per sandbox at a time, with
 * {@link runSandboxEvaluation}), journals its attempts and nodes on its host's connection, and
 * builds its model calls from `step.llm` (model, limits, the search's ledger scope). The reply
 * reports sandboxes lost during the step (the task's pool replaces them), a failure retrying
 * cannot help, and a model budget refusal (the search stops with `cost`).
 */
export function createEvolveIslandActor(
  options: EvolveIslandActorOptions,
  runtime: () => DriverActorRuntime,
): ReturnType<typeof defineIslandActor> {
  let store: JournalStore | undefined;
  const journal = (): JournalStore => {
    if (options.journal) return options.journal;
    const rt = runtime();
    return (store ??= new JetStreamJournalStore({ connection: rt.nc, cluster: rt.cluster }));
  };
  return defineIslandActor({
    journal,
    session: (step) => {
      const rt = runtime();
      const setup = parseWith(IslandEvaluationSchema, step.evaluation, {
        prefix: 'step.evaluation',
      });
      if (!step.evaluators) {
        throw invalidArgument('step.evaluators', 'must lease at least one evaluator sandbox');
      }
      const leased = step.evaluators.length;
      const free = [...step.evaluators];
      const waiting: ((id: string | undefined) => void)[] = [];
      const lost = new Set<string>();
      let fatal: IslandStepReply['fatal'];
      let budgetExhausted = false;
      // Slots not done yet and evaluations running: a free sandbox beyond what the unfinished
      // slots can still use is given back to the task at once (other islands may be waiting).
      let unfinished = step.slots.length;
      let running = 0;
      const giveBack = (): void => {
        if (!step.returnSubject) return;
        while (free.length > 0 && free.length > unfinished - running) {
          const id = free.pop() as string;
          try {
            rt.nc.publish(step.returnSubject, JSON.stringify({ evaluator: id }));
          } catch {
            free.push(id);
            return;
          }
        }
      };
      const release = (id: string | undefined): void => {
        const next = waiting.shift();
        if (next) next(id);
        else if (id !== undefined) free.push(id);
        giveBack();
      };
      const acquire = async (signal: AbortSignal): Promise<string> => {
        const id =
          free.shift() ??
          (await new Promise<string | undefined>((resolve, reject) => {
            const take = (got: string | undefined): void => {
              signal.removeEventListener('abort', onAbort);
              resolve(got);
            };
            const onAbort = (): void => {
              const i = waiting.indexOf(take);
              if (i >= 0) waiting.splice(i, 1);
              reject(signal.reason as Error);
            };
            waiting.push(take);
            signal.addEventListener('abort', onAbort, { once: true });
          }));
        if (id === undefined) throw allLost();
        return id;
      };
      const evaluate: Evaluate = async (request, { signal, onStart }) => {
        if (lost.size >= leased) throw allLost();
        const id = await acquire(signal);
        running++;
        const sandbox = rt.refs.refOf({ kind: SANDBOX_KIND, id }).withHints({ jobId: setup.jobId });
        try {
          onStart?.();
          const result = await runSandboxEvaluation(sandbox, request, setup, signal);
          running--;
          release(id);
          return result;
        } catch (err) {
          running--;
          if (signal.aborted) {
            release(id);
            throw signal.reason as Error;
          }
          const kind = classifySandboxFailure(err);
          if (kind === 'lost') {
            lost.add(id);
            // Waiters get nothing when no sandbox is left: their evaluations fail (UNAVAILABLE).
            if (lost.size >= leased) {
              for (const w of waiting.splice(0)) w(undefined);
            }
          } else {
            if (kind === 'fatal')
              fatal ??= { code: errorCode(err), message: (err as Error).message };
            release(id);
          }
          throw sandboxFailure(err);
        }
      };
      let chat = options.chat;
      if (step.llm) {
        if (!options.llm) {
          throw invalidArgument('step.llm', 'this host has no model client for LLM operators');
        }
        const meta = step.llm.metadata ?? {};
        const budgetContext: EvolveBudgetContext = {
          jobId: String(meta['jobId'] ?? setup.jobId),
          taskId: String(meta['taskId'] ?? step.taskId),
          ...(step.llm.budgetScope ? { budgetScope: step.llm.budgetScope } : {}),
          refs: rt.refs,
        };
        const hooks = [
          step.llm.searchScope
            ? searchBudgetHook(rt.refs, step.llm.searchScope, rt.hostId)
            : undefined,
          options.llm.budgetFor?.(budgetContext),
        ].filter((h): h is BudgetHook => h !== undefined);
        const budget = hooks.length > 1 ? composeBudgetHooks(hooks) : hooks[0];
        chat = llmChatFunction({
          client: options.llm.client,
          model: step.llm.model,
          ...(step.llm.maxTokens !== undefined ? { maxTokens: step.llm.maxTokens } : {}),
          ...(step.llm.temperature !== undefined ? { temperature: step.llm.temperature } : {}),
          ...(budget ? { budget } : {}),
          metadata: meta,
          onBudgetExhausted: () => {
            budgetExhausted = true;
          },
        });
      }
      return {
        evaluate,
        operators: createOperators(step.config, chat ? { chat } : {}),
        slotFinished: () => {
          unfinished--;
          giveBack();
        },
        report: () => ({
          ...(budgetExhausted ? { budgetExhausted } : {}),
          ...(lost.size > 0 ? { lostEvaluators: [...lost] } : {}),
          ...(fatal ? { fatal } : {}),
        }),
      };
    },
  });
}

function allLost(): TroupeError {
  return new TroupeError('UNAVAILABLE', 'every evaluator sandbox leased to the step was lost', {
    retryable: true,
  });
}

/**
 * The hook reserving in the search's own scope (`agent:<jobId>/<searchId>`, limit
 * `maxCostUsd`) of the job's own ledger (root `job:<jobId>`; see `searchBudgetScope`).
 */
function searchBudgetHook(refs: RefFactory, scope: string, hostId: string): BudgetHook {
  return new LedgerBudgetHook({
    ledger: new BudgetLedger(refs, { root: searchLedgerRoot(scope) }),
    scope,
    holder: `evolve-island@${hostId}`,
  });
}
