import { type JobDriver, type JobSpec, type TaskContext } from '@troupe/coordinator';
import { TrajectoryStore } from '@troupe/agents';
import type { ModelRegistry } from '@troupe/llm';
import { ErrorCode, invalidArgument, isTroupeError, parseWith, TroupeError } from '@troupe/proto';
import {
  type BankCommit,
  BankStore,
  type BankVersion,
  MemoryBank,
  type Phase1Result,
  type Phase2Result,
  type Phase3Result,
  rsiBank,
  runPhase2,
  runPhase3,
  runTarget,
  StudyRecords,
} from '@troupe/rsi';
import { z } from 'zod';
import { targetLog } from './rsi-cycles';
import { readPhase1Waves, RsiPhase1ConfigSchema, runRsiPhase1 } from './rsi-phase1';
import { renderRsiReport } from './rsi-report';
import { desktopStudy, type RsiDesktopModels } from './rsi-desktop';
import { type RsiDesktopSuite } from './rsi-desktop-suite';
import { type RsiStudyEnvironment, shellStudy } from './rsi-study';
import { loadRsiSuite, type RsiSuite, RsiSuiteRefSchema } from './rsi-suite';

const MODEL = z.string().min(1, 'must name a model').max(128);

/** `spec.config` of an `rsi` job. */
export const RsiConfigSchema = z.strictObject({
  /** Registry names of each role's model. */
  models: z.strictObject({ actor: MODEL, verifier: MODEL, curriculum: MODEL }),
  /** What ends a passed target: the Verifier's PASS, or the Curriculum's review of it. */
  stopPolicy: z.enum(['verifier_pass', 'curriculum_review']).default('verifier_pass'),
  /** Learn after a PASS too (a grounded FAIL is always learned from). @default true */
  learnOnPass: z.boolean().default(true),
  /** Target attempts per development task (the last is final). @default 4 */
  maxAttempts: z.int().min(1).max(20).default(4),
  /** Practice projects per Curriculum search. @default 6 */
  maxProjects: z.int().min(0).max(50).default(6),
  /** Refused publications per search before it counts as STALLED. @default 3 */
  maxRefusedPublications: z.int().min(0).max(20).default(3),
  /** Phase 1's practice waves (`maxWaves: 0` skips them). @default every field's default */
  phase1: RsiPhase1ConfigSchema.default(RsiPhase1ConfigSchema.parse({})),
});
/** Validated `spec.config`. */
export type RsiConfig = z.output<typeof RsiConfigSchema>;

/** Options of {@link createRsiDriver}. */
export interface RsiDriverOptions {
  /** The cluster's models: every `spec.config.models.*` must name one. */
  models?: Pick<ModelRegistry, 'has' | 'names'>;
  /** Where suite paths are resolved. @default the working directory */
  baseDir?: string;
  /**
   * The cluster's LLM client for suites with `environment: desktop`, whose roles call their
   * models from the driver's process. @default none: desktop suites are refused
   */
  llm?: RsiDesktopModels;
}

/** What a study's run hands to the grader. */
export interface RsiRun {
  bankId: string;
  /** The seed version (the bank Phase 1 started from). */
  seed?: BankVersion;
  phase1: Phase1Result;
  phase2: Phase2Result;
  phase3: Phase3Result;
  links: Record<string, string>;
}

/** The study's bank id: `rsi-<job id>` (stable across replays of the study). */
export function rsiBankId(jobId: string): string {
  return `rsi-${jobId.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 128);
}

/** The study's first bank version, its seed: committed once, then reused. */
async function seedVersion(
  banks: BankStore,
  bankId: string,
  files: Record<string, string>,
): Promise<BankVersion> {
  const asVersion = (c: BankCommit): BankVersion => ({
    version: c.version,
    commitHash: c.commitHash,
    treeHash: c.treeHash,
  });
  const seed = MemoryBank.create(files);
  try {
    return asVersion(await banks.getCommit(bankId, { version: 1 }));
  } catch (err) {
    if (!isTroupeError(err) || err.code !== ErrorCode.NOT_FOUND) throw err;
  }
  try {
    return asVersion(
      await banks.commit({ bankId, parent: null, bank: seed, author: 'rsi', role: 'seed' }),
    );
  } catch (err) {
    // Another execution of the study committed it first.
    if (!isTroupeError(err) || err.code !== ErrorCode.ALREADY_EXISTS) throw err;
    return asVersion(await banks.getCommit(bankId, { version: 1 }));
  }
}

/**
 * The `rsi` driver: one RSIAgent study per job (its single task `study`). Phase 1 builds the bank
 * from the suite's seed in waves of practice projects the Curriculum proposes (each practised on
 * its own machine of the suite's environment kind, committed in the Curriculum's order; see
 * `rsi-phase1.ts`); Phase 2 runs the development tasks serially through the target loop with the
 * roles of the suite's environment kind (agent sessions on shell sandboxes, or desktop roles);
 * Phase 3 runs each held-out task's Actor on the frozen bank (no Verifier, no lessons,
 * no Curriculum) and scores it with the task's evaluator, which no role ever sees. Phase
 * boundaries are write-once records next to the study's bank, so a replay of the task after a
 * crash goes on from the last boundary. Artifacts: `phase1.json`, `phase2.json`, `phase3.json`
 * and `report.html`.
 */
export function createRsiDriver(options: RsiDriverOptions = {}): JobDriver<RsiConfig, RsiRun> {
  const baseDir = options.baseDir ?? process.cwd();
  const suiteOf = (spec: JobSpec) => {
    const ref = parseWith(RsiSuiteRefSchema, spec.tasks, { prefix: 'spec.tasks' });
    return loadRsiSuite(ref.suite, baseDir, 'spec.tasks');
  };
  const configOf = (spec: JobSpec) =>
    parseWith(RsiConfigSchema, spec.config, { prefix: 'spec.config' });
  const studyOf = (
    ctx: TaskContext,
    config: RsiConfig,
    suite: RsiSuite | RsiDesktopSuite,
    trajectories: TrajectoryStore,
  ): RsiStudyEnvironment => {
    if (suite.environment !== 'desktop') {
      return shellStudy({
        ctx,
        models: config.models,
        dev: suite.dev,
        heldOut: suite.heldOut,
        trajectories,
      });
    }
    if (!options.llm) {
      throw new TroupeError('UNAVAILABLE', "a desktop suite needs the cluster's LLM client");
    }
    return desktopStudy({ ctx, models: config.models, suite, llm: options.llm });
  };

  return {
    name: 'rsi',
    description: 'RSIAgent studies: a memory bank developed by verified practice, then measured',

    async validate(spec) {
      const config = configOf(spec);
      const models = options.models;
      for (const role of ['actor', 'verifier', 'curriculum'] as const) {
        const name = config.models[role];
        if (!models?.has(name)) {
          throw invalidArgument(
            `spec.config.models.${role}`,
            `must name a model of the cluster's registry (${models?.names().join(', ') || 'none configured: start the cluster with --models'})`,
            name,
          );
        }
      }
      // Read and parsed off the event loop: validation runs on the coordinator for every submit.
      const ref = parseWith(RsiSuiteRefSchema, spec.tasks, { prefix: 'spec.tasks' });
      const suite = await loadRsiSuite(ref.suite, baseDir, 'spec.tasks');
      if (suite.environment === 'desktop' && !options.llm) {
        throw invalidArgument(
          'spec.tasks.suite',
          "a desktop suite needs the cluster's LLM client (start the cluster with --models)",
        );
      }
    },

    plan(spec) {
      return [{ id: 'study', input: configOf(spec) }];
    },

    async runTask(ctx, config) {
      const suite = await suiteOf(ctx.spec);
      const nats = ctx.nats;
      if (!nats) throw new TroupeError('UNAVAILABLE', 'this host gives drivers no NATS connection');
      const banks = await BankStore.open(nats.connection, {
        cluster: nats.cluster,
        ...(nats.replicas !== undefined ? { replicas: nats.replicas } : {}),
      });
      const trajectories = new TrajectoryStore({
        connection: nats.connection,
        cluster: nats.cluster,
        ...(nats.replicas !== undefined ? { replicas: nats.replicas } : {}),
      });
      const bankId = rsiBankId(ctx.jobId);
      const records = new StudyRecords(banks.kv, bankId);
      const { signal } = ctx;
      // The roles factory and Phase-3 scoring of the suite's environment kind.
      const study = studyOf(ctx, config, suite, trajectories);
      const rolesFor = (task: { id: string }, execution: string) =>
        study.rolesFor(task.id, execution);

      const seed = await seedVersion(banks, bankId, suite.seedBank);
      const phase1 = await runRsiPhase1({
        banks,
        records,
        input: seed,
        system: ctx.refs,
        trajectories,
        jobId: ctx.jobId,
        execution: `${ctx.resourceId}-p1`,
        models: config.models,
        brief: suite.phase1Brief,
        ...(study.phase1 ? { binding: study.phase1(`${ctx.resourceId}-p1`) } : {}),
        config: config.phase1,
        maxRefusedPublications: config.maxRefusedPublications,
        ...(ctx.budgetScope ? { budgetScope: ctx.budgetScope } : {}),
        log: ctx.log,
        signal,
      });
      ctx.log.info({ bankId, treeHash: phase1.output.treeHash }, 'rsi phase 1 ready');

      const phase2 = await runPhase2({
        banks,
        records,
        input: phase1.output,
        tasks: study.dev,
        signal,
        runTask: async (task, bank, sig) => {
          const r = await runTarget(task.id, rsiBank(bank), rolesFor(task, ctx.resourceId), {
            stopPolicy: config.stopPolicy,
            learnOnPass: config.learnOnPass,
            maxAttempts: config.maxAttempts,
            maxProjects: config.maxProjects,
            maxRefusedPublications: config.maxRefusedPublications,
            onEvent: (e) => ctx.log.info({ task: task.id, ...e }, 'rsi target'),
            ...(sig ? { signal: sig } : {}),
          });
          return {
            status: r.status,
            verdict: r.verdict,
            bank: r.bank.bank,
            attempts: r.attempts.length,
            projects: r.projects.length,
            refusedPublications: r.refusedPublications,
            ...(r.stalled !== undefined ? { stalled: r.stalled } : {}),
            log: targetLog(r),
          };
        },
        onTask: (e) => ctx.log.info({ ...e.record, reused: e.reused }, 'rsi phase 2 task'),
      });

      const phase3 = await runPhase3({
        banks,
        records,
        tasks: study.heldOut,
        tasksField: 'spec.tasks.suite (heldOut)',
        signal,
        evaluate: (task, bank, sig, attempt) => study.evaluate(task.id, bank, sig, attempt),
        onTask: (e) => ctx.log.info({ ...e.record, reused: e.reused }, 'rsi phase 3 task'),
      });

      const put = (name: string, value: unknown) =>
        ctx.artifacts.put(name, JSON.stringify(value, null, 2) + '\n', {
          contentType: 'application/json',
          signal,
        });
      const links: Record<string, string> = {
        phase1: await put('phase1.json', phase1),
        phase2: await put('phase2.json', phase2),
        phase3: await put('phase3.json', phase3),
      };
      links['report'] = await ctx.artifacts.put(
        'report.html',
        renderRsiReport({
          jobId: ctx.jobId,
          bankId,
          seed,
          phase1,
          waves: await readPhase1Waves(records, phase1),
          phase2,
          phase3,
        }),
        { contentType: 'text/html', signal },
      );
      return { bankId, seed, phase1, phase2, phase3, links };
    },

    async grade(_ctx: TaskContext, _input, run) {
      if (!run) return { passed: false, score: 0, stopReason: 'error' };
      const p3 = run.phase3;
      return {
        passed: p3.scored > 0 && p3.unscored === 0,
        score: p3.meanScore,
        stopReason: 'finished',
        details: {
          bankId: run.bankId,
          seedTreeHash: (run.seed ?? run.phase1.output).treeHash,
          phase1TreeHash: run.phase1.output.treeHash,
          phase1Waves: run.phase1.waves,
          phase1Ended: run.phase1.ended,
          frozenTreeHash: run.phase2.frozen.treeHash,
          frozenVersion: run.phase2.frozen.version,
          phase2: run.phase2.tasks.map((t) => ({
            task: t.taskId,
            status: t.status,
            verdict: t.verdict,
            attempts: t.attempts,
            projects: t.projects,
            bankIn: t.bankIn.treeHash,
            bankOut: t.bankOut.treeHash,
          })),
          meanScore: p3.meanScore,
          scored: p3.scored,
          unscored: p3.unscored,
          links: run.links,
        },
      };
    },
  };
}
