import { existsSync } from 'node:fs';
import path from 'node:path';

/** The checkout's root (the folder holding `benchmarks/suites`), from this file in src/ or dist/. */
export function repoRoot(): string {
  let dir = __dirname;
  while (!existsSync(path.join(dir, 'benchmarks', 'suites'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`no benchmarks/suites above ${__dirname}`);
    dir = up;
  }
  return dir;
}
