import { invalidArgument } from '@troupe/proto';
import type { WireFile } from '../sandbox-actor-messages';
import type { FileEntry } from '../sandbox';

/** Wire files (text, or base64 with a mode) as the sandbox layer's file map. */
export function decodeFiles(
  files: Record<string, WireFile>,
  field: string,
): Record<string, FileEntry> {
  const out: Record<string, FileEntry> = {};
  for (const [name, file] of Object.entries(files)) {
    if (typeof file === 'string') {
      out[name] = { content: file };
      continue;
    }
    const content = Buffer.from(file.base64, 'base64');
    if (content.toString('base64').replace(/=+$/, '') !== file.base64.replace(/=+$/, '')) {
      throw invalidArgument(`${field}[${JSON.stringify(name)}].base64`, 'must be base64');
    }
    out[name] = file.mode === undefined ? { content } : { content, mode: file.mode };
  }
  return out;
}
