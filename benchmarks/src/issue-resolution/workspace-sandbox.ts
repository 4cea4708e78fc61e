import { type UntypedActorRef } from '@troupe/actors';
import { type ExecReply, ExecReplySchema } from '@troupe/node-agent';
import { TroupeError } from '@troupe/proto';

/** Result of {@link WorkspaceSandbox.exec}: the sandbox actor's `exec` reply. */
export type WorkspaceExecResult = ExecReply;

/**
 * The agent's view of its sandbox: commands and files in the workspace, through the node agent's
 * `sandbox` actor. Every call takes the run's signal.
 */
export class WorkspaceSandbox {
  constructor(
    private readonly ref: UntypedActorRef,
    /** The workspace folder (`/workspace`). */
    readonly workdir: string,
  ) {}

  /** Runs a command (argv, or a string for `/bin/sh -c`) in the workspace. */
  async exec(
    cmd: string | string[],
    options: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<WorkspaceExecResult> {
    const timeoutMs = options.timeoutMs ?? 60_000;
    return ExecReplySchema.parse(
      await this.ref.ask(
        'exec',
        { cmd, cwd: this.workdir, timeoutMs },
        { timeoutMs: timeoutMs + 30_000, ...(options.signal ? { signal: options.signal } : {}) },
      ),
    );
  }

  /** A workspace file's text, or `undefined` when it does not exist. */
  async readFile(rel: string, signal?: AbortSignal): Promise<string | undefined> {
    const r = await this.exec(['cat', '--', rel], {
      timeoutMs: 30_000,
      ...(signal ? { signal } : {}),
    });
    if (r.exitCode !== 0) {
      if (/No such file/i.test(r.stderr)) return undefined;
      throw new TroupeError('UNAVAILABLE', `cannot read ${rel} in the sandbox: ${r.stderr.trim()}`);
    }
    return r.stdout;
  }

  /** Writes files (relative path → text) into the workspace. */
  async writeFiles(files: Record<string, string>, signal?: AbortSignal): Promise<void> {
    await this.ref.ask(
      'putFiles',
      { destDir: this.workdir, files },
      { timeoutMs: 60_000, ...(signal ? { signal } : {}) },
    );
  }

  /** Removes a workspace file. */
  async removeFile(rel: string, signal?: AbortSignal): Promise<void> {
    const r = await this.exec(['rm', '-f', '--', rel], {
      timeoutMs: 30_000,
      ...(signal ? { signal } : {}),
    });
    if (r.exitCode !== 0) {
      throw new TroupeError(
        'UNAVAILABLE',
        `cannot remove ${rel} in the sandbox: ${r.stderr.trim()}`,
      );
    }
  }
}
