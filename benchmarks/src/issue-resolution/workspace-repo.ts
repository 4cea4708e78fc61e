import { type WorkspaceSandbox } from './workspace-sandbox';

/**
 * Written inside the `.git` the driver made, holding the base commit: it tells the export that
 * this repository is the driver's (to diff against and remove), not one the task shipped.
 */
export const WORKSPACE_BASE_MARKER = '.git/troupe-base';

/** What {@link initWorkspaceRepo} found or did. */
export const WorkspaceRepoState = {
  /** A git repository was made at the base: `git diff` shows the agent's change. */
  CREATED: 'created',
  /** The repository shipped its own `.git`: left as it is, no patch is extracted. */
  KEPT: 'kept',
  /** The image has no `git` (a task without an environment): the workspace stays a folder. */
  NO_GIT: 'no-git',
} as const;
/** A {@link WorkspaceRepoState} value. */
export type WorkspaceRepoState = (typeof WorkspaceRepoState)[keyof typeof WorkspaceRepoState];

// Identity and settings on the command line: the sandbox's root is read-only and HOME may be
// unset, so nothing can come from (or be written to) a global config. safe.directory because the
// unpacked files may belong to another uid than the sandbox user.
const GIT = [
  'git',
  '-c user.name=troupe',
  '-c user.email=troupe@localhost',
  '-c commit.gpgsign=false',
  '-c core.autocrlf=false',
  '-c core.hooksPath=/dev/null',
  "-c safe.directory='*'",
  '-c init.defaultBranch=main',
].join(' ');

/** Makes the workspace a git repository whose one commit is the task's base. */
export const INIT_WORKSPACE_REPO_SH = `set -e
if [ -e .git ]; then echo ${WorkspaceRepoState.KEPT}; exit 0; fi
if ! command -v git >/dev/null 2>&1; then echo ${WorkspaceRepoState.NO_GIT}; exit 0; fi
${GIT} init -q
${GIT} add -A
${GIT} commit -q --no-verify --allow-empty -m base
${GIT} rev-parse HEAD > ${WORKSPACE_BASE_MARKER}
echo ${WorkspaceRepoState.CREATED}
`;

/**
 * Prints the agent's change as a git patch (every file, new ones and binary ones too, against
 * the base commit), then removes the driver's `.git`, so the exported workspace is the task's
 * files as the agent left them, as without a repository. Exit 3: not the driver's repository.
 */
export const TAKE_WORKSPACE_PATCH_SH = `[ -f ${WORKSPACE_BASE_MARKER} ] || exit 3
base=$(cat ${WORKSPACE_BASE_MARKER})
rc=0
{ ${GIT} add -A && ${GIT} -c core.quotepath=false diff --cached --binary --no-color --no-ext-diff --no-renames "$base"; } || rc=$?
rm -rf .git
exit $rc
`;

/** The agent's change taken from the workspace repository, see {@link takeWorkspacePatch}. */
export type WorkspacePatch =
  | { state: 'patch'; patch: string }
  /** The diff was longer than the sandbox returns: the workspace is still exported. */
  | { state: 'truncated'; droppedBytes: number }
  /** Not the driver's repository (none made, or the agent removed it). */
  | { state: 'none' }
  /** git failed (the agent broke the repository); `.git` was removed all the same. */
  | { state: 'error'; error: string };

/**
 * Turns the task's workspace into a git repository at its base (`git init`, everything added,
 * one commit), so the agent's `git diff`/`git status` show its own change. Repositories that
 * ship a `.git` are kept as they are; an image without git leaves the workspace a plain folder.
 */
export async function initWorkspaceRepo(
  sandbox: Pick<WorkspaceSandbox, 'exec'>,
  options: { timeoutMs: number; signal?: AbortSignal },
): Promise<WorkspaceRepoState> {
  const r = await sandbox.exec(['sh', '-c', INIT_WORKSPACE_REPO_SH], options);
  const state = r.stdout.trim().split('\n').pop();
  if (r.exitCode !== 0 || !Object.values(WorkspaceRepoState).some((s) => s === state)) {
    throw new Error(
      `cannot make the workspace a git repository (exit ${r.exitCode}): ${r.stderr.trim().slice(-500)}`,
    );
  }
  return state as WorkspaceRepoState;
}

/**
 * The agent's change as a patch against the base (what SWE-bench calls `model_patch`), read
 * from the repository {@link initWorkspaceRepo} made; that repository is removed afterwards.
 */
export async function takeWorkspacePatch(
  sandbox: Pick<WorkspaceSandbox, 'exec'>,
  options: { timeoutMs: number; signal?: AbortSignal },
): Promise<WorkspacePatch> {
  const r = await sandbox.exec(['sh', '-c', TAKE_WORKSPACE_PATCH_SH], options);
  if (r.exitCode === 3) return { state: 'none' };
  if (r.exitCode !== 0) {
    return { state: 'error', error: `git exit ${r.exitCode}: ${r.stderr.trim().slice(-500)}` };
  }
  if (r.stdoutDroppedBytes > 0) return { state: 'truncated', droppedBytes: r.stdoutDroppedBytes };
  return { state: 'patch', patch: r.stdout };
}
