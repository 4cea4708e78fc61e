import { type RefFactory } from '@troupe/actors';
import {
  type ChatFunction,
  createOperators,
  defineIslandActor,
  type Evaluate,
  type IslandStepReply,
  type JournalStore,
  JetStreamJournalStore,
  llmChatFunction,
  SearchTaskSpecSchema,
} from '@troupe/evolve';
import type { BudgetHook, LlmClient } from '@troupe/llm';
import { BudgetLedger, type DriverActorRuntime, LedgerBudgetHook } from '@troupe/coordinator';
import { SANDBOX_KIND } from '@troupe/node-agent';
import { randomBytes } from 'node:crypto';
import { type ErrorCode, errorCode, invalidArgument, parseWith, TroupeError } from '@troupe/proto';
import { EvaluatorGrantSchema, type EvaluatorLeaseMessage } from './evaluator-lease-service';
import { composeBudgetHooks } from './compose-budget-hooks';
import { searchLedgerRoot } from './search-budget-scope';
import { z } from 'zod';
import {
  classifySandboxFailure,
  runSandboxEvaluation,
  sandboxFailure,
} from './run-sandbox-evaluation';
import { graderSandboxId } from './run-sealed-evaluation';

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
 * coordinator): each evaluation of a step leases one evaluator sandbox from the task on the
 * step's lease subject (`step.lease`; the task grants them FIFO across islands, at most
 * `evaluatorSlots` at once), evaluates there with {@link runSandboxEvaluation} and gives it back, journals its attempts and nodes on its host's connection, and
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
    return (store ??= new JetStreamJournalStore({
      connection: rt.nc,
      cluster: rt.cluster,
      replicas: rt.replicas,
    }));
  };
  return defineIslandActor({
    journal,
    session: (step, { log }) => {
      const rt = runtime();
      const setup = parseWith(IslandEvaluationSchema, step.evaluation, {
        prefix: 'step.evaluation',
      });
      if (!step.lease) {
        throw invalidArgument('step.lease', 'must name the lease subject of the task evaluators');
      }
      const { subject, stepId } = step.lease;
      const lost = new Set<string>();
      let fatal: IslandStepReply['fatal'];
      let budgetExhausted = false;
      const publish = (message: EvaluatorLeaseMessage): void => {
        try {
          rt.nc.publish(subject, JSON.stringify(message));
        } catch (err) {
          // Best effort: the task takes every lease of the step back when the step ends.
          log.warn({ err, subject }, 'could not publish to the evaluator lease subject');
        }
      };
      const giveBack = (
        evaluator: string,
        extra: { lost?: true; fatal?: IslandStepReply['fatal'] } = {},
      ): void => {
        publish({ op: 'release', stepId, evaluator, ...extra });
      };
      // One sandbox per evaluation, from the task's FIFO queue (the wait is the attempt's
      // queueMs); the island's signal cancels a queued request.
      const acquire = async (attemptId: string, signal: AbortSignal): Promise<string> => {
        signal.throwIfAborted();
        const requestId = randomBytes(8).toString('hex');
        const pending = rt.nc.request(
          subject,
          JSON.stringify({
            op: 'acquire',
            stepId,
            attemptId,
            requestId,
          } satisfies EvaluatorLeaseMessage),
          { timeout: step.config.islandStepTimeoutMs },
        );
        return await new Promise<string>((resolve, reject) => {
          const onAbort = (): void => {
            publish({ op: 'cancel', stepId, requestId });
            reject(signal.reason as Error);
          };
          signal.addEventListener('abort', onAbort, { once: true });
          pending.then(
            (msg) => {
              signal.removeEventListener('abort', onAbort);
              let raw: unknown;
              try {
                raw = JSON.parse(msg.string());
              } catch {
                raw = undefined;
              }
              const grant = EvaluatorGrantSchema.safeParse(raw);
              if (signal.aborted) {
                if (grant.success && 'evaluator' in grant.data) giveBack(grant.data.evaluator);
                return;
              }
              if (!grant.success) {
                reject(
                  new TroupeError('UNAVAILABLE', 'malformed evaluator lease reply', {
                    retryable: true,
                  }),
                );
              } else if ('error' in grant.data) {
                const { code, message } = grant.data.error;
                reject(
                  new TroupeError(code as ErrorCode, `no evaluator lease: ${message}`, {
                    retryable: code !== 'INVALID_ARGUMENT',
                  }),
                );
              } else {
                resolve(grant.data.evaluator);
              }
            },
            (err: unknown) => {
              signal.removeEventListener('abort', onAbort);
              if (signal.aborted) return;
              reject(
                new TroupeError('UNAVAILABLE', `no evaluator lease: ${(err as Error).message}`, {
                  cause: err,
                  retryable: true,
                }),
              );
            },
          );
        });
      };
      const evaluate: Evaluate = async (request, { signal, onStart }) => {
        const id = await acquire(request.attemptId, signal);
        const sandbox = rt.refs.refOf({ kind: SANDBOX_KIND, id }).withHints({ jobId: setup.jobId });
        try {
          onStart?.();
          const grader = rt.refs
            .refOf({ kind: SANDBOX_KIND, id: graderSandboxId(id) })
            .withHints({ jobId: setup.jobId });
          const result = await runSandboxEvaluation(sandbox, request, setup, signal, grader);
          giveBack(id);
          return result;
        } catch (err) {
          if (signal.aborted) {
            giveBack(id);
            throw signal.reason as Error;
          }
          const kind = classifySandboxFailure(err);
          if (kind === 'lost') {
            lost.add(id);
            giveBack(id, { lost: true });
          } else if (kind === 'fatal') {
            fatal ??= { code: errorCode(err), message: (err as Error).message };
            giveBack(id, { fatal });
          } else {
            giveBack(id);
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
        report: () => ({
          ...(budgetExhausted ? { budgetExhausted } : {}),
          ...(lost.size > 0 ? { lostEvaluators: [...lost] } : {}),
          ...(fatal ? { fatal } : {}),
        }),
      };
    },
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
