import { createHash } from 'node:crypto';
import path from 'node:path';
import { type UntypedActorRef } from '@troupe/actors';
import {
  jobPayloadPrefix,
  type JobDriver,
  type JobSpec,
  type TaskContext,
} from '@troupe/coordinator';
import { ArtifactStore, EVALUATOR_KIND, SANDBOX_KIND } from '@troupe/node-agent';
import {
  errorCode,
  invalidArgument,
  isCancelled,
  parseWith,
  timeoutError,
  TroupeError,
} from '@troupe/proto';
import { z } from 'zod';
import { type TaskAgentRunner, type TaskAgentRunResult } from './task-agent-runner';
import { EnvironmentBuilder } from './environment-builder';
import { createGoldAgentRunner } from './gold-agent-runner';
import { loadIssueSuite, loadIssueTask } from './issue-suite';
import {
  TaskAgentKind,
  type InvalidIssueTask,
  type IssueResolutionConfig,
  type IssueSuiteRef,
  type IssueTaskFile,
  IssueResolutionConfigSchema,
  type IssueTaskInput,
  IssueTaskInputSchema,
  IssueSuiteRefSchema,
  type LoadedIssueTask,
  type StagedIssueTask,
} from './issue-task-spec';
import { createNoneAgentRunner } from './none-agent-runner';
import { createPredictionsAgentRunner } from './predictions-agent-runner';
import { gradeTestOutcomes } from './swe-bench-grading';
import { ResultStore } from './result-store';
import { ensureStaged, readPayloadText, stageIssueTask } from './task-payload';
import { TreeEntryError } from './task-tree';
import { WorkspaceSandbox } from './workspace-sandbox';
import { initWorkspaceRepo, takeWorkspacePatch, type WorkspaceRepoState } from './workspace-repo';

/** The message a `model` job gets until a model agent runner is registered. */
export const MODEL_AGENT_UNAVAILABLE =
  'model agents need models: start the cluster with a models file (troupe run|dev|coordinator --models models.yaml), or use gold or none';
/** Largest workspace tar kept through the inline path (bigger ones are exported directly). */
const INLINE_WORKSPACE_BYTES = 512 * 1024;
const TAIL_CHARS = 800;

/**
 * Environment pinned for every grading run, so graders do not depend on the host: time zone,
 * locale, hash seed. `GRADER_SEED` is added from `config.seed`.
 */
export const PINNED_GRADER_ENV: Readonly<Record<string, string>> = {
  TZ: 'UTC',
  LANG: 'C.UTF-8',
  LC_ALL: 'C.UTF-8',
  PYTHONHASHSEED: '0',
  PYTHONDONTWRITEBYTECODE: '1',
  NODE_OPTIONS: '',
};

/** Options of {@link createIssueResolutionDriver}. */
export interface IssueResolutionDriverOptions {
  /**
   * Agent runners besides the built-in `gold` and `none` — the seam of the model-driven agent:
   * register a runner of kind `model` and `config.agent.kind: model` jobs are accepted.
   * @default none
   */
  agentRunners?: readonly TaskAgentRunner[];
  /** Base of relative `suite` and `resultsDir` paths. @default process.cwd() */
  cwd?: string;
  /**
   * Builds task environments (`environment:` of a task) on the Docker engine of this process's
   * host. @default one on the local engine, made on first use
   */
  environments?: EnvironmentBuilder;
}

/** What an attempt's run produced (what `grade` reads). */
export interface IssueRun {
  /** Set when a stored result was reused instead of running. */
  resumedFrom?: string;
  stopReason: TaskAgentRunResult['stopReason'];
  finalText: string;
  steps: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  model?: string;
  /** Wall time of the agent. */
  agentMs: number;
  /** Wall time of creating the sandbox (building a missing image included). */
  sandboxMs: number;
  /** The artifact of the trajectory, when the agent produced one. */
  trajectoryArtifact?: string;
  /** Whether the workspace was made a git repository at the base for the agent. */
  workspaceRepo?: WorkspaceRepoState;
  /** Why the agent run failed, when it did (its partial work is still graded). */
  agentError?: string;
}

const GradeReplySchema = z
  .object({
    status: z.enum(['passed', 'failed', 'error', 'timeout']),
    score: z.number().optional(),
    report: z.record(z.string(), z.unknown()).optional(),
    exitCode: z.number(),
    stdoutTail: z.string(),
    stderrTail: z.string(),
    durationMs: z.number(),
    graderDigest: z.string(),
    workspaceDigest: z.string(),
    logArtifacts: z.object({ stdout: z.string(), stderr: z.string() }),
    error: z.string().optional(),
  })
  .loose();
type GradeReply = z.output<typeof GradeReplySchema>;

/** The sandbox id of an attempt's execution. */
export function issueSandboxId(resourceId: string): string {
  return `ir-${resourceId}`;
}

/** The evaluator id of grading run `n` of an execution. */
export function issueEvaluatorId(resourceId: string, n: number): string {
  return `ir-${resourceId}-g${n}`;
}

/** The error of a task that is invalid (`task <id>: task.yaml <field>: <rule>`, or the file). */
function invalidTaskError(invalid: InvalidIssueTask): TroupeError {
  const { taskId, field, rule } = invalid;
  const isFile = /^(repo|grader)\//.test(field) || field === 'solution.patch';
  return invalidArgument(`task ${taskId}: ${isFile ? field : `task.yaml ${field}`}`, rule);
}

/** The cluster's object store, where a task's files are staged. */
async function payloadStore(nats: TaskContext['nats'], what: string): Promise<ArtifactStore> {
  if (!nats) {
    throw new TroupeError('UNAVAILABLE', `${what}: no NATS connection to the object store`);
  }
  return ArtifactStore.open(nats.connection, {
    cluster: nats.cluster,
    ...(nats.replicas !== undefined ? { replicas: nats.replicas } : {}),
  });
}

function tail(text: string, max = TAIL_CHARS): string {
  return text.length <= max ? text : `…${text.slice(text.length - max + 1)}`;
}

/** Key of the agent settings a stored result is valid for. */
function agentKeyOf(spec: JobSpec, config: IssueResolutionConfig): string {
  return createHash('sha256')
    .update(JSON.stringify([config.agent.kind, spec.agent ?? null, config.repeat, config.seed]))
    .digest('hex')
    .slice(0, 32);
}

/**
 * The `issue-resolution` driver: each task is a "fix this issue in this repository" task from a
 * suite folder (`task.yaml`, `repo/`, hidden `grader/`, `solution.patch`; see
 * docs/benchmarks/issue-resolution.md). Per task: a sandbox holding `repo/` at `/workspace` (no
 * network, non-root, no grader files) → the agent runner of `config.agent.kind` (stopped on
 * finish, its limits or its timeout) → the workspace exported as the artifact `workspace.tar` →
 * graded `config.repeat` times, each in a fresh evaluator container with the hidden grader at
 * `/grader` (pass: exit 0 and no `FAILED` line) with a pinned environment → the grade, the agent's
 * metadata and trajectory collected.
 *
 * Outcomes: passed / failed (a verdict, never retried), timeout (the task's time ran out: the
 * partial workspace is still graded, the task ends TIMED_OUT), error (the grader could not run,
 * the sandbox was lost: an infrastructure failure, retried). A malformed task.yaml does not stop
 * the job: it is planned as a task that ends ERRORED with `INVALID_ARGUMENT` naming the task,
 * field and rule, and is listed in the aggregate's `invalidTasks`.
 */
export function createIssueResolutionDriver(
  options: IssueResolutionDriverOptions = {},
): JobDriver<IssueTaskInput, IssueRun> {
  const runners = new Map<string, TaskAgentRunner>();
  for (const r of [
    createGoldAgentRunner(),
    createNoneAgentRunner(),
    createPredictionsAgentRunner(),
    ...(options.agentRunners ?? []),
  ]) {
    runners.set(r.kind, r);
  }
  const cwd = (): string => options.cwd ?? process.cwd();

  const runnerOf = (kind: string): TaskAgentRunner => {
    const runner = runners.get(kind);
    if (runner) return runner;
    if (kind === TaskAgentKind.MODEL) {
      throw invalidArgument('spec.config.agent.kind', MODEL_AGENT_UNAVAILABLE, kind);
    }
    throw invalidArgument(
      'spec.config.agent.kind',
      `must be one of ${[...runners.keys(), TaskAgentKind.MODEL].filter((k, i, all) => all.indexOf(k) === i).join(', ')}`,
      kind,
    );
  };

  const storeOf = async (
    ctx: TaskContext,
    config: IssueResolutionConfig,
  ): Promise<ResultStore | undefined> =>
    config.resultsDir
      ? ResultStore.open({
          resultsDir: config.resultsDir,
          folder: path.resolve(cwd(), config.resultsDir),
          ...(ctx.nats ? { nats: ctx.nats } : {}),
          log: ctx.log,
        })
      : undefined;

  const sandbox = (ctx: TaskContext, resourceId: string): UntypedActorRef =>
    ctx.refs
      .refOf({ kind: SANDBOX_KIND, id: issueSandboxId(resourceId) })
      .withHints({ jobId: ctx.jobId });

  const destroy = async (ctx: TaskContext, resourceId: string, signal: AbortSignal) => {
    await sandbox(ctx, resourceId).ask('destroy', {}, { timeoutMs: 30_000, signal });
  };

  // Made on first use, once: concurrent tasks must share the builder (and so its builds).
  let environments: Promise<EnvironmentBuilder> | undefined = options.environments
    ? Promise.resolve(options.environments)
    : undefined;
  /** The image of a task: its environment's (built on first use, then cached) or `image`. */
  const imageOf = async (ctx: TaskContext, task: IssueTaskFile): Promise<string> => {
    if (task.environment === undefined) return `troupe-${task.image}:latest`;
    environments ??= EnvironmentBuilder.onLocalDocker(ctx.log);
    const built = await (
      await environments
    ).ensure(task.environment, task.workdir, {
      signal: ctx.signal,
      field: 'environment',
    });
    if (built.built) {
      ctx.progress({ message: `${ctx.taskId}: environment ${built.ref} built in ${built.ms} ms` });
    }
    return built.ref;
  };

  const suiteOf = (ref: IssueSuiteRef, config: IssueResolutionConfig) =>
    loadIssueSuite(ref.suite, 'spec.tasks', {
      cwd: cwd(),
      maxTaskMb: config.maxTaskMb,
      ...(ref.include ? { include: ref.include } : {}),
      ...(ref.predictions ? { predictions: ref.predictions } : {}),
    });

  const configOf = (spec: JobSpec): IssueResolutionConfig =>
    parseWith(IssueResolutionConfigSchema, spec.config, { prefix: 'spec.config' });

  return {
    name: 'issue-resolution',
    description:
      'fix-this-issue tasks (task.yaml, repo/, hidden grader/) worked by an agent in a sandbox, graded in a fresh container',
    // Each task's repository and grader are staged under the job's payload prefix.
    storesPayloads: true,

    async validate(spec) {
      const config = configOf(spec);
      const runner = runnerOf(config.agent.kind);
      if (config.agent.kind === TaskAgentKind.MODEL && spec.agent === undefined) {
        throw invalidArgument('spec.agent', 'is required for model agents (model, limits)');
      }
      runner.validate?.(spec.agent);
      const ref = parseWith(IssueSuiteRefSchema, spec.tasks, { prefix: 'spec.tasks' });
      if (config.agent.kind === TaskAgentKind.PREDICTIONS && ref.predictions === undefined) {
        throw invalidArgument('spec.tasks.predictions', 'is required for the predictions agent');
      }
      await suiteOf(ref, config);
    },

    async plan(spec, pctx) {
      const config = configOf(spec);
      const ref = parseWith(IssueSuiteRefSchema, spec.tasks, { prefix: 'spec.tasks' });
      const suite = await suiteOf(ref, config);
      const store = await payloadStore(pctx.nats, 'staging the tasks');
      const invalid = [...suite.invalid];
      const planned: { id: string; input: IssueTaskInput }[] = [];
      for (const loaded of suite.tasks) {
        try {
          const staged = await stageIssueTask(store, pctx.payloadPrefix, loaded, pctx.signal);
          planned.push({ id: loaded.task.id, input: { staged, config } });
        } catch (err) {
          if (pctx.signal.aborted) throw err;
          // A file that changed since the folder was read, or a store that refuses the data (full),
          // fails that task only.
          const entry = TreeEntryError.in(err);
          invalid.push(
            entry
              ? { taskId: loaded.task.id, field: entry.field, rule: entry.rule }
              : {
                  taskId: loaded.task.id,
                  field: 'repo/',
                  rule: `could not be stored in the object store: ${(err as Error).message}${(err as Error).cause instanceof Error ? ` (${((err as Error).cause as Error).message})` : ''}`,
                },
          );
        }
      }
      for (const bad of invalid) {
        pctx.log.warn(
          { jobId: pctx.jobId, taskId: bad.taskId, field: bad.field, rule: bad.rule },
          'malformed task: reported, not run',
        );
        planned.push({ id: bad.taskId, input: { invalid: bad, config } });
      }
      // Ids must be unique: a malformed task whose task.yaml repeats a valid task's id keeps
      // its folder name instead.
      const seen = new Set<string>();
      return planned
        .map((p) => {
          const id =
            seen.has(p.id) && 'invalid' in p.input ? `${p.id.slice(0, 120)}-invalid` : p.id;
          seen.add(id);
          return { ...p, id };
        })
        .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    },

    async runTask(ctx, raw) {
      const input = parseWith(IssueTaskInputSchema, raw, { prefix: 'input' });
      if ('invalid' in input) throw invalidTaskError(input.invalid);
      const { staged, config } = input;
      const store = await storeOf(ctx, config);
      if (store && config.resume) {
        const stored = await store.read(ctx.taskId, staged.digest, agentKeyOf(ctx.spec, config));
        if (stored) {
          ctx.progress({
            message: `${ctx.taskId}: complete result from job ${stored.jobId}, skipped`,
          });
          return {
            resumedFrom: stored.jobId,
            stopReason: 'finished',
            finalText: '',
            steps: 0,
            promptTokens: 0,
            completionTokens: 0,
            costUsd: 0,
            agentMs: 0,
            sandboxMs: 0,
          };
        }
      }
      const runner = runnerOf(config.agent.kind);
      // A crash interrupted an earlier execution of this attempt: start from scratch.
      for (const stale of ctx.staleResourceIds) {
        await destroy(ctx, stale, ctx.signal).catch((err: unknown) =>
          ctx.log.warn({ err, resourceId: stale }, 'could not destroy a stale sandbox'),
        );
      }
      const sb = sandbox(ctx, ctx.resourceId);
      const { task, payload } = staged;
      const payloads = await payloadStore(ctx.nats, `task ${ctx.taskId}`);
      await ensureStaged(payloads, staged, () => restage(ctx, payloads, staged, config));
      const createStarted = Date.now();
      const image = await imageOf(ctx, task);
      await sb.ask(
        'create',
        {
          spec: {
            image,
            workdir: task.workdir,
            memoryMb: task.limits.memoryMb,
            cpus: task.limits.cpus,
            network: 'none',
          },
          jobId: ctx.jobId,
        },
        { timeoutMs: config.createTimeoutMs, signal: ctx.signal },
      );
      // The repository goes from the object store straight into the sandbox (any size).
      const put = z
        .object({ artifact: z.object({ digest: z.string() }) })
        .loose()
        .parse(
          await sb.ask(
            'putFiles',
            { destDir: task.workdir, artifact: payload.repo.object },
            { timeoutMs: config.createTimeoutMs, signal: ctx.signal },
          ),
        );
      if (put.artifact.digest !== payload.repo.digest) {
        throw new TroupeError(
          'UNAVAILABLE',
          `the repository of ${ctx.taskId} arrived with digest ${put.artifact.digest}, expected ${payload.repo.digest}`,
          { retryable: true },
        );
      }
      const workspace = new WorkspaceSandbox(sb, task.workdir);
      // The agent works in a git repository at the base, as in SWE-bench's testbeds: `git diff`
      // shows its change, and the export takes that diff as the task's agent.patch.
      let workspaceRepo: WorkspaceRepoState;
      try {
        workspaceRepo = await initWorkspaceRepo(workspace, {
          timeoutMs: config.createTimeoutMs,
          signal: ctx.signal,
        });
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        throw new TroupeError('UNAVAILABLE', `task ${ctx.taskId}: ${(err as Error).message}`, {
          retryable: true,
          cause: err,
        });
      }
      const solutionPatch =
        payload.solutionPatch !== undefined && config.agent.kind === TaskAgentKind.GOLD
          ? await readPayloadText(payloads, payload.solutionPatch, ctx.signal)
          : undefined;
      const predictionPatch =
        payload.predictionPatch !== undefined && config.agent.kind === TaskAgentKind.PREDICTIONS
          ? await readPayloadText(payloads, payload.predictionPatch, ctx.signal)
          : undefined;
      const sandboxMs = Date.now() - createStarted;
      const agentTimer = new AbortController();
      const timer = setTimeout(
        () => agentTimer.abort(timeoutError(`agent of task ${ctx.taskId}`, task.timeouts.agentMs)),
        task.timeouts.agentMs,
      );
      const signal = AbortSignal.any([ctx.signal, agentTimer.signal]);
      const started = Date.now();
      let result: TaskAgentRunResult;
      let agentError: string | undefined;
      try {
        result = await runner.run({
          jobId: ctx.jobId,
          taskId: ctx.taskId,
          task,
          ...(solutionPatch !== undefined ? { solutionPatch } : {}),
          ...(predictionPatch !== undefined ? { predictionPatch } : {}),
          sandbox: workspace,
          sandboxId: issueSandboxId(ctx.resourceId),
          refs: ctx.refs,
          ...(ctx.nats ? { nats: ctx.nats } : {}),
          attempt: ctx.attempt,
          ...(ctx.spec.agent ? { agent: ctx.spec.agent } : {}),
          ...(ctx.budgetScope ? { budgetScope: ctx.budgetScope } : {}),
          signal,
          log: ctx.log,
        });
      } catch (err) {
        if (!signal.aborted) throw err;
        const reason: unknown = signal.reason;
        if (isCancelled(reason) || errorCode(reason) !== 'TIMEOUT') throw reason;
        // Out of time: grade what the workspace holds.
        agentError = (err as Error).message;
        result = {
          stopReason: 'timeout',
          finalText: '',
          steps: 0,
          usage: { promptTokens: 0, completionTokens: 0 },
          costUsd: 0,
        };
      } finally {
        clearTimeout(timer);
      }
      const agentMs = Date.now() - started;
      const run: IssueRun = {
        stopReason: result.stopReason,
        finalText: tail(result.finalText),
        steps: result.steps,
        promptTokens: result.usage.promptTokens,
        completionTokens: result.usage.completionTokens,
        costUsd: result.costUsd,
        ...(result.model ? { model: result.model } : {}),
        agentMs,
        sandboxMs,
        workspaceRepo,
        ...(agentError ? { agentError } : {}),
      };
      if (result.trajectory && result.trajectory.length > 0) {
        run.trajectoryArtifact = await ctx.artifacts.put(
          'trajectory.jsonl',
          result.trajectory.map((e) => JSON.stringify(e)).join('\n') + '\n',
          { contentType: 'application/x-ndjson', signal: AbortSignal.timeout(30_000) },
        );
      }
      return run;
    },

    async grade(ctx, raw, run) {
      const input = parseWith(IssueTaskInputSchema, raw, { prefix: 'input' });
      if ('invalid' in input) throw invalidTaskError(input.invalid);
      const { staged, config } = input;
      const store = await storeOf(ctx, config);
      const agentKey = agentKeyOf(ctx.spec, config);
      if (run?.resumedFrom !== undefined && store) {
        const stored = await store.read(ctx.taskId, staged.digest, agentKey);
        if (stored) {
          return {
            ...stored.grade,
            details: { ...(stored.grade.details ?? {}), resumedFrom: stored.jobId },
          };
        }
        throw new TroupeError('UNAVAILABLE', `the stored result of ${ctx.taskId} disappeared`, {
          retryable: true,
        });
      }
      const gradeStarted = Date.now();
      const { task, payload } = staged;
      const sb = sandbox(ctx, ctx.resourceId);
      // The agent's change as a patch (SWE-bench's model_patch); the driver's .git goes with it,
      // so the exported workspace holds the task's files only.
      const taken = await takeWorkspacePatch(new WorkspaceSandbox(sb, task.workdir), {
        timeoutMs: 120_000,
        signal: ctx.signal,
      });
      const agentPatchArtifact =
        taken.state === 'patch'
          ? await ctx.artifacts.put('agent.patch', taken.patch, {
              contentType: 'text/x-diff',
              signal: ctx.signal,
            })
          : undefined;
      if (taken.state === 'error') {
        ctx.log.warn({ taskId: ctx.taskId, error: taken.error }, 'agent patch not taken');
      }
      // The workspace as the agent left it (partial work too, after a timeout).
      const workspaceArtifact = await exportWorkspace(ctx, sb, task.workdir);
      // The grader is kept with the task's artifacts (the staged copy goes with the job).
      const payloads = await payloadStore(ctx.nats, `task ${ctx.taskId}`);
      const graderArtifact = await ctx.artifacts.put(
        'grader.tar',
        await payloads.get(payload.grader.object, { signal: ctx.signal }),
        { contentType: 'application/x-tar', signal: ctx.signal },
      );
      const image = await imageOf(ctx, task);
      const replies: GradeReply[] = [];
      let testTable: ReturnType<typeof gradeTestOutcomes> | undefined;
      for (let n = 0; n < config.repeat; n++) {
        const reply = GradeReplySchema.parse(
          await ctx.refs
            .refOf({ kind: EVALUATOR_KIND, id: issueEvaluatorId(ctx.resourceId, n) })
            .withHints({ jobId: ctx.jobId })
            .ask(
              'grade',
              {
                gradeId: `${ctx.resourceId}-g${n}`,
                workspaceArtifact,
                graderArtifact,
                image,
                workdir: task.workdir,
                timeoutMs: task.timeouts.gradeMs,
                env: { ...PINNED_GRADER_ENV, GRADER_SEED: String(config.seed) },
                jobId: ctx.jobId,
              },
              // Building a missing image counts too (bounded like creating a sandbox).
              { timeoutMs: task.timeouts.gradeMs + config.createTimeoutMs, signal: ctx.signal },
            ),
        );
        if (reply.status === 'error') {
          // Not a verdict on the workspace: the grader could not run. Retried.
          throw new TroupeError(
            'UNAVAILABLE',
            `grader error on ${ctx.taskId}: ${reply.error ?? `exit ${reply.exitCode}`}`,
            { retryable: true, details: { grade: 'error', logs: reply.logArtifacts } },
          );
        }
        if (staged.tests && reply.status !== 'timeout') {
          // SWE-bench grading: the verdict is the per-test table, not the grader's exit status.
          const verdict = gradeTestOutcomes(
            staged.tests,
            await readLog(ctx, reply.logArtifacts.stdout),
          );
          reply.status = verdict.resolved ? 'passed' : 'failed';
          testTable ??= verdict;
        }
        replies.push(reply);
      }
      const statuses = replies.map((r) => r.status);
      const passes = statuses.filter((s) => s === 'passed').length;
      const passed = passes * 2 > statuses.length;
      const first = replies[0]!;
      const timedOut = run === undefined || run.stopReason === 'timeout';
      const details: Record<string, unknown> = {
        // The grader's verdict; the task's status adds `timeout` (TIMED_OUT) and `error` (ERRORED).
        grade: passed ? 'passed' : 'failed',
        timedOut,
        graderTimedOut: statuses.includes('timeout'),
        gradeStatuses: statuses,
        disagreement: new Set(statuses).size > 1,
        exitCode: first.exitCode,
        stdoutTail: tail(first.stdoutTail),
        stderrTail: tail(first.stderrTail),
        ...(first.report ? { report: first.report } : {}),
        ...(testTable
          ? {
              resolved: testTable.resolved,
              failToPass: testTable.failToPass,
              passToPass: testTable.passToPass,
              tests: testTable.rows,
            }
          : {}),
        ...(staged.predictionModel ? { predictionModel: staged.predictionModel } : {}),
        graderDigest: first.graderDigest,
        workspaceDigest: first.workspaceDigest,
        taskDigest: staged.digest,
        agentKind: config.agent.kind,
        ...((run?.model ?? ctx.spec.agent?.model)
          ? { model: run?.model ?? ctx.spec.agent?.model }
          : {}),
        steps: run?.steps ?? 0,
        finalText: run?.finalText ?? '',
        ...(run?.workspaceRepo ? { workspaceRepo: run.workspaceRepo } : {}),
        agentPatch:
          taken.state === 'patch'
            ? { state: taken.state, bytes: Buffer.byteLength(taken.patch) }
            : taken,
        ...(run?.agentError ? { agentError: run.agentError } : {}),
        durationsMs: {
          sandbox: run?.sandboxMs ?? 0,
          agent: run?.agentMs ?? 0,
          grade: Date.now() - gradeStarted,
          graders: replies.map((r) => Math.round(r.durationMs)),
        },
        links: {
          workspace: workspaceArtifact,
          ...(run?.trajectoryArtifact ? { trajectory: run.trajectoryArtifact } : {}),
          ...(agentPatchArtifact ? { agentPatch: agentPatchArtifact } : {}),
          graderStdout: first.logArtifacts.stdout,
          graderStderr: first.logArtifacts.stderr,
        },
      };
      const grade = {
        passed,
        score: first.score ?? (passed ? 1 : 0),
        stopReason: run?.stopReason ?? 'timeout',
        costUsd: run?.costUsd ?? 0,
        promptTokens: run?.promptTokens ?? 0,
        completionTokens: run?.completionTokens ?? 0,
        details,
      };
      if (store && !timedOut) {
        // A timed-out task is not a complete result: a re-run works it again.
        await store.write({
          version: 1,
          taskId: ctx.taskId,
          taskDigest: staged.digest,
          agentKey,
          jobId: ctx.jobId,
          finishedUnixMs: Date.now(),
          grade,
        });
      }
      return grade;
    },

    async cleanup(ctx) {
      await destroy(ctx, ctx.resourceId, AbortSignal.timeout(60_000));
    },

    async collect(spec, tasks) {
      const config = configOf(spec);
      const flaky: string[] = [];
      const resumed: string[] = [];
      for (const t of tasks) {
        const d = t.details ?? {};
        if (d['disagreement'] === true) flaky.push(t.taskId);
        if (typeof d['resumedFrom'] === 'string') resumed.push(t.taskId);
      }
      let invalidTasks: unknown[] = [];
      try {
        const ref = parseWith(IssueSuiteRefSchema, spec.tasks, { prefix: 'spec.tasks' });
        invalidTasks = (await suiteOf(ref, config)).invalid;
      } catch {
        // The suite moved since the job started: nothing to list.
      }
      return {
        agentKind: config.agent.kind,
        ...(spec.agent ? { model: spec.agent.model } : {}),
        repeat: config.repeat,
        flaky,
        resumed,
        invalidTasks,
      };
    },
  };

  async function readLog(ctx: TaskContext, name: string): Promise<string> {
    const store = await payloadStore(ctx.nats, 'reading the test log');
    return Buffer.from(await store.get(name, { signal: ctx.signal })).toString('utf8');
  }

  /**
   * Stages a task again (its stored parts were cleaned up: a resumed job): from its folder, or a
   * SWE-bench instance from its suite (with its prediction, when the job grades predictions).
   */
  async function restage(
    ctx: TaskContext,
    store: ArtifactStore,
    staged: StagedIssueTask,
    config: IssueResolutionConfig,
  ): Promise<StagedIssueTask> {
    let loaded: LoadedIssueTask | InvalidIssueTask;
    if (staged.tests) {
      const ref = parseWith(IssueSuiteRefSchema, ctx.spec.tasks, { prefix: 'spec.tasks' });
      const suite = await suiteOf({ ...ref, suite: staged.dir, include: [ctx.taskId] }, config);
      loaded = suite.tasks[0] ??
        suite.invalid[0] ?? { taskId: ctx.taskId, field: 'instance_id', rule: 'must still exist' };
    } else {
      loaded = await loadIssueTask(staged.dir, { maxTaskMb: config.maxTaskMb });
    }
    if ('rule' in loaded) throw invalidTaskError(loaded);
    ctx.log.info({ taskId: ctx.taskId }, 'task files staged again');
    return stageIssueTask(store, jobPayloadPrefix(ctx.jobId), loaded, ctx.signal);
  }

  async function exportWorkspace(
    ctx: TaskContext,
    sb: UntypedActorRef,
    workdir: string,
  ): Promise<string> {
    // Small workspaces come back inline and become a listed artifact of the task; larger ones are
    // written to the artifact store by the sandbox itself.
    try {
      const reply = z
        .object({ tarBase64: z.string(), size: z.number() })
        .loose()
        .parse(
          await sb.ask(
            'getFiles',
            { srcPath: `${workdir}/.`, maxBytes: INLINE_WORKSPACE_BYTES },
            { timeoutMs: 60_000, signal: ctx.signal },
          ),
        );
      return await ctx.artifacts.put('workspace.tar', Buffer.from(reply.tarBase64, 'base64'), {
        contentType: 'application/x-tar',
        signal: ctx.signal,
      });
    } catch (err) {
      if (errorCode(err) !== 'INVALID_ARGUMENT') throw err;
    }
    const name = ctx.artifacts.adopt('workspace.tar');
    await sb.ask(
      'exportFiles',
      { srcPath: `${workdir}/.`, artifact: name, meta: { jobId: ctx.jobId, taskId: ctx.taskId } },
      { timeoutMs: 120_000, signal: ctx.signal },
    );
    return name;
  }
}
