import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';

/** The file of a VM's directory that records who started it. */
export const VM_RECORD_FILE = 'vm.json';

/**
 * What the node agent records about every VM it starts, in `<stateDir>/<id>/vm.json` next to the
 * VM's overlay, sockets and console log, so the reaper can find a VM whose node agent died.
 */
export const VmRecordSchema = z.object({
  id: z.string(),
  /** QEMU's pid (null until spawned). */
  pid: z.int().nullable(),
  /** `troupe-env-<id>`: QEMU's `-name`, checked in `/proc/<pid>/cmdline` before a kill. */
  name: z.string(),
  cluster: z.string(),
  host: z.string(),
  actor: z.string(),
  job: z.string(),
  /** The node agent process that owns the VM, and its start time (guards against pid reuse). */
  ownerPid: z.int(),
  ownerStartTicks: z.string(),
  createdAtMs: z.number(),
});
/** A VM's record. */
export type VmRecord = z.infer<typeof VmRecordSchema>;

/** Writes (or replaces, atomically) the record in its VM's directory. */
export async function writeVmRecord(dir: string, record: VmRecord): Promise<void> {
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `${VM_RECORD_FILE}.part`);
  await writeFile(tmp, JSON.stringify(record));
  await rename(tmp, join(dir, VM_RECORD_FILE));
}

/** A VM directory under the state dir, with its record when one is readable. */
export interface VmDirEntry {
  dir: string;
  record: VmRecord | undefined;
}

/** Every VM directory under `stateDir` (none when it does not exist). */
export async function listVmDirs(stateDir: string): Promise<VmDirEntry[]> {
  let names: string[];
  try {
    names = await readdir(stateDir);
  } catch {
    return [];
  }
  const out: VmDirEntry[] = [];
  for (const name of names) {
    if (!name.startsWith('env-')) continue;
    const dir = join(stateDir, name);
    let record: VmRecord | undefined;
    try {
      const parsed = VmRecordSchema.safeParse(
        JSON.parse(await readFile(join(dir, VM_RECORD_FILE), 'utf8')),
      );
      record = parsed.success ? parsed.data : undefined;
    } catch {
      record = undefined;
    }
    out.push({ dir, record });
  }
  return out;
}

/** Removes a VM's directory (overlay, sockets, logs, record). */
export async function removeVmDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** Field 22 of `/proc/<pid>/stat` (start time in clock ticks), or `undefined` for no process. */
export async function processStartTicks(pid: number): Promise<string | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields after the command start at field 3 (state); the start time is field 22.
    return fields[22 - 3];
  } catch {
    return undefined;
  }
}

/** Whether `pid` runs a command line containing `needle` (e.g. a QEMU `-name`). */
export async function processRuns(pid: number, needle: string): Promise<boolean> {
  try {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes(needle);
  } catch {
    return false;
  }
}
