import { rmSync, writeFileSync } from 'node:fs';

/**
 * A file that exists while a server is up (container health checks test for it): written once
 * the server has started, removed when it stops. Absent path: does nothing.
 */
export class ReadyFile {
  constructor(private readonly path: string | undefined) {}

  /** Writes the file with `content` (e.g. the pid and ports). */
  mark(content: string): void {
    if (this.path) writeFileSync(this.path, `${content}\n`);
  }

  /** Removes the file (idempotent). */
  clear(): void {
    if (this.path) rmSync(this.path, { force: true });
  }
}
