import { readFileSync } from 'node:fs';
import path from 'node:path';
import { type JobEventRecord, type JobManager } from '@troupe/coordinator';
import type { FakeOpenAIHandler } from '@troupe/testkit';
import { parse } from 'yaml';

/** The repository's root (suites are named relative to it). */
export const REPO = path.resolve(__dirname, '../../../..');
/** The shipped suite. */
export const SUITE = 'benchmarks/suites/appworld-mini';

/** A job's results, with each scenario's details as the driver wrote them. */
export interface ScenarioResult {
  taskId: string;
  status: string;
  error: string;
  attempts: number;
  details: {
    arms: Record<
      string,
      {
        goalCompleted: boolean;
        passed: number;
        steps: number;
        tokens: number;
        resumedTasks: number;
        perTask: {
          taskId: string;
          passed: boolean;
          reason: string;
          completed: boolean;
          steps: number;
          failedSteps: number;
          promptTokens: number;
          skills: {
            retrieved: { name: string; version: number }[];
            checked: { name: string; version: number }[];
            dropped: { name: string; version: number; reason: string }[];
            used: string[];
            admitted: { name: string; version: number }[];
            skipped: { name: string; reason: string }[];
            rejected: string[];
          };
        }[];
      }
    >;
  };
}

/** Submits a job, waits for its end (the deadline fails the test) and returns its results. */
export async function runJob(
  jobs: JobManager,
  spec: Record<string, unknown>,
  timeoutMs: number,
): Promise<{ jobId: string; events: JobEventRecord[]; tasks: ScenarioResult[]; metrics: unknown }> {
  const { jobId } = await jobs.submit({ spec });
  const events: JobEventRecord[] = [];
  for await (const e of await jobs.watch(jobId, { signal: AbortSignal.timeout(timeoutMs) })) {
    events.push(e);
  }
  const results = await jobs.results(jobId);
  return {
    jobId,
    events,
    tasks: results.tasks as unknown as ScenarioResult[],
    metrics: (results as unknown as { metrics?: unknown }).metrics,
  };
}

/** The suite's tasks by instruction (the fake model tells the tasks apart by their text). */
export function suiteTasks(): { id: string; instruction: string; scenario: string }[] {
  const file = parse(readFileSync(path.join(REPO, SUITE, 'tasks.yaml'), 'utf8')) as {
    scenarios: { id: string; tasks: { id: string; instruction: string }[] }[];
  };
  return file.scenarios.flatMap((s) =>
    s.tasks.map((t) => ({ id: t.id, instruction: t.instruction.trim(), scenario: s.id })),
  );
}

/**
 * A gold solution split in two: its function definitions (the top-level `def`s and the lines
 * inside them) and the statements that call them and complete the task.
 */
export function splitSolution(taskId: string): { defs: string; call: string } {
  const text = readFileSync(path.join(REPO, SUITE, 'grader/solutions', `${taskId}.py`), 'utf8');
  const lines = text.split('\n');
  let inDef = false;
  const defs: string[] = [];
  const call: string[] = [];
  for (const line of lines) {
    const top = line.length > 0 && !/^\s/.test(line);
    if (top) inDef = /^(def |async def |@)/.test(line) || (inDef && /^[)\]}]/.test(line));
    if (top && !inDef && !line.startsWith('#')) call.push(line);
    else if (inDef || line.trim() === '') defs.push(line);
    else call.push(line);
  }
  return { defs: defs.join('\n').trim() + '\n', call: call.join('\n').trim() + '\n' };
}

const block = (code: string): string => `Next:\n\`\`\`python\n${code}\`\`\`\n`;

/** What the scripted model did, per task: the steps it answered. */
export interface ScriptLog {
  requests: { taskId: string; turn: number; withSkills: boolean }[];
}

/**
 * A scripted SAGE model for one scenario's tasks. Without library skills in its prompt it takes
 * four steps: explore the apps; define a helper that fails at once (so it must never enter the
 * library); define the solution's functions and a helper that only works in this world (it reads
 * a global of this namespace); call them and complete. With the solution's functions offered as
 * checked skills it calls them at once: one step.
 */
export function sageScript(log: ScriptLog, skillName: string): FakeOpenAIHandler {
  const tasks = suiteTasks();
  return (req) => {
    const messages = req.body.messages as { role: string; content: unknown }[];
    const prompt = messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
    const task = tasks.find((t) => prompt.includes(t.instruction));
    if (!task) throw new Error(`no suite task in the prompt: ${prompt.slice(0, 300)}`);
    const turn = messages.filter((m) => m.role === 'assistant').length;
    const content = messages[1]?.content;
    const first = typeof content === 'string' ? content : '';
    const withSkills = first.includes(`def ${skillName}(`);
    log.requests.push({ taskId: task.id, turn, withSkills });
    const { defs, call } = splitSolution(task.id);
    const usage = { prompt_tokens: 1_000 + 100 * turn, completion_tokens: 50 };
    if (withSkills) return { content: block(call), usage };
    const steps = [
      'print(apis.api_docs.show_app_descriptions())\n',
      'def broken_helper():\n    return 1\n\nraise RuntimeError("this action fails")\n',
      `${defs}\nWORLD_MARK = 1\n\ndef marked_total():\n    return WORLD_MARK + 1\n\nprint(marked_total())\n`,
      call,
    ];
    return { content: block(steps[Math.min(turn, steps.length - 1)]!), usage };
  };
}
