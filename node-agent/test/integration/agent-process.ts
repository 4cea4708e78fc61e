import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const PACKAGE = path.resolve(__dirname, '..', '..');
/** The built `troupe-node-agent` entry point. */
export const MAIN_JS = path.join(PACKAGE, 'dist', 'main.js');

/**
 * Fails unless `dist` holds a build of every source file at least as new as the source: the
 * process tests must run the code under test (`npm run build` first).
 */
export function assertFreshBuild(): void {
  const stale: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const src = path.join(dir, e.name);
      if (e.isDirectory()) walk(src);
      else if (e.name.endsWith('.ts')) {
        const rel = path.relative(path.join(PACKAGE, 'src'), src).replace(/\.ts$/, '.js');
        const out = path.join(PACKAGE, 'dist', rel);
        let outTime = 0;
        try {
          outTime = statSync(out).mtimeMs;
        } catch {
          // missing
        }
        if (outTime < statSync(src).mtimeMs) stale.push(rel);
      }
    }
  };
  walk(path.join(PACKAGE, 'src'));
  if (stale.length > 0) {
    throw new Error(
      `node-agent/dist is stale or missing (${stale.slice(0, 5).join(', ')}): run npm run build`,
    );
  }
}

/** A `troupe-node-agent` child process. */
export interface AgentProcess {
  child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
  /** Sends `signal` and waits for the exit. */
  kill(signal: NodeJS.Signals): Promise<number | string>;
}

/** Starts `node dist/main.js` with `env` added to this process's environment. */
export function spawnAgent(env: Record<string, string>, args: string[] = []): AgentProcess {
  const child = spawn(process.execPath, [MAIN_JS, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  return {
    child,
    output: () => out,
    exited,
    kill: async (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
