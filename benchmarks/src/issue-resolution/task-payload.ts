import { createHash } from 'node:crypto';
import { type ArtifactInfo, type ArtifactStore } from '@troupe/node-agent';
import { invalidArgument, TroupeError } from '@troupe/proto';
import { type LoadedIssueTask, type PayloadRef, type StagedIssueTask } from './issue-task-spec';
import { packTree } from './task-tree';

// A task's files never travel in a message: the plan stores `repo/` and `grader/` as tars (and
// `solution.patch`) in the cluster's object store, chunked by JetStream, and the task's input
// carries references {object, digest, size}. The sandbox unpacks the repo straight from the store,
// the evaluator reads the grader from it.

function refOf(info: ArtifactInfo): PayloadRef {
  return { object: info.name, digest: info.digest, size: info.size };
}

/** The sha256 a stored result is valid for: task.yaml and the digests of the stored parts. */
function taskDigest(staged: Omit<StagedIssueTask, 'digest'>): string {
  const { repo, grader, solutionPatch } = staged.payload;
  return createHash('sha256')
    .update(
      JSON.stringify([staged.task, repo.digest, grader.digest, solutionPatch?.digest ?? null]),
    )
    .digest('hex');
}

/**
 * Stores a loaded task's parts under `<prefix><taskId>/` (`repo.tar`, `grader.tar`,
 * `solution.patch`) and returns the staged task. The trees are streamed (bounded memory).
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
  const staged = {
    task: loaded.task,
    dir: loaded.dir,
    payload: { repo, grader, ...(solutionPatch ? { solutionPatch } : {}) },
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
  const { repo, grader, solutionPatch } = staged.payload;
  const present = await Promise.all(
    [repo, grader, ...(solutionPatch ? [solutionPatch] : [])].map(async (ref) => {
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
