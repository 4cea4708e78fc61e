/** Result of a foreground command in a sandbox. */
export interface SandboxExecResult {
  /** Exit status (`128 + n` when killed by signal `n`). */
  exitCode: number;
  /** Captured stdout (head and tail when trimmed). */
  stdout: string;
  /** Captured stderr (head and tail when trimmed). */
  stderr: string;
  /** Whether the timeout passed and the command was killed. */
  timedOut: boolean;
}

/** State of a background job. */
export interface SandboxJobStatus {
  /** The job id. */
  jobId: string;
  /** `running`, or how it ended (`exited`, `killed`, `timed_out`, `failed`, …). */
  state: string;
  /** Exit status once it ended. */
  exitCode?: number;
  /** Output so far. */
  stdout: string;
  /** Error output so far. */
  stderr: string;
}

/** A read of an interactive job's stdout ({@link SandboxPort.readOutput}). */
export interface SandboxOutput {
  /** Stdout from `offset` (UTF-8). */
  data: string;
  /** Offset of `data` (later than asked when older output was dropped). */
  offset: number;
  /** Offset to read from next. */
  nextOffset: number;
  /** `running`, or how the job ended. */
  state: string;
  /** Exit status once it ended. */
  exitCode?: number;
}

/**
 * What the agent's tools need from a sandbox. Injected so that `@troupe/agents` never imports
 * the node agent: {@link ActorSandboxPort} talks to a `sandbox` actor over NATS; tests and perf
 * scripts may pass another implementation.
 */
export interface SandboxPort {
  /** Runs `command` with `/bin/sh -c` in the workspace, to completion or `timeoutMs`. */
  exec(
    command: string,
    options: { timeoutMs: number; stdin?: string; signal?: AbortSignal },
  ): Promise<SandboxExecResult>;
  /** Starts `command` in the background; returns its job id. */
  startBackground(command: string, options: { signal?: AbortSignal }): Promise<string>;
  /** Status and output of a background job. */
  poll(jobId: string, options: { signal?: AbortSignal }): Promise<SandboxJobStatus>;
  /** Kills a background job; returns its final status. */
  kill(jobId: string, options: { signal?: AbortSignal }): Promise<SandboxJobStatus>;
  /** Reads a text file (path relative to the workspace, or absolute). */
  readFile(path: string, options: { signal?: AbortSignal }): Promise<string>;
  /** Writes a text file, creating its directory. */
  writeFile(path: string, content: string, options: { signal?: AbortSignal }): Promise<void>;
  /**
   * Starts `argv` in the background with its stdin open (a stdio MCP server); returns its job
   * id. Optional: a port without it cannot host stdio MCP servers.
   */
  startInteractive?(
    argv: readonly string[],
    options: { env?: Record<string, string>; cwd?: string; signal?: AbortSignal },
  ): Promise<string>;
  /**
   * Writes `write` (if any) to an interactive job's stdin, then reads its stdout from
   * `fromOffset`, waiting up to `waitMs` for new output or the job's end.
   */
  readOutput?(
    jobId: string,
    options: { fromOffset: number; waitMs: number; write?: string; signal?: AbortSignal },
  ): Promise<SandboxOutput>;
}
