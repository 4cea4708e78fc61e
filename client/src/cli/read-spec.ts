import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseUntrustedText } from '@troupe/proto';
import { type TroupeClient } from '../troupe-client';
import { type CliIo, println } from './cli-io';
import { CliError, ExitCode } from './exit-codes';

/** A spec's text and format, as sent to SubmitJob. */
export interface SpecText {
  text: string;
  format: 'json' | 'auto';
}

/** A spec file's text and format (`.json` files are strict JSON; anything else YAML). */
export function readSpec(cwd: string, file: string): SpecText {
  const full = path.resolve(cwd, file);
  let text: string;
  try {
    text = readFileSync(full, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read spec ${file}: ${(err as Error).message}`, ExitCode.USAGE, {
      cause: err,
    });
  }
  return { text, format: full.toLowerCase().endsWith('.json') ? 'json' : 'auto' };
}

/**
 * The spec to submit. A spec whose tasks come from a local task file (`tasks: {file:
 * tasks.jsonl}`, a path relative to the working directory like every path of a spec) has the
 * file uploaded (UploadTaskFile) and is sent as JSON with the upload's reference added
 * (`tasks: {file, upload}`). Any other spec, or one this parser refuses (the server then names
 * the error), is sent as it is.
 */
export async function withUploadedTaskFile(
  spec: SpecText,
  client: TroupeClient,
  io: Pick<CliIo, 'cwd' | 'stderr'>,
  signal?: AbortSignal,
): Promise<SpecText> {
  let doc: unknown;
  try {
    doc = parseUntrustedText(spec.text, {
      field: 'spec',
      format: spec.format === 'json' ? 'json' : 'yaml',
    });
  } catch {
    return spec;
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return spec;
  const tasks = (doc as Record<string, unknown>)['tasks'];
  if (typeof tasks !== 'object' || tasks === null || Array.isArray(tasks)) return spec;
  const file = (tasks as Record<string, unknown>)['file'];
  if (typeof file !== 'string' || file === '' || 'upload' in tasks) return spec;
  let data: Buffer;
  try {
    data = readFileSync(path.resolve(io.cwd, file));
  } catch (err) {
    throw new CliError(
      `cannot read the task file ${file} (spec.tasks.file): ${(err as Error).message}`,
      ExitCode.USAGE,
      { cause: err },
    );
  }
  println(io.stderr, `uploading task file ${file} (${formatBytes(data.byteLength)}) …`);
  const stored = await client.uploadTaskFile(data, {
    name: file,
    ...(signal ? { signal } : {}),
  });
  println(
    io.stderr,
    `uploaded ${file}: ${stored.lines.toLocaleString('en-US')} tasks, ${stored.upload.slice(0, 19)}…`,
  );
  return {
    text: JSON.stringify({ ...doc, tasks: { ...tasks, upload: stored.upload } }),
    format: 'json',
  };
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
