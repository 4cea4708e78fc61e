import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { CliError, ExitCode } from './exit-codes';

/** A spec file's text and format (`.json` files are strict JSON; anything else YAML). */
export function readSpec(cwd: string, file: string): { text: string; format: 'json' | 'auto' } {
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
