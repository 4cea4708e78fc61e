import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { TASK_ID_PATTERN } from '@troupe/coordinator';
import { invalidArgument } from '@troupe/proto';
import { pathKind } from '../path-kind';
import { type EvolveTask } from './evolve-job-spec';
import { isMleCompetition, loadMleCompetition } from './mle-competition';
import { loadSuiteBundle, resolveSuiteDir, type SuiteBundle } from './suite-bundle';

/** The folder of an MLE suite that holds one folder per competition. */
export const COMPETITIONS_DIR = 'competitions';

/**
 * Loads what a task's `suite` names: an MLE-bench competition folder (holding `config.yaml`,
 * see {@link loadMleCompetition}) or an evolve suite (holding `task.yaml`).
 */
export async function loadTaskBundle(
  suite: string,
  field: string,
  cwd?: string,
): Promise<SuiteBundle> {
  if (await isMleCompetition(suite, cwd)) return await loadMleCompetition(suite, field, cwd);
  return await loadSuiteBundle(suite, field, cwd);
}

/**
 * Expands every task whose `suite` is a suite of competitions (a folder with `competitions/`
 * and no `task.yaml`) into one task per competition (a subfolder holding `config.yaml`), with
 * id `<task id>-<competition folder>` and the task's limits and search options: the job then
 * runs one search per competition, `concurrency` of them at once. Other tasks pass unchanged.
 * @throws TroupeError `INVALID_ARGUMENT` for a folder without competitions or a clashing id
 */
export async function expandCompetitionTasks(
  tasks: readonly EvolveTask[],
  cwd?: string,
): Promise<EvolveTask[]> {
  const out: EvolveTask[] = [];
  for (const [i, task] of tasks.entries()) {
    const dir = resolveSuiteDir(task.suite, cwd);
    const folder = path.join(dir, COMPETITIONS_DIR);
    if (
      (await pathKind(path.join(dir, 'task.yaml'))) !== undefined ||
      (await pathKind(folder)) === undefined
    ) {
      out.push(task);
      continue;
    }
    const names: string[] = [];
    for (const name of (await readdir(folder)).sort()) {
      if (await isMleCompetition(path.join(folder, name))) names.push(name);
    }
    if (names.length === 0) {
      throw invalidArgument(
        `spec.tasks[${i}].suite`,
        `${folder} holds no competition (a folder with config.yaml)`,
      );
    }
    for (const name of names) {
      const id = `${task.id}-${name}`;
      if (!TASK_ID_PATTERN.test(id)) {
        throw invalidArgument(`spec.tasks[${i}].id`, `gives the invalid task id ${id}`);
      }
      out.push({ ...task, id, suite: path.join(task.suite, COMPETITIONS_DIR, name) });
    }
  }
  const seen = new Set<string>();
  for (const t of out) {
    if (seen.has(t.id)) {
      throw invalidArgument('spec.tasks', `task id ${t.id} appears twice after expansion`);
    }
    seen.add(t.id);
  }
  return out;
}
