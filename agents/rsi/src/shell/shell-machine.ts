import { createHash } from 'node:crypto';
import { type RefFactory, type UntypedActorRef } from '@troupe/actors';
import { ErrorCode, hasErrorCode, TroupeError } from '@troupe/proto';
import { pack } from 'tar-stream';
import { z } from 'zod';
import { type MemoryBank } from '../bank/memory-bank';
import { PROPOSAL_DIR } from './proposal';

/** Where the installed bank is mounted in a sandbox (a tmpfs the sandbox user can clear). */
export const BANK_DIR = '/bank';

/** The sandbox workspace (the sandbox spec's default workdir). */
const WORKSPACE_DIR = '/workspace';
/** Kind of the node agent's sandbox actors. */
const SANDBOX_KIND = 'sandbox';
/** Raw bytes of bank files per install command (base64 on stdin must fit one NATS message). */
const INSTALL_BATCH_BYTES = 256 * 1024;

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

  private constructor(
    refs: RefFactory,
    /** The sandbox actor's id. */
    readonly sandboxId: string,
    timeouts: ShellMachineTimeouts,
  ) {
    this.ref = refs.refOf({ kind: SANDBOX_KIND, id: sandboxId });
    this.commandMs = timeouts.commandMs ?? 60_000;
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

  /** {@link exec}, and a non-zero exit throws with the command's stderr. */
  private async must(
    what: string,
    command: string,
    options: { stdin?: string; signal?: AbortSignal } = {},
  ) {
    const r = await this.exec(command, options);
    if (r.exitCode !== 0) {
      throw infra(
        `sandbox ${this.sandboxId}: ${what} failed (exit ${r.exitCode}): ${r.stderr.slice(0, 2_000)}`,
        {
          sandboxId: this.sandboxId,
          exitCode: r.exitCode,
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
  async checkFiles(files: Record<string, string>, signal?: AbortSignal): Promise<void> {
    const paths = Object.keys(files).sort();
    for (let i = 0; i < paths.length; i += 100) {
      const chunk = paths.slice(i, i + 100);
      const quoted = chunk.map((p) => `'./${p.replace(/'/g, `'\\''`)}'`).join(' ');
      const r = await this.exec(
        `cd ${WORKSPACE_DIR} && sha256sum ${quoted}`,
        signal ? { signal } : {},
      );
      const got = new Map<string, string>();
      for (const line of r.stdout.split('\n')) {
        const m = /^([0-9a-f]{64}) {2}\.\/(.+)$/.exec(line);
        if (m) got.set(m[2] as string, m[1] as string);
      }
      for (const path of chunk) {
        const want = createHash('sha256')
          .update(files[path] ?? '')
          .digest('hex');
        if (got.get(path) !== want) {
          throw infra(
            `sandbox ${this.sandboxId}: ${path} was not written as given (${got.has(path) ? 'content differs' : 'missing'})`,
            {
              sandboxId: this.sandboxId,
              path,
            },
          );
        }
      }
    }
  }

  /**
   * Installs `bank` under `/bank` (whatever was there is removed first), makes it read-only and
   * checks the install: exactly the bank's files, each with the manifest's SHA-256.
   * @throws TroupeError `UNAVAILABLE` when the sandbox fails or the installed tree differs
   */
  async installBank(bank: MemoryBank, signal?: AbortSignal): Promise<void> {
    await this.removeBank(signal);
    for (const batch of batches(bank)) {
      const tar = await tarOf(bank, batch);
      await this.must('installing the bank', `base64 -d | tar -x -f - -C ${BANK_DIR}`, {
        stdin: tar.toString('base64'),
        ...(signal ? { signal } : {}),
      });
    }
    // Read-only for the roles; the host makes it writable again before it clears it.
    await this.must(
      'protecting the bank',
      `find ${BANK_DIR} -mindepth 1 -exec chmod a-w {} +`,
      signal ? { signal } : {},
    );
    await this.checkBank(bank, signal);
  }

  /**
   * Checks that `/bank` holds exactly `bank`: the same paths, each with the manifest's SHA-256.
   * @throws TroupeError `UNAVAILABLE` naming the first difference
   */
  async checkBank(bank: MemoryBank, signal?: AbortSignal): Promise<void> {
    const r = await this.must(
      'checking the bank',
      `cd ${BANK_DIR} && find . ! -type d ! -type f | head -n 1 && find . -type f -exec sha256sum {} +`,
      signal ? { signal } : {},
    );
    const installed = new Map<string, string>();
    for (const line of r.stdout.split('\n')) {
      if (line === '') continue;
      const m = /^([0-9a-f]{64}) {2}\.\/(.+)$/.exec(line);
      if (!m) {
        throw infra(
          `sandbox ${this.sandboxId}: the installed bank has a non-regular entry or an unreadable line: ${JSON.stringify(line.slice(0, 200))}`,
          { sandboxId: this.sandboxId },
        );
      }
      installed.set(m[2] as string, m[1] as string);
    }
    const problems: string[] = [];
    if (installed.size !== bank.fileCount) {
      problems.push(`${installed.size} files installed, the bank has ${bank.fileCount}`);
    }
    for (const e of bank.manifest) {
      const got = installed.get(e.path);
      if (got === undefined) problems.push(`${e.path} is missing`);
      else if (got !== e.sha256) problems.push(`${e.path} has sha256 ${got}, not ${e.sha256}`);
    }
    if (problems.length > 0) {
      throw infra(
        `sandbox ${this.sandboxId}: the bank ${bank.treeHash} was not installed intact: ${problems.slice(0, 5).join('; ')}`,
        {
          sandboxId: this.sandboxId,
          treeHash: bank.treeHash,
        },
      );
    }
  }

  /** Removes everything under `/bank` and checks it is empty (before the Verifier looks). */
  async removeBank(signal?: AbortSignal): Promise<void> {
    await this.clear(BANK_DIR, signal);
  }

  /** Removes everything under `/proposal`. */
  async clearProposal(signal?: AbortSignal): Promise<void> {
    await this.clear(PROPOSAL_DIR, signal);
  }

  private async clear(dir: string, signal?: AbortSignal): Promise<void> {
    await this.must(
      `clearing ${dir}`,
      `find ${dir} -mindepth 1 -exec chmod u+w {} + 2>/dev/null; find ${dir} -mindepth 1 -maxdepth 1 -exec rm -rf {} + && test -z "$(ls -A ${dir})"`,
      signal ? { signal } : {},
    );
  }

  /**
   * A tar of `/proposal`'s contents, or why it cannot be read back (larger than one reply).
   */
  async readProposal(signal?: AbortSignal): Promise<{ tar: Uint8Array } | { unreadable: string }> {
    const r = await this.must(
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

/** The bank's paths in batches of at most {@link INSTALL_BATCH_BYTES} (one file may exceed it). */
function batches(bank: MemoryBank): string[][] {
  const out: string[][] = [];
  let current: string[] = [];
  let bytes = 0;
  for (const e of bank.manifest) {
    if (current.length > 0 && bytes + e.size > INSTALL_BATCH_BYTES) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(e.path);
    bytes += e.size;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** A tar of some of the bank's files, with an entry for each parent directory. */
async function tarOf(bank: MemoryBank, paths: readonly string[]): Promise<Buffer> {
  const p = pack();
  const chunks: Buffer[] = [];
  const done = (async () => {
    for await (const chunk of p) chunks.push(chunk as Buffer);
  })();
  const dirs = new Set<string>();
  for (const path of paths) {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join('/');
      if (dirs.has(dir)) continue;
      dirs.add(dir);
      p.entry({ name: `${dir}/`, type: 'directory', mode: 0o755, mtime: new Date(0) });
    }
    const bytes = Buffer.from(bank.read(path) ?? new Uint8Array());
    p.entry({ name: path, size: bytes.byteLength, mode: 0o644, mtime: new Date(0) }, bytes);
  }
  p.finalize();
  await done;
  return Buffer.concat(chunks);
}
