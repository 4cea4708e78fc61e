import { Readable } from 'node:stream';
import { extract } from 'tar-stream';
import { type BankChange } from '../bank/bank-changes';
import { type MemoryBank } from '../bank/memory-bank';
import { AgentStopReason } from '@troupe/agents';

/** Where the Actor writes the bank files it proposes (whole files, at their bank paths). */
export const PROPOSAL_DIR = '/proposal';
/** The list of bank paths to delete, one a line, inside {@link PROPOSAL_DIR}. */
export const DELETE_LIST = '.delete';

/**
 * What the host read back from the proposal directory: the change set (checked later against
 * the bank's boundaries by `applyBankChanges`), or why nothing could be read.
 */
export type ProposedChanges = { changes: BankChange[] } | { unreadable: string };

/** The tar entry name as a path inside the proposal directory (`./a/b.md` → `a/b.md`). */
function entryPath(name: string): string {
  return name.replace(/^(\.\/)+/, '').replace(/\/+$/, '');
}

/**
 * The change set a proposal directory describes, from a tar of its contents (`tar -c -C
 * /proposal .`): every regular file except `.delete` is the whole new content of the bank file
 * at the same path (`add` when the bank lacks it, `modify` when its content differs, nothing when
 * it is identical); each non-blank line of `.delete` names a bank path to delete (a leading
 * `/bank/` is accepted). Paths are not judged here: `applyBankChanges` refuses the ones that
 * break the bank's rules, naming them. A symlink or other special entry makes the proposal
 * unreadable.
 */
export async function proposalChangesFromTar(
  tar: Uint8Array,
  bank: MemoryBank,
): Promise<ProposedChanges> {
  const writes = new Map<string, Uint8Array>();
  let deleteList: string | undefined;
  const ex = extract();
  Readable.from([Buffer.from(tar.buffer, tar.byteOffset, tar.byteLength)]).pipe(ex);
  try {
    for await (const e of ex) {
      const path = entryPath(e.header.name);
      if (e.header.type === 'directory' || path === '' || path === '.') {
        e.resume();
        continue;
      }
      if (e.header.type !== 'file') {
        e.resume();
        ex.destroy();
        return {
          unreadable: `${PROPOSAL_DIR}/${path} is a ${String(e.header.type)}; only regular files are read`,
        };
      }
      const chunks: Buffer[] = [];
      for await (const chunk of e) chunks.push(chunk as Buffer);
      const bytes = new Uint8Array(Buffer.concat(chunks));
      if (path === DELETE_LIST) deleteList = Buffer.from(bytes).toString('utf8');
      else writes.set(path, bytes);
    }
  } catch (err) {
    ex.destroy();
    return {
      unreadable: `the proposal directory could not be read back (${err instanceof Error ? err.message : String(err)})`,
    };
  }
  const changes: BankChange[] = [];
  for (const path of [...writes.keys()].sort()) {
    const content = writes.get(path) ?? new Uint8Array();
    const current = bank.read(path);
    if (current === undefined) changes.push({ op: 'add', path, content });
    else if (Buffer.compare(Buffer.from(current), Buffer.from(content)) !== 0) {
      changes.push({ op: 'modify', path, content });
    }
  }
  for (const raw of (deleteList ?? '').split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '') continue;
    changes.push({ op: 'delete', path: line.startsWith('/bank/') ? line.slice(6) : line });
  }
  return { changes };
}

/**
 * What a lesson run proposed: once it finished with `finish_task`, the change set read from the
 * machine's proposal directory (`readProposal`) against `bank`; otherwise why there is none.
 */
export async function lessonChanges(
  stopReason: string,
  readProposal: () => Promise<{ tar: Uint8Array } | { unreadable: string }>,
  bank: MemoryBank,
): Promise<ProposedChanges> {
  if (stopReason !== AgentStopReason.FINISHED) {
    return { unreadable: `the lesson run stopped with ${stopReason}, not finish_task` };
  }
  const read = await readProposal();
  return 'unreadable' in read ? read : proposalChangesFromTar(read.tar, bank);
}
