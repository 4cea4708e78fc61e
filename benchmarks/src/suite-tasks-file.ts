import path from 'node:path';
import {
  invalidArgument,
  isTroupeError,
  parseUntrustedTextAsync,
  readUntrustedTextFile,
} from '@troupe/proto';

/** A suite's `tasks.yaml`, read but not yet validated against the suite's schema. */
export interface SuiteTasksFile {
  /** The suite's folder (absolute). */
  dir: string;
  /** The file (absolute). */
  file: string;
  /** The parsed YAML or JSON. */
  raw: unknown;
  /** The prefix of errors about the file's content: `<field> (<file>)`. */
  prefix: string;
}

/**
 * Reads and parses `<suite>/tasks.yaml` (`suite` resolved against `baseDir`) as untrusted input:
 * read asynchronously with a size cap, a large one parsed in a worker thread, so a job's
 * validation does not hold the coordinator's event loop. A missing or unreadable file is
 * INVALID_ARGUMENT on `<field>.suite`; content errors name `<field> (<file>)`.
 */
export async function readSuiteTasksFile(
  suite: string,
  baseDir: string,
  field: string,
  maxBytes: number,
): Promise<SuiteTasksFile> {
  const dir = path.resolve(baseDir, suite);
  const file = path.join(dir, 'tasks.yaml');
  const prefix = `${field} (${file})`;
  let text: string;
  try {
    text = await readUntrustedTextFile(file, { field: prefix, maxBytes });
  } catch (err) {
    if (isTroupeError(err)) throw err;
    throw invalidArgument(
      `${field}.suite`,
      `must name a folder with tasks.yaml (${(err as Error).message})`,
      suite,
    );
  }
  const raw = await parseUntrustedTextAsync(text, { field: prefix, maxBytes });
  return { dir, file, raw, prefix };
}
