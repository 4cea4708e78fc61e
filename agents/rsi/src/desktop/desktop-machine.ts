import { type RefFactory, type UntypedActorRef } from '@troupe/actors';
import { ErrorCode, hasErrorCode, TroupeError } from '@troupe/proto';
import { z } from 'zod';
import { type MemoryBank } from '../bank/memory-bank';
import {
  MachineBank,
  type MachineCommandResult,
  type MachineDirs,
  shellQuote,
} from '../machine/machine-bank';

/** Kind of the node agent's environment actors. */
const ENVIRONMENT_KIND = 'environment';
/** The label of hosts offering `vm` environments (the node agent's `VM_LABEL`). */
const VM_HOST_LABEL = 'environment.vm';

/**
 * Where the RSI host keeps the installed bank and the Actor's proposal on a desktop machine: a
 * directory under `/tmp` that the host creates as the desktop user (so that user owns it and the
 * host, running its commands as the same user, can clear it). Not the home directory: tasks,
 * their evaluators and the environment's snapshots act on the home directory, and a bank there
 * would show in a task's `ls ~` or be rolled back by a snapshot restore. The desktop environment
 * has no per-environment tmpfs option; `/tmp` is the container's tmpfs (Docker backend) or the
 * guest's `/tmp` (VM backend).
 */
export const DESKTOP_RSI_DIR = '/tmp/rsi';
/** The installed bank on a desktop machine. */
export const DESKTOP_BANK_DIR = `${DESKTOP_RSI_DIR}/bank`;
/** Where the desktop Actor writes the bank files it proposes. */
export const DESKTOP_PROPOSAL_DIR = `${DESKTOP_RSI_DIR}/proposal`;
/** The tar of the proposal the host reads back with `getFile` (one reply: at most 512 KiB). */
const PROPOSAL_TAR = `${DESKTOP_RSI_DIR}/proposal.tar`;
const MAX_PROPOSAL_TAR_BYTES = 524_288;

const DIRS: MachineDirs = { bankDir: DESKTOP_BANK_DIR, proposalDir: DESKTOP_PROPOSAL_DIR };

// The parts of the environment actor's replies the host reads; a drift fails loudly.
const CommandReplySchema = z.looseObject({
  exitCode: z.number(),
  stdout: z.string(),
  stderr: z.string(),
  timedOut: z.boolean(),
});
const ScreenshotReplySchema = z.looseObject({ pngBase64: z.string() });
const GetFileReplySchema = z.looseObject({ base64: z.string(), size: z.number() });

/** What a desktop machine is created with (the environment actor's `create.spec`). */
export interface DesktopMachineSpec {
  /** `desktop` (Docker, Xvfb) or `vm` (a QEMU guest; placed only on hosts that offer it). */
  kind: 'desktop' | 'vm';
  image: string;
  width: number;
  height: number;
  memoryMb: number;
  /** The job the environment belongs to (its `troupe.job` label and placement hint). */
  jobId: string;
}

/** Timeouts of the host's own environment calls. */
export interface DesktopMachineTimeouts {
  /** Creating an environment (a missing image is built first). @default 900000 */
  createMs?: number;
  /** One host command or environment call. @default 60000 */
  commandMs?: number;
}

function parseReply<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) {
    throw new TroupeError(ErrorCode.INTERNAL, `environment ${what} reply: unexpected shape`, {
      cause: r.error,
    });
  }
  return r.data;
}

/**
 * One RSI machine on a desktop: a node agent `environment` actor (Docker desktop by default, or a
 * VM) with the RSI directories under {@link DESKTOP_RSI_DIR}: the bank (installed read-only,
 * checked file by file against the manifest, removed before the Verifier looks) and the proposal
 * directory. Role tools reach the machine through {@link ref}, {@link runCommand},
 * {@link getFile} and {@link putFile}; every failure of a host operation is an infrastructure
 * error (thrown).
 */
export class DesktopMachine {
  /** The environment actor (for setup steps and evaluators). */
  readonly ref: UntypedActorRef;
  private readonly commandMs: number;
  private readonly files: MachineBank<MachineCommandResult & { timedOut: boolean }>;

  private constructor(
    refs: RefFactory,
    /** The environment actor's id. */
    readonly environmentId: string,
    kind: 'desktop' | 'vm',
    jobId: string | undefined,
    timeouts: DesktopMachineTimeouts,
  ) {
    this.ref = refs.refOf({ kind: ENVIRONMENT_KIND, id: environmentId }).withHints({
      ...(jobId !== undefined ? { jobId } : {}),
      ...(kind === 'vm' ? { labels: { [VM_HOST_LABEL]: 'true' } } : {}),
    });
    this.commandMs = timeouts.commandMs ?? 60_000;
    this.files = new MachineBank(
      `environment ${environmentId}`,
      async (command, o) => {
        const r = await this.runCommand(command, o);
        if (r.timedOut) {
          throw new TroupeError(
            ErrorCode.UNAVAILABLE,
            `environment ${environmentId}: a host command timed out`,
            { details: { environmentId } },
          );
        }
        return r;
      },
      DIRS,
    );
  }

  /** A handle on an existing environment actor (for release after a restart). */
  static attach(
    refs: RefFactory,
    environmentId: string,
    kind: 'desktop' | 'vm' = 'desktop',
    timeouts: DesktopMachineTimeouts = {},
  ): DesktopMachine {
    return new DesktopMachine(refs, environmentId, kind, undefined, timeouts);
  }

  /**
   * Creates environment `environmentId` (idempotent for the same spec and job) and the RSI
   * directories, owned by the desktop user.
   */
  static async create(
    refs: RefFactory,
    environmentId: string,
    spec: DesktopMachineSpec,
    options: DesktopMachineTimeouts & { signal?: AbortSignal } = {},
  ): Promise<DesktopMachine> {
    const machine = new DesktopMachine(refs, environmentId, spec.kind, spec.jobId, options);
    await machine.ref.ask(
      'create',
      {
        spec: {
          kind: spec.kind,
          image: spec.image,
          width: spec.width,
          height: spec.height,
          memoryMb: spec.memoryMb,
        },
        jobId: spec.jobId,
      },
      {
        timeoutMs: options.createMs ?? 900_000,
        ...(options.signal ? { signal: options.signal } : {}),
      },
    );
    await machine.files.must(
      'creating the RSI directories',
      `mkdir -p ${shellQuote(DESKTOP_BANK_DIR)} ${shellQuote(DESKTOP_PROPOSAL_DIR)} && chmod 700 ${shellQuote(DESKTOP_RSI_DIR)}`,
      options.signal ? { signal: options.signal } : {},
    );
    return machine;
  }

  private ask(msg: string, payload: unknown, timeoutMs: number, signal?: AbortSignal) {
    return this.ref.ask(msg, payload, { timeoutMs, ...(signal ? { signal } : {}) });
  }

  /** Runs a command (`/bin/sh -c`, as the desktop user, in the home directory). */
  async runCommand(
    command: string,
    options: { stdin?: string; timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<MachineCommandResult & { timedOut: boolean }> {
    const timeoutMs = options.timeoutMs ?? this.commandMs;
    const raw = await this.ask(
      'runCommand',
      {
        cmd: command,
        timeoutMs,
        ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
      },
      timeoutMs + 30_000,
      options.signal,
    );
    return parseReply(CommandReplySchema, raw, 'runCommand');
  }

  /** A PNG screenshot, base64. */
  async screenshot(signal?: AbortSignal): Promise<string> {
    const raw = await this.ask('screenshot', {}, this.commandMs, signal);
    return parseReply(ScreenshotReplySchema, raw, 'screenshot').pngBase64;
  }

  /**
   * Performs one `computer_13` action. An action the environment refuses throws
   * `INVALID_ARGUMENT` (callers show it to the model); anything else is an infrastructure error.
   */
  async act(action: Record<string, unknown>, signal?: AbortSignal): Promise<void> {
    await this.ask('act', { action }, this.commandMs + 30_000, signal);
  }

  /** A file's bytes (absolute, or relative to the home directory), at most `maxBytes`. */
  async getFile(path: string, maxBytes = 524_288, signal?: AbortSignal): Promise<Buffer> {
    const raw = await this.ask('getFile', { path, maxBytes }, this.commandMs, signal);
    return Buffer.from(parseReply(GetFileReplySchema, raw, 'getFile').base64, 'base64');
  }

  /** Writes a text file (absolute, or relative to the home directory); parents are created. */
  async putFile(path: string, text: string, signal?: AbortSignal): Promise<void> {
    await this.ask('putFile', { path, file: text }, this.commandMs, signal);
  }

  /** Writes `files` (home-relative path → text) and checks each was written as given. */
  async putFiles(files: Record<string, string>, signal?: AbortSignal): Promise<void> {
    for (const [path, text] of Object.entries(files)) await this.putFile(path, text, signal);
    await this.files.checkFiles('.', files, signal);
  }

  /** Installs `bank` read-only under {@link DESKTOP_BANK_DIR} and checks it file by file. */
  installBank(bank: MemoryBank, signal?: AbortSignal): Promise<void> {
    return this.files.installBank(bank, signal);
  }

  /** Checks that {@link DESKTOP_BANK_DIR} holds exactly `bank`. */
  checkBank(bank: MemoryBank, signal?: AbortSignal): Promise<void> {
    return this.files.checkBank(bank, signal);
  }

  /** Removes the installed bank and checks its directory is empty (before the Verifier looks). */
  removeBank(signal?: AbortSignal): Promise<void> {
    return this.files.removeBank(signal);
  }

  /** Removes everything under {@link DESKTOP_PROPOSAL_DIR}. */
  clearProposal(signal?: AbortSignal): Promise<void> {
    return this.files.clearProposal(signal);
  }

  /** A tar of the proposal directory's contents, or why it cannot be read back. */
  async readProposal(signal?: AbortSignal): Promise<{ tar: Uint8Array } | { unreadable: string }> {
    const r = await this.files.must(
      'packing the proposal',
      `tar -c -f ${shellQuote(PROPOSAL_TAR)} -C ${shellQuote(DESKTOP_PROPOSAL_DIR)} . && stat -c %s ${shellQuote(PROPOSAL_TAR)}`,
      signal ? { signal } : {},
    );
    const size = Number(r.stdout.trim());
    if (!(size <= MAX_PROPOSAL_TAR_BYTES)) {
      return {
        unreadable: `${DESKTOP_PROPOSAL_DIR} is too large to read back (its tar has ${r.stdout.trim()} bytes, more than ${MAX_PROPOSAL_TAR_BYTES})`,
      };
    }
    const tar = await this.getFile(PROPOSAL_TAR, MAX_PROPOSAL_TAR_BYTES, signal);
    return { tar: new Uint8Array(tar) };
  }

  /** Destroys the environment; one that is gone already is not an error. */
  async destroy(signal?: AbortSignal): Promise<void> {
    try {
      await this.ask('destroy', {}, 60_000, signal);
    } catch (err) {
      if (hasErrorCode(err, ErrorCode.NOT_FOUND)) return;
      throw err;
    }
  }
}
