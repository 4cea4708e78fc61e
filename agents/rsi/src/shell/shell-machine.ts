import { type RefFactory, type UntypedActorRef } from '@troupe/actors';
import { ErrorCode, hasErrorCode, TroupeError } from '@troupe/proto';
import { z } from 'zod';
import { type MemoryBank } from '../bank/memory-bank';
import { MachineBank } from '../machine/machine-bank';
import { PROPOSAL_DIR } from './proposal';

/** Where the installed bank is mounted in a sandbox (a tmpfs the sandbox user can clear). */
export const BANK_DIR = '/bank';

/** The sandbox workspace (the sandbox spec's default workdir). */
const WORKSPACE_DIR = '/workspace';
/** Kind of the node agent's sandbox actors. */
const SANDBOX_KIND = 'sandbox';

// The parts of the sandbox actor's exec reply the host reads; a drift fails loudly.
const ExecReplySchema = z.looseObject({
  exitCode: z.number(),
  stdout: z.string(),
  stderr: z.string(),
  stdoutDroppedBytes: z.number().optional(),
  timedOut: z.boolean(),
  sandboxFailure: z.string().optional(),
});
type ExecReply = z.infer<typeof ExecReplySchema>;

/** What a fresh machine is created with. */
export interface ShellMachineSpec {
  image: string;
  memoryMb: number;
  /** Workspace-relative path → text. */
  files: Record<string, string>;
  /** Size of the bank and the proposal tmpfs mounts. */
  bankTmpfsMb: number;
  /** The job the sandbox belongs to (its `troupe.job` label). */
  jobId: string;
}

/** Timeouts of the host's own sandbox calls. */
export interface ShellMachineTimeouts {
  /** Creating a sandbox (a missing image is built first). @default 300000 */
  createMs?: number;
  /** One host command (install, check, clear, read back). @default 60000 */
  commandMs?: number;
}

function infra(message: string, details: Record<string, unknown>): TroupeError {
  return new TroupeError(ErrorCode.UNAVAILABLE, message, { details });
}

/**
 * One RSI machine: a node agent `sandbox` actor (no network, the sandbox policy's defaults) with
 * the task's workspace and two tmpfs mounts the sandbox user owns what it writes in: `/bank`,
 * where the canonical memory bank is installed (files made read-only, checked file by file
 * against the bank's manifest) and from where it is removed before the Verifier looks at the
 * machine, and `/proposal`, where the Actor writes the lessons it proposes. Tmpfs rather than
 * volumes: a volume's root belongs to root, so the sandbox user could neither clear `/bank` nor
 * write into `/proposal`. Every failure of the sandbox is an infrastructure error (thrown).
 */
export class ShellMachine {
  private readonly ref: UntypedActorRef;
  private readonly commandMs: number;
  private readonly files: MachineBank<ExecReply>;

  private constructor(
    refs: RefFactory,
    /** The sandbox actor's id. */
    readonly sandboxId: string,
    timeouts: ShellMachineTimeouts,
  ) {
    this.ref = refs.refOf({ kind: SANDBOX_KIND, id: sandboxId });
    this.commandMs = timeouts.commandMs ?? 60_000;
    this.files = new MachineBank(`sandbox ${sandboxId}`, (command, o) => this.exec(command, o), {
      bankDir: BANK_DIR,
      proposalDir: PROPOSAL_DIR,
    });
  }

  /** A handle on an existing sandbox actor (for release after a restart). */
  static attach(refs: RefFactory, sandboxId: string, timeouts: ShellMachineTimeouts = {}) {
    return new ShellMachine(refs, sandboxId, timeouts);
  }

  /** Creates sandbox `sandboxId` (idempotent for the same spec and job) with `spec.files`. */
  static async create(
    refs: RefFactory,
    sandboxId: string,
    spec: ShellMachineSpec,
    options: ShellMachineTimeouts & { signal?: AbortSignal } = {},
  ): Promise<ShellMachine> {
    const machine = new ShellMachine(refs, sandboxId, options);
    await machine.ref.ask(
      'create',
      {
        spec: {
          image: spec.image,
          memoryMb: spec.memoryMb,
          network: 'none',
          files: spec.files,
          tmpfs: { [BANK_DIR]: spec.bankTmpfsMb, [PROPOSAL_DIR]: spec.bankTmpfsMb },
        },
        jobId: spec.jobId,
      },
      {
        timeoutMs: options.createMs ?? 300_000,
        ...(options.signal ? { signal: options.signal } : {}),
      },
    );
    return machine;
  }

  /** Runs a host command (`/bin/sh -c`); a sandbox failure or a timeout throws. */
  async exec(command: string, options: { stdin?: string; signal?: AbortSignal } = {}) {
    const raw = await this.ref.ask(
      'exec',
      {
        cmd: command,
        timeoutMs: this.commandMs,
        ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
      },
      { timeoutMs: this.commandMs + 30_000, ...(options.signal ? { signal: options.signal } : {}) },
    );
    const parsed = ExecReplySchema.safeParse(raw);
    if (!parsed.success) {
      throw new TroupeError(ErrorCode.INTERNAL, 'sandbox exec reply: unexpected shape', {
        cause: parsed.error,
      });
    }
    const r: ExecReply = parsed.data;
    if (r.sandboxFailure !== undefined || r.timedOut) {
      throw infra(
        `sandbox ${this.sandboxId} failed a host command: ${r.sandboxFailure ?? 'timed out'}`,
        {
          sandboxId: this.sandboxId,
        },
      );
    }
    return r;
  }

  /**
   * Checks that the workspace holds each of `files` (workspace-relative path → text) with exactly
   * that content: the setup files or fixture tree were replayed.
   * @throws TroupeError `UNAVAILABLE` naming the first file that differs
   */
  checkFiles(files: Record<string, string>, signal?: AbortSignal): Promise<void> {
    return this.files.checkFiles(WORKSPACE_DIR, files, signal);
  }

  /**
   * Installs `bank` under `/bank` (whatever was there is removed first), makes it read-only and
   * checks the install: exactly the bank's files, each with the manifest's SHA-256.
   * @throws TroupeError `UNAVAILABLE` when the sandbox fails or the installed tree differs
   */
  installBank(bank: MemoryBank, signal?: AbortSignal): Promise<void> {
    return this.files.installBank(bank, signal);
  }

  /**
   * Checks that `/bank` holds exactly `bank`: the same paths, each with the manifest's SHA-256.
   * @throws TroupeError `UNAVAILABLE` naming the first difference
   */
  checkBank(bank: MemoryBank, signal?: AbortSignal): Promise<void> {
    return this.files.checkBank(bank, signal);
  }

  /** Removes everything under `/bank` and checks it is empty (before the Verifier looks). */
  removeBank(signal?: AbortSignal): Promise<void> {
    return this.files.removeBank(signal);
  }

  /** Removes everything under `/proposal`. */
  clearProposal(signal?: AbortSignal): Promise<void> {
    return this.files.clearProposal(signal);
  }

  /**
   * A tar of `/proposal`'s contents, or why it cannot be read back (larger than one reply).
   */
  async readProposal(signal?: AbortSignal): Promise<{ tar: Uint8Array } | { unreadable: string }> {
    const r = await this.files.must(
      'reading the proposal',
      `cd ${PROPOSAL_DIR} && tar -c -f - . | base64`,
      signal ? { signal } : {},
    );
    if ((r.stdoutDroppedBytes ?? 0) > 0) {
      return {
        unreadable: `${PROPOSAL_DIR} is too large to read back (${r.stdoutDroppedBytes} bytes over one reply)`,
      };
    }
    return { tar: new Uint8Array(Buffer.from(r.stdout, 'base64')) };
  }

  /** Destroys the sandbox; a sandbox that is gone already is not an error. */
  async destroy(signal?: AbortSignal): Promise<void> {
    try {
      await this.ref.ask('destroy', {}, { timeoutMs: 60_000, ...(signal ? { signal } : {}) });
    } catch (err) {
      if (hasErrorCode(err, ErrorCode.NOT_FOUND)) return;
      throw err;
    }
  }
}
