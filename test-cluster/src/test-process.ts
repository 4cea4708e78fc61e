import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { waitFor } from '@troupe/testkit';

/** A `node` child process whose output lines are collected. */
export interface TestProcess {
  readonly child: ChildProcess;
  /** stdout lines so far, then stderr lines prefixed `ERR ` (in arrival order). */
  readonly lines: string[];
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code, or the signal's name. */
  readonly exited: Promise<number | string>;
  /** Resolves with the first line (see {@link lines}) matching `pred`. @default 30 s */
  waitForLine(pred: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Sends `signal` (unless it has exited) and resolves with the exit. @default 'SIGKILL' */
  kill(signal?: NodeJS.Signals): Promise<number | string>;
}

/** Options of {@link spawnNodeProcess}. */
export interface SpawnNodeProcessOptions {
  /** Added to this process's environment. @default none */
  env?: NodeJS.ProcessEnv;
  /**
   * Prints `<name> exited <code>: <output tail>` to stderr when the process exits by itself with
   * an error (not when {@link TestProcess.kill} ended it), so a crash shows up in the test log.
   * @default no report
   */
  name?: string;
}

/** Runs `node <script> ...args` (see {@link TestProcess}). */
export function spawnNodeProcess(
  script: string,
  args: readonly string[] = [],
  options: SpawnNodeProcessOptions = {},
): TestProcess {
  const child = spawn(process.execPath, [script, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
  });
  const lines: string[] = [];
  let output = '';
  let killed = false;
  const collect = (prefix: string) => {
    let buf = '';
    return (d: Buffer) => {
      output += d.toString();
      buf += d.toString();
      const parts = buf.split('\n');
      buf = parts.pop() ?? '';
      lines.push(...parts.map((p) => prefix + p));
    };
  };
  child.stdout.on('data', collect(''));
  child.stderr.on('data', collect('ERR '));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => {
      if (options.name !== undefined && !killed && code !== 0) {
        process.stderr.write(`${options.name} exited ${code ?? signal}: ${output.slice(-4_000)}\n`);
      }
      resolve(code ?? signal ?? 'unknown');
    }),
  );
  return {
    child,
    lines,
    output: () => output,
    exited,
    waitForLine: (pred, timeoutMs = 30_000) =>
      waitFor(() => lines.find(pred), {
        timeoutMs,
        message: `no matching line from ${path.basename(script)}; output:\n${lines.join('\n')}`,
      }),
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) {
        killed = true;
        child.kill(signal);
      }
      return exited;
    },
  };
}
