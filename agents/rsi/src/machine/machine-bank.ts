import { createHash } from 'node:crypto';
import { ErrorCode, TroupeError } from '@troupe/proto';
import { pack } from 'tar-stream';
import { type MemoryBank } from '../bank/memory-bank';

// The host's bank and file operations on an RSI machine, over nothing but "run this shell
// command": shared by the shell sandboxes and the desktop environments, which differ only in how
// a command reaches the machine and in where the bank and the proposal live.

/** Raw bytes of bank files per install command (base64 on stdin must fit one NATS message). */
const INSTALL_BATCH_BYTES = 256 * 1024;

/** What a machine command returned. */
export interface MachineCommandResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `command` with `/bin/sh -c` as the machine's user. A machine failure or a timeout throws
 * (an infrastructure error); a non-zero exit is returned.
 */
export type MachineExec<R extends MachineCommandResult = MachineCommandResult> = (
  command: string,
  options: { stdin?: string; signal?: AbortSignal },
) => Promise<R>;

/** Where a machine keeps the installed bank and the Actor's proposal. */
export interface MachineDirs {
  /** Absolute directory of the installed bank. */
  bankDir: string;
  /** Absolute directory the Actor writes proposed bank files into. */
  proposalDir: string;
}

/** Shell-quotes `s` with single quotes. */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * The bank and file operations of one machine: install the bank read-only and check it file by
 * file against the manifest, remove it (before the Verifier looks), clear the proposal directory,
 * check that setup files were written as given. Every failure is an `UNAVAILABLE` error naming
 * the machine.
 */
export class MachineBank<R extends MachineCommandResult = MachineCommandResult> {
  constructor(
    /** Names the machine in errors (`sandbox sbx-1`, `environment env-1`). */
    private readonly name: string,
    private readonly exec: MachineExec<R>,
    /** Where the bank and the proposal live. */
    readonly dirs: MachineDirs,
  ) {}

  private fail(message: string, details: Record<string, unknown> = {}): TroupeError {
    return new TroupeError(ErrorCode.UNAVAILABLE, `${this.name}: ${message}`, {
      details: { machine: this.name, ...details },
    });
  }

  /** {@link exec}, and a non-zero exit throws with the command's stderr. */
  async must(
    what: string,
    command: string,
    options: { stdin?: string; signal?: AbortSignal } = {},
  ): Promise<R> {
    const r = await this.exec(command, options);
    if (r.exitCode !== 0) {
      throw this.fail(`${what} failed (exit ${r.exitCode}): ${r.stderr.slice(0, 2_000)}`, {
        exitCode: r.exitCode,
      });
    }
    return r;
  }

  /**
   * Checks that directory `dir` holds each of `files` (relative path → text) with exactly that
   * content: the setup files or fixture tree were replayed.
   * @throws TroupeError `UNAVAILABLE` naming the first file that differs
   */
  async checkFiles(dir: string, files: Record<string, string>, signal?: AbortSignal) {
    const paths = Object.keys(files).sort();
    for (let i = 0; i < paths.length; i += 100) {
      const chunk = paths.slice(i, i + 100);
      const quoted = chunk.map((p) => shellQuote(`./${p}`)).join(' ');
      const r = await this.exec(`cd ${shellQuote(dir)} && sha256sum ${quoted}`, {
        ...(signal ? { signal } : {}),
      });
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
          throw this.fail(
            `${path} was not written as given (${got.has(path) ? 'content differs' : 'missing'})`,
            { path },
          );
        }
      }
    }
  }

  /**
   * Installs `bank` in the bank directory (whatever was there is removed first), makes it
   * read-only and checks the install: exactly the bank's files, each with the manifest's SHA-256.
   * @throws TroupeError `UNAVAILABLE` when the machine fails or the installed tree differs
   */
  async installBank(bank: MemoryBank, signal?: AbortSignal): Promise<void> {
    const dir = shellQuote(this.dirs.bankDir);
    await this.removeBank(signal);
    for (const batch of batches(bank)) {
      const tar = await tarOf(bank, batch);
      await this.must('installing the bank', `base64 -d | tar -x -f - -C ${dir}`, {
        stdin: tar.toString('base64'),
        ...(signal ? { signal } : {}),
      });
    }
    // Read-only for the roles; the host makes it writable again before it clears it.
    await this.must(
      'protecting the bank',
      `find ${dir} -mindepth 1 -exec chmod a-w {} +`,
      signal ? { signal } : {},
    );
    await this.checkBank(bank, signal);
  }

  /**
   * Checks that the bank directory holds exactly `bank`: the same paths, each with the manifest's
   * SHA-256.
   * @throws TroupeError `UNAVAILABLE` naming the first difference
   */
  async checkBank(bank: MemoryBank, signal?: AbortSignal): Promise<void> {
    const r = await this.must(
      'checking the bank',
      `cd ${shellQuote(this.dirs.bankDir)} && find . ! -type d ! -type f | head -n 1 && find . -type f -exec sha256sum {} +`,
      signal ? { signal } : {},
    );
    const installed = new Map<string, string>();
    for (const line of r.stdout.split('\n')) {
      if (line === '') continue;
      const m = /^([0-9a-f]{64}) {2}\.\/(.+)$/.exec(line);
      if (!m) {
        throw this.fail(
          `the installed bank has a non-regular entry or an unreadable line: ${JSON.stringify(line.slice(0, 200))}`,
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
      throw this.fail(
        `the bank ${bank.treeHash} was not installed intact: ${problems.slice(0, 5).join('; ')}`,
        { treeHash: bank.treeHash },
      );
    }
  }

  /** Removes everything in the bank directory and checks it is empty (before the Verifier looks). */
  async removeBank(signal?: AbortSignal): Promise<void> {
    await this.clear(this.dirs.bankDir, signal);
  }

  /** Removes everything in the proposal directory. */
  async clearProposal(signal?: AbortSignal): Promise<void> {
    await this.clear(this.dirs.proposalDir, signal);
  }

  private async clear(dir: string, signal?: AbortSignal): Promise<void> {
    const d = shellQuote(dir);
    await this.must(
      `clearing ${dir}`,
      `find ${d} -mindepth 1 -exec chmod u+w {} + 2>/dev/null; find ${d} -mindepth 1 -maxdepth 1 -exec rm -rf {} + && test -z "$(ls -A ${d})"`,
      signal ? { signal } : {},
    );
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
