import { createHash } from 'node:crypto';
import { type ArtifactInfo, type ArtifactStore } from '@troupe/node-agent';
import { invalidArgument, TroupeError } from '@troupe/proto';
import { type LoadedIssueTask, type PayloadRef, type StagedIssueTask } from './issue-task-spec';
import { packTree, scanTree, TreeEntryError, type TreeScan } from './task-tree';

// A task's files never travel in a message: the plan stores `repo/` and `grader/` as tars (and
// `solution.patch`) in the cluster's object store, chunked by JetStream, and the task's input
// carries references {object, digest, size}. The sandbox unpacks the repo straight from the store,
// the evaluator reads the grader from it.

const MB = 1024 * 1024;

/** Default of `config.maxTaskMb`: the largest task (repo/, grader/, patches) a job takes. */
export const DEFAULT_MAX_TASK_MB = 256;

/** A task's trees listed, or the file (`field`) that broke a rule. */
export type TaskTreesScan =
  { repo: TreeScan; grader: TreeScan; bytes: number } | { field: string; rule: string };

/**
 * Lists a task's `repo/` and `grader/` folders faithfully ({@link scanTree}) and checks the task
 * (the trees and `textBytes` of patches) against `maxTaskMb`. Task folders and SWE-bench
 * instances both go through it.
 */
export async function scanTaskTrees(
  dirs: { repo: string; grader: string },
  textBytes: number,
  maxTaskMb: number = DEFAULT_MAX_TASK_MB,
): Promise<TaskTreesScan> {
  let repo: TreeScan;
  let grader: TreeScan;
  try {
    repo = await scanTree(dirs.repo, 'repo/');
    grader = await scanTree(dirs.grader, 'grader/');
  } catch (err) {
    if (err instanceof TreeEntryError) return { field: err.field, rule: err.rule };
    return { field: 'repo/', rule: `must be readable: ${(err as Error).message}` };
  }
  const bytes = repo.bytes + grader.bytes + textBytes;
  if (bytes > maxTaskMb * MB) {
    return {
      field: 'repo/',
      rule: `the task's files (repo/, grader/, patches) hold ${(bytes / MB).toFixed(1)} MB, more than config.maxTaskMb (${maxTaskMb} MB): raise the limit in the job's config`,
    };
  }
  return { repo, grader, bytes };
}

function refOf(info: ArtifactInfo): PayloadRef {
  return { object: info.name, digest: info.digest, size: info.size };
}

/**
 * The sha256 a stored result is valid for: task.yaml, the digests of the stored parts and the
 * SWE-bench grading.
 */
function taskDigest(staged: Omit<StagedIssueTask, 'digest'>): string {
  const { repo, grader, solutionPatch, predictionPatch } = staged.payload;
  return createHash('sha256')
    .update(
      JSON.stringify([
        staged.task,
        repo.digest,
        grader.digest,
        solutionPatch?.digest ?? null,
        ...(staged.tests || predictionPatch
          ? [staged.tests ?? null, predictionPatch?.digest ?? null, staged.predictionModel ?? null]
          : []),
      ]),
    )
    .digest('hex');
}

/**
 * Stores a loaded task's parts under `<prefix><taskId>/` (`repo.tar`, `grader.tar`,
 * `solution.patch`, `prediction.patch`) and returns the staged task. The trees are streamed (bounded memory).
 * @throws TreeEntryError when a file changed since the task was loaded; `UNAVAILABLE` when the
 *   store fails
 */
export async function stageIssueTask(
  store: ArtifactStore,
  prefix: string,
  loaded: LoadedIssueTask,
  signal?: AbortSignal,
): Promise<StagedIssueTask> {
  const base = `${prefix}${loaded.task.id}/`;
  const put = async (
    name: string,
    data: Parameters<ArtifactStore['put']>[1],
    contentType: string,
  ): Promise<PayloadRef> =>
    refOf(
      await store.put(`${base}${name}`, data, {
        contentType,
        meta: { taskId: loaded.task.id },
        ...(signal ? { signal } : {}),
      }),
    );
  const repo = await put('repo.tar', packTree(loaded.repo, 'repo/'), 'application/x-tar');
  const grader = await put('grader.tar', packTree(loaded.grader, 'grader/'), 'application/x-tar');
  const solutionPatch =
    loaded.solutionPatch !== undefined
      ? await put('solution.patch', Buffer.from(loaded.solutionPatch), 'text/x-diff')
      : undefined;
  const predictionPatch =
    loaded.prediction !== undefined
      ? await put('prediction.patch', Buffer.from(loaded.prediction.patch), 'text/x-diff')
      : undefined;
  const staged = {
    task: loaded.task,
    dir: loaded.dir,
    payload: {
      repo,
      grader,
      ...(solutionPatch ? { solutionPatch } : {}),
      ...(predictionPatch ? { predictionPatch } : {}),
    },
    ...(loaded.tests ? { tests: loaded.tests } : {}),
    ...(loaded.prediction?.model ? { predictionModel: loaded.prediction.model } : {}),
  };
  return { ...staged, digest: taskDigest(staged) };
}

/**
 * Makes sure a staged task's parts are in the store: they are deleted when a job finishes, so a
 * resumed job (`troupe submit --resume`) stages its tasks again from their folders, which must
 * still hold the same files.
 * @throws TroupeError `INVALID_ARGUMENT` when the folder changed since the job was planned
 */
export async function ensureStaged(
  store: ArtifactStore,
  staged: StagedIssueTask,
  restage: () => Promise<StagedIssueTask>,
): Promise<void> {
  const present = await Promise.all(
    Object.values(staged.payload).map(async (ref) => {
      const info = await store.info(ref.object);
      return info?.digest === ref.digest;
    }),
  );
  if (present.every(Boolean)) return;
  const again = await restage();
  if (again.digest !== staged.digest) {
    throw invalidArgument(
      `task ${staged.task.id}`,
      `its folder ${staged.dir} changed since the job was planned (its stored files were cleaned up when the job finished): submit a new job`,
    );
  }
}

/** The text of a stored part, checked against its digest. */
export async function readPayloadText(
  store: ArtifactStore,
  ref: PayloadRef,
  signal?: AbortSignal,
): Promise<string> {
  const bytes = await store.get(ref.object, signal ? { signal } : {});
  const digest = createHash('sha256').update(bytes).digest('hex');
  if (digest !== ref.digest) {
    throw new TroupeError(
      'UNAVAILABLE',
      `stored task part ${ref.object} has digest ${digest}, expected ${ref.digest}`,
      { retryable: true },
    );
  }
  return Buffer.from(bytes).toString('utf8');
}
