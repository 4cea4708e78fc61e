import { createHash, randomBytes } from 'node:crypto';
import {
  type ChatFunction,
  EVOLVE_ISLAND_KIND,
  type EvolveConfig,
  evolveOptionsFromSpec,
  type FinalRecord,
  InMemoryJournalStore,
  islandActorId,
  type IslandStep,
  IslandStepReplySchema,
  JetStreamJournalStore,
  type JournalRecord,
  type JournalStore,
  parseEvolveConfig,
  SearchRunner,
} from '@troupe/evolve';
import type { BudgetHook, LlmClient, ModelRegistry } from '@troupe/llm';
import {
  checkTaskCount,
  type CollectedTask,
  type JobDriver,
  type JobSpec,
  type TaskContext,
} from '@troupe/coordinator';
import {
  invalidArgument,
  leaseSubject as leaseSubjectFor,
  parseWith,
  TroupeError,
} from '@troupe/proto';
import { createEvolveIslandActor, type EvolveBudgetContext } from './evolve-island-actor';
import {
  DEFAULT_EVALUATOR_SLOTS,
  type EvolveJobConfig,
  EvolveJobConfigSchema,
  type EvolveTask,
  type EvolveTaskInput,
  EvolveTaskInputSchema,
  EvolveTaskListSchema,
} from './evolve-job-spec';
import { renderEvolveReport } from './evolve-report';
import { bestScore, fitnessSeries } from './fitness-series';
import { ProgressJournal } from './progress-journal';
import { EvaluationHealth, type SeedFailure } from './evaluation-health';
import { ObservingJournal } from './observing-journal';
import { programFileOf } from './run-sandbox-evaluation';
import {
  destroySandboxes,
  evaluatorSandboxIds,
  SandboxEvaluatorPool,
} from './sandbox-evaluator-pool';
import { openSearchBudgetScope } from './search-budget-scope';
import { serveEvaluatorLeases } from './evaluator-lease-service';
import { checkSuiteFitsMessages, phaseFiles } from './suite-bundle';
import { EnvironmentBuilder } from '../issue-resolution/environment-builder';
import { GRADER_ENVIRONMENT_WORKDIR, graderEnvironmentOf } from './grader-environment';
import { expandCompetitionTasks, loadTaskBundle } from './competition-tasks';
import { medalOf } from './mle-competition';
import { phaseShipment } from './run-sealed-evaluation';

/** Islands reported per progress event (their points keep the payload under 8 KiB). */
const MAX_PROGRESS_ISLANDS = 64;
/** Options of {@link createEvolveDriver}. */
export interface EvolveDriverOptions {
  /**
   * Where search journals live. A task's journal is keyed by job and task
   * ({@link evolveJournalTaskId}), so a retried attempt, or the same attempt re-executed on
   * another host after a crash, resumes the search where the journal ends.
   * @default a `JetStreamJournalStore` on the host's NATS connection (`TaskContext.nats`);
   *   one in-memory journal per driver when a context has no connection (tests of the driver)
   */
  journal?: JournalStore;
  /** Evaluator slots when a job's `config.evaluatorSlots` is not set. @default 2 */
  evaluatorSlots?: number;
  /**
   * Model calls for LLM operators when a job names no model (`spec.agent`): one fixed chat
   * function. @default none
   */
  chat?: ChatFunction;
  /**
   * Models for LLM operators selected by the job spec: a job with `agent: {model, maxTokens?,
   * temperature?}` runs its tasks with `operators: llm` (unless a task sets `search.operators`)
   * over `client.chat` with that registry model, each call's cost counted against the search's
   * `maxCostUsd`; a call refused for budget (`BUDGET_EXHAUSTED`) stops the search, which then
   * selects its final program. @default none (a job with `agent` is refused)
   */
  llm?: {
    client: Pick<LlmClient, 'chat'>;
    models: Pick<ModelRegistry, 'has' | 'names'>;
    /**
     * Budget hook of a task's calls (e.g. the job's ledger scope), built where the island runs.
     * Calls reserve there and in the search's own scope (limit `maxCostUsd`). @default the
     * client's
     */
    budgetFor?: (ctx: EvolveBudgetContext) => BudgetHook | undefined;
  };
  /** Deadline of creating one evaluator sandbox (a missing image is built). @default 600000 */
  createTimeoutMs?: number;
  /** Base of relative `suite` paths. @default process.cwd() when validating/planning */
  cwd?: string;
}

/** What an `evolve` attempt produced (what `grade` reads). */
export interface EvolveRun {
  /** The search's task id in the journal. */
  searchId: string;
  /** The search's own status (`succeeded`, `no_valid_program`, `no_program`, `test_failed`). */
  status: FinalRecord['status'];
  stopReason: FinalRecord['stopReason'];
  selection: FinalRecord['selection'];
  /** sha256 of the selected program, or null. */
  selectedProgramHash: string | null;
  /** Test-phase score of the selected program, or null. */
  testScore: number | null;
  /** Test-phase status (`ok`, `invalid`, …), or null when not graded. */
  testStatus: string | null;
  /** Test grading error (infrastructure), or null. */
  testError: string | null;
  usage: FinalRecord['usage'];
  /** Generations with a generation record. */
  generations: number;
  /** Evaluator sandbox failures and replacements in this execution. */
  sandboxFailures: number;
  sandboxReplacements: number;
  /** Reference scores of the suite. */
  reference: Record<string, number>;
  /** Candidates that did not score (buggy, unscored, no code) seen by this execution. */
  failedCandidates?: number;
  /** The last of them: status, reason and stderr tail on one line, or null. */
  lastFailure?: string | null;
}

/**
 * The journal task id of a job's search task: `<jobId>-<taskId>` (characters outside
 * `[A-Za-z0-9_-]` become `_`), or a digest when that is longer than 100 characters.
 */
export function evolveJournalTaskId(jobId: string, taskId: string): string {
  const plain = `${jobId}-${taskId}`.replace(/[^A-Za-z0-9_-]/g, '_');
  if (plain.length <= 100) return plain;
  return `ev-${createHash('sha256').update(`${jobId}/${taskId}`).digest('hex').slice(0, 40)}`;
}

function tasksOf(spec: JobSpec): EvolveTask[] {
  checkTaskCount(spec.tasks, 'spec.tasks');
  const tasks = parseWith(EvolveTaskListSchema, spec.tasks, { prefix: 'spec.tasks' });
  const seen = new Map<string, number>();
  tasks.forEach((t, i) => {
    const first = seen.get(t.id);
    if (first !== undefined) {
      throw invalidArgument(
        `spec.tasks[${i}].id`,
        `must be unique (spec.tasks[${first}] has it too)`,
        t.id,
      );
    }
    seen.set(t.id, i);
  });
  return tasks;
}

type AgentConfig = NonNullable<JobSpec['agent']>;

/**
 * The search options of a task: the suite's (its `evaluator.timeoutMs` is the evaluation
 * deadline), with the job's overrides on top; a job that names a model (`spec.agent`) selects LLM
 * operators unless the task sets `search.operators` itself. The suite's `search:` is not spread
 * again here: `evolveOptionsFromSpec` already applies it, and a parsed `search:` carries every
 * schema default, so re-applying it replaced the suite's `evaluator.timeoutMs` with 60000.
 */
export function searchConfigOf(
  input: Pick<EvolveTaskInput, 'suite' | 'task'>,
  agent: AgentConfig | undefined,
): EvolveConfig {
  return parseEvolveConfig(
    evolveOptionsFromSpec(input.suite, {
      ...(agent && input.task.search?.operators === undefined ? { operators: 'llm' } : {}),
      ...(input.task.search ?? {}),
      limits: { ...input.suite.limits, ...(input.task.limits ?? {}) },
    }),
  );
}

/**
 * The `evolve` driver: each task is an evolutionary program search over a suite
 * (`benchmarks/suites/<name>`, see docs/benchmarks/evolve.md), run by the evolve package's
 * {@link SearchRunner} in the task's turn with a JetStream journal keyed by job and task, so a
 * retried or re-executed attempt resumes (on any host). Each island step is an ask to the
 * island's `evolve-island` actor, which the driver contributes ({@link JobDriver.actors}) and the
 * coordinators host; the step evaluates in node-agent sandboxes leased from the task's
 * {@link SandboxEvaluatorPool}, so `evaluatorSlots` caps the task's evaluations across hosts. The
 * selected program is graded once on the hidden test phase. The task passes when the search selected a validated program and its test grading
 * succeeded (or no test phase was asked for); its score is the test score (the validation score
 * without a test phase).
 *
 * ```yaml
 * kind: evolve
 * concurrency: 1
 * taskTimeoutMs: 900000
 * config: {evaluatorSlots: 2}
 * tasks:
 *   - {id: or3, suite: benchmarks/suites/binpacking-or3, limits: {maxEvaluations: 120}}
 * ```
 *
 * Artifacts per task: `program.<ext>` (the selected program), `journal-summary.json`,
 * `report.html` (fitness per island over evaluations and time, with the suite's reference
 * scores) and, with `config.saveJournal`, `journal.jsonl`.
 */
export function createEvolveDriver(
  options: EvolveDriverOptions = {},
): JobDriver<EvolveTaskInput, EvolveRun> {
  // One store per connection: the store caches its stream check.
  const stores = new WeakMap<object, JournalStore>();
  let memory: JournalStore | undefined;
  const journalOf = (ctx: TaskContext): JournalStore => {
    if (options.journal) return options.journal;
    if (!ctx.nats) return (memory ??= new InMemoryJournalStore());
    let store = stores.get(ctx.nats.connection);
    if (!store) {
      store = new JetStreamJournalStore({
        connection: ctx.nats.connection,
        cluster: ctx.nats.cluster,
        ...(ctx.nats.replicas !== undefined ? { replicas: ctx.nats.replicas } : {}),
      });
      stores.set(ctx.nats.connection, store);
    }
    return store;
  };
  const pools = new Map<string, SandboxEvaluatorPool>();
  // Made on first use, once: concurrent tasks of one recipe share its build.
  let environments: Promise<EnvironmentBuilder> | undefined;
  /** The image of a suite's grader environment, built on this host on first use (cached). */
  const graderImageOf = async (ctx: TaskContext, input: EvolveTaskInput) => {
    const env = graderEnvironmentOf(input.suite, 'input.suite');
    if (!env) return undefined;
    environments ??= EnvironmentBuilder.onLocalDocker(ctx.log);
    const built = await (
      await environments
    ).ensure(env, GRADER_ENVIRONMENT_WORKDIR, {
      signal: ctx.signal,
      field: 'task.yaml.evaluator.environment',
    });
    ctx.progress({
      message: built.built
        ? `${input.suite.name}: grader environment ${built.ref} built in ${built.ms} ms`
        : `${input.suite.name}: grader environment ${built.ref} (cached)`,
    });
    return built.ref;
  };
  const slotsOf = (config: EvolveJobConfig): number =>
    config.evaluatorSlots ?? options.evaluatorSlots ?? DEFAULT_EVALUATOR_SLOTS;

  const checkOperators = (
    input: Pick<EvolveTaskInput, 'suite' | 'task'>,
    agent: AgentConfig | undefined,
    field: string,
  ): void => {
    const config = searchConfigOf(input, agent);
    if (config.operators === 'llm' && !options.chat && !(agent && options.llm)) {
      throw invalidArgument(
        field,
        'operators: llm needs a model, and this driver was registered without one (use builtin)',
      );
    }
  };

  return {
    name: 'evolve',

    actors: (runtime) => [
      createEvolveIslandActor(
        {
          ...(options.journal ? { journal: options.journal } : {}),
          ...(options.chat ? { chat: options.chat } : {}),
          ...(options.llm
            ? {
                llm: {
                  client: options.llm.client,
                  ...(options.llm.budgetFor ? { budgetFor: options.llm.budgetFor } : {}),
                },
              }
            : {}),
        },
        runtime,
      ),
    ],
    description:
      'evolutionary program search over a suite (task.yaml); evaluations in sandboxes, score = test score',

    async validate(spec) {
      const config = parseWith(EvolveJobConfigSchema, spec.config, { prefix: 'spec.config' });
      void config;
      if (spec.agent !== undefined) {
        if (!options.llm) {
          throw invalidArgument(
            'spec.agent',
            'this evolve driver was registered without a model registry: remove agent (built-in operators)',
          );
        }
        if (!options.llm.models.has(spec.agent.model)) {
          throw invalidArgument(
            'spec.agent.model',
            `must name a model of the registry (${options.llm.models.names().join(', ') || 'none'})`,
            spec.agent.model,
          );
        }
      }
      const tasks = await expandCompetitionTasks(tasksOf(spec), options.cwd);
      for (const [i, task] of tasks.entries()) {
        const bundle = await loadTaskBundle(task.suite, `spec.tasks[${i}].suite`, options.cwd);
        checkSuiteFitsMessages(bundle, `spec.tasks[${i}].suite`);
        graderEnvironmentOf(bundle.spec, `spec.tasks[${i}].suite`);
        try {
          checkOperators(
            { suite: bundle.spec, task },
            spec.agent,
            `spec.tasks[${i}].search.operators`,
          );
        } catch (err) {
          if ((err as { details?: { field?: string } }).details?.field?.startsWith('spec.')) {
            throw err;
          }
          throw invalidArgument(`spec.tasks[${i}]`, (err as Error).message);
        }
      }
    },

    async plan(spec) {
      const config = parseWith(EvolveJobConfigSchema, spec.config, { prefix: 'spec.config' });
      const planned = [];
      const tasks = await expandCompetitionTasks(tasksOf(spec), options.cwd);
      for (const [i, task] of tasks.entries()) {
        const bundle = await loadTaskBundle(task.suite, `spec.tasks[${i}].suite`, options.cwd);
        checkSuiteFitsMessages(bundle, `spec.tasks[${i}].suite`);
        graderEnvironmentOf(bundle.spec, `spec.tasks[${i}].suite`);
        const input: EvolveTaskInput = {
          task,
          config,
          suiteDir: bundle.suiteDir,
          suite: bundle.spec,
          seeds: bundle.seeds,
          files: bundle.files,
        };
        planned.push({ id: task.id, input });
      }
      return planned;
    },

    async runTask(ctx, raw) {
      const input = parseWith(EvolveTaskInputSchema, raw, { prefix: 'input' });
      const slots = slotsOf(input.config);
      const searchConfig = searchConfigOf(input, ctx.spec.agent);
      // A crash interrupted an earlier execution of this attempt: its sandboxes may still live.
      for (const stale of ctx.staleResourceIds) {
        const sealed = input.suite.evaluator.sealed !== undefined;
        const ids = evaluatorSandboxIds(stale, slots, sealed);
        await destroySandboxes(ctx.refs, ctx.jobId, ids, ctx.log);
      }
      const image = await graderImageOf(ctx, input);
      const pool = new SandboxEvaluatorPool({
        ...(image ? { image } : {}),
        refs: ctx.refs,
        jobId: ctx.jobId,
        resourceId: ctx.resourceId,
        slots,
        suite: input.suite,
        files: input.files,
        cpus: input.config.evaluatorCpus,
        ...(options.createTimeoutMs ? { createTimeoutMs: options.createTimeoutMs } : {}),
        log: ctx.log,
      });
      pools.set(ctx.resourceId, pool);
      const searchId = evolveJournalTaskId(ctx.jobId, ctx.taskId);
      const journal = journalOf(ctx);
      const reference = input.suite.reference;
      const refText = Object.entries(reference)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
      // What a suite's author must see: failed candidates with the grader's stderr, seeds that fail.
      const health = new EvaluationHealth();
      const watched = new ObservingJournal(journal, (r) => health.observe(r));
      const observed = new ProgressJournal(watched, searchConfig.direction, (p) => {
        const best = p.bestScore === null ? 'none yet' : String(p.bestScore);
        const last = health.lastFailure;
        ctx.progress({
          step: p.generation + 1,
          message:
            `${input.suite.name}: generation ${p.generation} closed, ${p.evaluations}/` +
            `${searchConfig.limits.maxEvaluations} evaluations, best validation ${best}` +
            (refText ? ` (reference: ${refText})` : '') +
            (last ? `; ${health.failures} failed, last: ${last.text}` : ''),
        });
        if (last) ctx.log.debug({ failure: last }, 'evolve candidates failed');
        // The curves' points, live: one TASK_PROGRESS per closed generation (bounded by
        // maxGenerations), drawn by the dashboard's evolution page while the search runs.
        ctx.progress({
          step: p.generation + 1,
          data: {
            evolve: {
              generation: p.generation,
              evaluations: p.evaluations,
              bestScore: p.bestScore,
              islands: p.islands.slice(0, MAX_PROGRESS_ISLANDS),
            },
          },
        });
      });
      let budgetStop = false;
      const agent = ctx.spec.agent;
      let llm: IslandStep['llm'];
      if (agent && options.llm && searchConfig.operators === 'llm') {
        // The search's own cost limit, hard across its islands wherever they run: every call
        // reserves its worst case in this scope before it is sent.
        let searchScope: string | undefined;
        try {
          searchScope = await openSearchBudgetScope(
            ctx.refs,
            ctx.jobId,
            searchId,
            searchConfig.limits.maxCostUsd,
            ctx.signal,
          );
        } catch (err) {
          ctx.log.warn({ err }, 'no ledger scope for the search: maxCostUsd is checked per round');
        }
        llm = {
          model: agent.model,
          ...(agent.maxTokens !== undefined ? { maxTokens: agent.maxTokens } : {}),
          ...(agent.temperature !== undefined ? { temperature: agent.temperature } : {}),
          ...(ctx.budgetScope ? { budgetScope: ctx.budgetScope } : {}),
          ...(searchScope ? { searchScope } : {}),
          metadata: { jobId: ctx.jobId, taskId: ctx.taskId, attempt: ctx.attempt },
        };
      }
      // What each island step ships to evaluate: the suite and its validation files only (the
      // test phase stays on the task's side); a sealed suite's candidate folder too.
      const evaluation = {
        jobId: ctx.jobId,
        suite: input.suite,
        files: input.suite.evaluator.sealed
          ? phaseShipment(input.suite, input.files, 'validation')
          : phaseFiles(input.suite, input.files, 'validation'),
      };
      // Stop early enough that the generation in progress, final selection and the test grading
      // fit before the task's deadline (a timed-out task is graded on whatever exists).
      const evalMs = searchConfig.evaluationTimeoutMs;
      const reserveMs = Math.min(
        (searchConfig.testPhase ? 3 : 1) * evalMs + 10_000,
        Math.max(0, (ctx.deadlineUnixMs - Date.now()) / 2),
      );
      const stopAt = ctx.deadlineUnixMs - reserveMs;
      // Island evaluations lease the pool's sandboxes one evaluation at a time on this subject,
      // served by this process for the whole search (not by the task actor's turn).
      if (!ctx.nats) {
        throw new TroupeError(
          'UNAVAILABLE',
          "the evolve driver needs the task host's NATS connection to lease evaluators",
        );
      }
      const leaseSubject = leaseSubjectFor(ctx.nats.cluster, randomBytes(12).toString('hex'));
      const leases = serveEvaluatorLeases(ctx.nats.connection, leaseSubject, pool, ctx.log);
      const runner = new SearchRunner(
        { taskId: searchId, options: searchConfig, seeds: input.seeds },
        {
          journal: observed,
          evaluate: pool.evaluate,
          logger: ctx.log,
          // Each island step is an ask to the island's actor (hosted by the coordinators), with
          // evaluator sandboxes leased from the task's pool: the slot cap holds across hosts.
          stepIsland: async (k, step, signal) => {
            // The step's evaluations acquire sandboxes one at a time on the lease subject; when
            // the step ends (reply, failure, timeout) every sandbox still leased to it returns.
            const stepId = `${k}-${randomBytes(6).toString('hex')}`;
            pool.openStep(stepId);
            let reply;
            try {
              reply = IslandStepReplySchema.parse(
                await ctx.refs
                  .refOf({ kind: EVOLVE_ISLAND_KIND, id: islandActorId(searchId, k) })
                  .ask(
                    'step',
                    {
                      ...step,
                      lease: { subject: leaseSubject, stepId },
                      evaluation,
                      ...(llm ? { llm } : {}),
                    } satisfies IslandStep,
                    { timeoutMs: step.config.islandStepTimeoutMs, signal },
                  ),
              );
            } finally {
              pool.endStep(
                stepId,
                reply
                  ? {
                      ...(reply.lostEvaluators ? { lost: reply.lostEvaluators } : {}),
                      ...(reply.fatal ? { fatal: reply.fatal } : {}),
                    }
                  : {},
              );
            }
            if (reply.budgetExhausted && !budgetStop) {
              budgetStop = true;
              ctx.log.warn({ island: k }, 'model budget exhausted: the search stops');
            }
            return reply;
          },
          stopRequested: () =>
            budgetStop
              ? 'cost'
              : pool.fatal !== undefined ||
                health.seedFailure() !== undefined ||
                Date.now() >= stopAt,
        },
      );
      ctx.progress({
        message:
          `${input.suite.name}: search ${searchId} starting (${slots} evaluator slots, ` +
          `${searchConfig.limits.maxEvaluations} evaluations max, ${searchConfig.islands} islands)`,
      });
      let final;
      try {
        final = await runner.run(ctx.signal);
      } finally {
        leases.unsubscribe();
      }
      if (pool.fatal !== undefined && final.selection.source !== 'best_validation') {
        throw pool.fatal;
      }
      const records = (await journal.read(searchId, 0, { signal: ctx.signal })).records;
      for (const r of records) health.observe(r);
      const run: EvolveRun = {
        ...runOf(searchId, final, records, pool, reference),
        failedCandidates: health.failures,
        lastFailure: health.lastFailure?.text ?? null,
      };
      await storeArtifacts(ctx, input, run, records);
      const seedFailure = health.seedFailure();
      if (seedFailure) throw seedFailureError(input, seedFailure);
      ctx.progress({
        message:
          `${input.suite.name}: ${run.status}, validation ${String(run.selection.score)}, ` +
          `test ${String(run.testScore)} after ${run.usage.evaluations} evaluations ` +
          `(${run.stopReason})` +
          (refText ? `; reference: ${refText}` : ''),
      });
      return run;
    },

    async grade(ctx, raw, run) {
      if (!run) {
        // Timed out (or failed) before the final record: report how far the journal got.
        const input = parseWith(EvolveTaskInputSchema, raw, { prefix: 'input' });
        const searchId = evolveJournalTaskId(ctx.jobId, ctx.taskId);
        const journal = journalOf(ctx);
        const records = (await journal.read(searchId, 0, { signal: ctx.signal })).records;
        const series = fitnessSeries(records);
        return {
          passed: false,
          stopReason: 'timeout',
          details: {
            searchId,
            validationScore: series ? bestScore(series.evaluations, series.direction) : null,
            generations: series?.generations.length ?? 0,
            evaluations: series?.evaluations.length ?? 0,
            suite: input.suite.name,
          },
        };
      }
      // Without a test phase (`testPhase: false`) the search's own status decides and the score
      // is the selected program's validation score.
      const graded = run.testStatus !== null || run.testError !== null;
      const passed = run.status === 'succeeded' && (!graded || run.testScore !== null);
      const score = graded ? run.testScore : run.selection.score;
      return {
        passed,
        score: score ?? 0,
        stopReason: run.stopReason,
        costUsd: run.usage.costUsd,
        details: {
          status: run.status,
          validationScore: run.selection.score,
          testScore: run.testScore,
          testStatus: run.testStatus,
          ...medalDetails(raw, run, score),
          costUsd: run.usage.costUsd,
          ...(run.testError ? { testError: run.testError } : {}),
          evaluations: run.usage.evaluations,
          generations: run.generations,
          stopReason: run.stopReason,
          selectedProgramHash: run.selectedProgramHash,
          selectionSource: run.selection.source,
          random_no_valid: run.selection.source === 'random_no_valid',
          queueMs: Math.round(run.usage.queueMs),
          chargedMs: Math.round(run.usage.chargedMs),
          lostAttempts: run.usage.lostAttempts,
          sandboxFailures: run.sandboxFailures,
          sandboxReplacements: run.sandboxReplacements,
          reference: run.reference,
          searchId: run.searchId,
          ...(run.failedCandidates !== undefined ? { failedCandidates: run.failedCandidates } : {}),
          ...(run.lastFailure ? { lastFailure: run.lastFailure } : {}),
        },
      };
    },

    async cleanup(ctx, raw) {
      const input = parseWith(EvolveTaskInputSchema, raw, { prefix: 'input' });
      const slots = slotsOf(input.config);
      const pool = pools.get(ctx.resourceId);
      pools.delete(ctx.resourceId);
      // This process ran the execution: destroy what it created. Otherwise (another host, a
      // restart) destroy every id the execution could have used.
      const sealed = input.suite.evaluator.sealed !== undefined;
      const ids = pool ? [...pool.created] : evaluatorSandboxIds(ctx.resourceId, slots, sealed);
      for (const stale of ctx.staleResourceIds) {
        ids.push(...evaluatorSandboxIds(stale, slots, sealed));
      }
      await destroySandboxes(ctx.refs, ctx.jobId, ids, ctx.log, ctx.signal);
    },

    collect(_spec, tasks: readonly CollectedTask[]) {
      const scores: Record<string, number> = {};
      const validation: Record<string, number> = {};
      let evaluations = 0;
      for (const t of tasks) {
        if (t.score !== undefined) scores[t.taskId] = t.score;
        const v = t.details?.['validationScore'];
        if (typeof v === 'number') validation[t.taskId] = v;
        const e = t.details?.['evaluations'];
        if (typeof e === 'number') evaluations += e;
      }
      return {
        testScores: scores,
        validationScores: validation,
        evaluations,
        ...competitionResults(tasks),
      };
    },
  };
}

/**
 * `medal` (where `score` lands among the suite's `gold`/`silver`/`bronze`/`median` reference
 * scores: an MLE competition's thresholds), when the suite has such a table.
 */
function medalDetails(raw: unknown, run: EvolveRun, score: number | null): { medal?: string } {
  const direction = (raw as Partial<EvolveTaskInput> | undefined)?.suite?.direction;
  if (direction === undefined) return {};
  const medal = medalOf(score, run.reference, direction);
  return medal ? { medal } : {};
}

/**
 * Per competition (tasks whose details hold a `medal`): score, medal, evaluations and cost, and
 * the medal counts — the results table of a suite of competitions.
 */
function competitionResults(tasks: readonly CollectedTask[]): {
  competitions?: Record<
    string,
    { score: number | null; medal: string; evaluations: number; costUsd: number }
  >;
  medals?: Record<string, number>;
} {
  const competitions: Record<
    string,
    { score: number | null; medal: string; evaluations: number; costUsd: number }
  > = {};
  const medals: Record<string, number> = {};
  for (const t of tasks) {
    const medal = t.details?.['medal'];
    if (typeof medal !== 'string') continue;
    const evaluations = t.details?.['evaluations'];
    const cost = t.details?.['costUsd'];
    competitions[t.taskId] = {
      score: t.score ?? null,
      medal,
      evaluations: typeof evaluations === 'number' ? evaluations : 0,
      costUsd: typeof cost === 'number' ? cost : 0,
    };
    medals[medal] = (medals[medal] ?? 0) + 1;
  }
  return Object.keys(competitions).length > 0 ? { competitions, medals } : {};
}

function runOf(
  searchId: string,
  final: FinalRecord,
  records: readonly JournalRecord[],
  pool: SandboxEvaluatorPool,
  reference: Record<string, number>,
): EvolveRun {
  const selected = records.find(
    (r): r is Extract<JournalRecord, { type: 'node' }> =>
      r.type === 'node' && r.attemptId === final.selection.nodeId,
  );
  const testResult = final.test?.result ?? null;
  return {
    searchId,
    status: final.status,
    stopReason: final.stopReason,
    selection: final.selection,
    selectedProgramHash: selected?.codeHash ?? null,
    testScore: testResult?.status === 'ok' ? testResult.score : null,
    testStatus: testResult?.status ?? null,
    testError: final.test?.error ?? null,
    usage: final.usage,
    generations: records.filter((r) => r.type === 'generation').length,
    sandboxFailures: pool.failures,
    sandboxReplacements: pool.replacements,
    reference,
  };
}

async function storeArtifacts(
  ctx: TaskContext,
  input: EvolveTaskInput,
  run: EvolveRun,
  records: readonly JournalRecord[],
): Promise<void> {
  const opts = { signal: ctx.signal };
  const selected = records.find(
    (r): r is Extract<JournalRecord, { type: 'node' }> =>
      r.type === 'node' && r.attemptId === run.selection.nodeId,
  );
  if (selected) {
    await ctx.artifacts.put(programFileOf(selected.program.language), selected.program.source, {
      contentType: 'text/plain; charset=utf-8',
      ...opts,
    });
  }
  const series = fitnessSeries(records);
  const summary = {
    suite: input.suite.name,
    suiteDir: input.suiteDir,
    ...run,
    generations: series?.generations ?? [],
  };
  await ctx.artifacts.put('journal-summary.json', `${JSON.stringify(summary, null, 2)}\n`, {
    contentType: 'application/json',
    ...opts,
  });
  if (series) {
    const html = renderEvolveReport({
      title: `${input.suite.name} — job ${ctx.jobId}, task ${ctx.taskId}`,
      series,
      reference: input.suite.reference,
      summary: {
        status: run.status,
        'validation score (selected)': run.selection.score,
        'test score (selected)': run.testScore,
        ...(medalOf(run.testScore, input.suite.reference, input.suite.direction)
          ? { medal: medalOf(run.testScore, input.suite.reference, input.suite.direction) }
          : {}),
        'cost (USD)': run.usage.costUsd,
        'selection source': run.selection.source,
        'selected program sha256': run.selectedProgramHash,
        evaluations: run.usage.evaluations,
        generations: run.generations,
        'stop reason': run.stopReason,
        'charged time (s)': Math.round(run.usage.chargedMs) / 1000,
        'queue time (s)': Math.round(run.usage.queueMs) / 1000,
        direction: series.direction,
        'failed candidates': run.failedCandidates ?? null,
        'last failure (status, reason, stderr)': run.lastFailure ?? null,
      },
    });
    await ctx.artifacts.put('report.html', html, {
      contentType: 'text/html; charset=utf-8',
      ...opts,
    });
  }
  if (input.config.saveJournal) {
    await ctx.artifacts.put(
      'journal.jsonl',
      records.map((r) => JSON.stringify(r)).join('\n') + '\n',
      { contentType: 'application/x-ndjson', ...opts },
    );
  }
}

/**
 * The task's failure when a seed program did not score: the search cannot start from it (a
 * grader that crashes on every candidate ends here too, with its stderr in the reason).
 */
function seedFailureError(input: EvolveTaskInput, seed: SeedFailure): TroupeError {
  const file = input.suite.seeds[seed.index] ?? `seeds[${seed.index}]`;
  const how = seed.failure.outcome === 'unscored' ? 'the grader failed on it' : 'it did not score';
  // The headline comes first: a task's error is shown cut to 200 characters.
  return invalidArgument(
    `task.yaml.seeds[${seed.index}]`,
    `seed ${file} must score, but ${how}: ${seed.failure.headline} — ${seed.failure.text} ` +
      '(`troupe validate <suite>` runs the seed once)',
  );
}
