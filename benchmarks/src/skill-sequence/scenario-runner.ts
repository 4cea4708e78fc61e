import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { type Logger, type UntypedActorRef } from '@troupe/actors';
import { invalidArgument, TroupeError } from '@troupe/proto';
import { truncateObservation } from './code-action';
import type { ScenarioJournal, SequenceArm } from './scenario-journal';
import type { SequenceAgent } from './sequence-agents';
import type {
  ExtractSequenceFunctions,
  SequenceFunction,
  SequenceLibrary,
  SequenceProvenance,
  SequenceSkill,
} from './sequence-library';
import { type SequenceArmRun, type SequenceTaskRun, summariseArm } from './sequence-task-run';
import type { ScenarioInput, SequenceTask } from './skill-sequence-spec';
import { WorldSandbox } from './world-sandbox';

/** What one run of a scenario needs. */
export interface ScenarioRunOptions {
  input: ScenarioInput;
  arm: SequenceArm;
  jobId: string;
  agent: SequenceAgent;
  /** The library (library arm only). */
  library?: SequenceLibrary;
  extract: ExtractSequenceFunctions;
  journal: ScenarioJournal;
  /** The world package's files and the grader's (read once per scenario). */
  world: Record<string, string>;
  grader: Record<string, string>;
  /** The sandbox of the scenario's `index`-th task in this arm (a fresh id per task). */
  sandbox(index: number): UntypedActorRef;
  signal: AbortSignal;
  log: Logger;
  /** Called after each finished task (progress events). */
  onTask?(run: SequenceTaskRun, index: number): void;
  /** Deadline of creating a sandbox. */
  createTimeoutMs?: number;
}

/** Names called in `code` (a loose scan: enough to tell which library skills an action used). */
function calledNames(code: string, names: readonly string[]): string[] {
  return names.filter((n) => new RegExp(`(^|[^A-Za-z0-9_.])${n}\\s*\\(`).test(code));
}

/**
 * Runs one arm of a scenario: its tasks in order, each in a fresh world, skipping the tasks the
 * journal already holds (a retry resumes at the first unfinished task).
 */
export async function runScenarioArm(o: ScenarioRunOptions): Promise<SequenceArmRun> {
  const { scenario } = o.input;
  const runs: SequenceTaskRun[] = [];
  let resumed = 0;
  for (const [index, task] of scenario.tasks.entries()) {
    o.signal.throwIfAborted();
    const done = await o.journal.get(o.jobId, scenario.id, o.arm, task.id);
    if (done) {
      runs.push(done);
      resumed++;
      continue;
    }
    const run = await runTask(o, task, index);
    await o.journal.put(o.jobId, scenario.id, o.arm, run);
    runs.push(run);
    o.onTask?.(run, index);
  }
  return summariseArm(o.arm, runs, resumed);
}

async function runTask(
  o: ScenarioRunOptions,
  task: SequenceTask,
  index: number,
): Promise<SequenceTaskRun> {
  const started = Date.now();
  const { scenario, config } = o.input;
  const log = o.log.child({ scenario: scenario.id, arm: o.arm, sequenceTask: task.id });
  const sbRef = o.sandbox(index);
  const world = await WorldSandbox.create(sbRef, {
    image: o.input.image,
    memoryMb: config.memoryMb,
    jobId: o.jobId,
    world: o.world,
    signal: o.signal,
    ...(o.createTimeoutMs !== undefined ? { createTimeoutMs: o.createTimeoutMs } : {}),
  });
  try {
    const init = await world.init(task.seed);
    await world.startRepl();
    const provenance = (
      step: number,
      outcome: SequenceProvenance['outcome'],
    ): SequenceProvenance => ({
      jobId: o.jobId,
      scenario: scenario.id,
      taskId: task.id,
      step,
      outcome,
      at: new Date().toISOString(),
    });

    // Retrieve skills and check each in this fresh world; a skill that fails is dropped.
    const skills = {
      retrieved: [] as { name: string; version: number }[],
      checked: [] as { name: string; version: number }[],
      dropped: [] as { name: string; version: number; reason: string }[],
    };
    const usable: SequenceSkill[] = [];
    if (o.library) {
      const found = await o.library.retrieve({
        scenario: scenario.id,
        text: task.instruction,
        limit: config.library.retrieveLimit,
      });
      // `retrieve` places each skill after the skills it calls: definitions are checked in order.
      for (const s of found) {
        skills.retrieved.push({ name: s.name, version: s.version });
        const check = await world.checkSkill(s.name, s.source);
        if (check.ok) {
          usable.push(s);
          skills.checked.push({ name: s.name, version: s.version });
        } else {
          const reason = check.reason ?? 'check_skill failed without a reason';
          log.warn(
            { skill: s.name, version: s.version, reason },
            'skill dropped: it failed in a new world',
          );
          await o.library.drop(s.name, s.version, reason, provenance(0, 'unknown'));
          skills.dropped.push({ name: s.name, version: s.version, reason });
        }
      }
    }

    // The code-action loop.
    const maxSteps = task.maxSteps ?? config.agent.maxSteps;
    let steps = 0;
    let failedSteps = 0;
    let completed = false;
    const succeeded: { step: number; code: string }[] = [];
    const rejected = new Set<string>();
    const used = new Set<string>();
    const skillNames = usable.map((s) => s.name);
    const agentResult = await o.agent.run({
      scenario,
      task,
      config,
      maxSteps,
      supervisor: init.supervisor,
      skills: usable,
      signal: o.signal,
      finished: () => completed || steps >= maxSteps,
      solution: async () => {
        const file = path.join(o.input.suiteDir, 'grader', 'solutions', `${task.id}.py`);
        return readFile(file, 'utf8').catch((err: unknown) => {
          throw invalidArgument('agent.kind', `gold needs ${file} (${(err as Error).message})`);
        });
      },
      act: async (code) => {
        if (completed || steps >= maxSteps) {
          throw new TroupeError('INTERNAL', `${task.id}: action after the task finished`);
        }
        steps++;
        if (code === undefined) {
          failedSteps++;
          return {
            ok: false,
            completed,
            observation:
              'Your reply had no ```python block, so nothing ran. Reply with one ```python block.',
          };
        }
        const r = await world.execCode(code, config.execTimeoutS);
        for (const n of calledNames(code, skillNames)) used.add(n);
        if (r.ok) succeeded.push({ step: steps, code });
        else {
          failedSteps++;
          for (const f of o.extract(code)) rejected.add(f.name);
        }
        completed = completed || r.completed;
        const text = r.ok
          ? r.output
          : `${r.output}${r.error && !r.output.includes(r.error) ? `\n${r.error}` : ''}`;
        return {
          ok: r.ok,
          completed,
          observation: truncateObservation(
            text === '' ? '(no output)' : text,
            config.observationChars,
          ),
        };
      },
    });
    const grade = await world.grade(o.grader, o.world, task.id, task.seed);

    // Admission: functions of actions that ran without error (the final one included), newest
    // definition of a name winning, with the graded outcome as provenance.
    const admitted: { name: string; version: number }[] = [];
    const skipped: { name: string; reason: string }[] = [];
    if (o.library) {
      const latest = new Map<string, { fn: SequenceFunction; step: number }>();
      for (const s of succeeded)
        for (const fn of o.extract(s.code)) latest.set(fn.name, { fn, step: s.step });
      for (const { fn, step } of latest.values()) {
        const outcomes = await o.library.admit(
          [fn],
          provenance(step, grade.passed ? 'passed' : 'failed'),
        );
        for (const a of outcomes) {
          if (a.admitted) admitted.push({ name: a.name, version: a.version });
          else skipped.push({ name: a.name, reason: a.reason });
        }
      }
    }
    const run: SequenceTaskRun = {
      taskId: task.id,
      seed: task.seed,
      passed: grade.passed,
      reason: grade.reason.slice(0, 2_000),
      checks: grade.checks.slice(0, 50).map((c) => ({ ...c, detail: c.detail.slice(0, 500) })),
      completed,
      stopReason: completed ? 'completed' : steps >= maxSteps ? 'max_steps' : 'idle',
      steps,
      failedSteps,
      promptTokens: agentResult.promptTokens,
      completionTokens: agentResult.completionTokens,
      costUsd: agentResult.costUsd,
      durationMs: Date.now() - started,
      skills: {
        ...skills,
        used: [...used].sort(),
        admitted,
        skipped,
        rejected: [...rejected].filter((n) => !admitted.some((a) => a.name === n)).sort(),
      },
    };
    log.info({ passed: run.passed, steps, admitted: admitted.length }, 'sequence task graded');
    return run;
  } finally {
    await sbRef.ask('destroy', {}, { timeoutMs: 60_000 }).catch((err: unknown) => {
      log.warn({ err }, 'could not destroy a task sandbox');
    });
  }
}
