/** Where the CLI writes and what it reads of its environment (main.ts binds the process's). */
export interface CliIo {
  /** Results and machine-readable output. */
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  /** Progress, logs and errors. */
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  /** Environment variables. */
  env: Readonly<Record<string, string | undefined>>;
  /** Working directory (the default data directory is `<cwd>/.troupe`). */
  cwd: string;
  /** Registers a Ctrl-C (SIGINT/SIGTERM) handler; returns its remover. */
  onInterrupt(handler: () => void): () => void;
}

/** Writes a line. */
export function println(stream: NodeJS.WritableStream, line = ''): void {
  stream.write(`${line}\n`);
}
